#!/bin/sh
# Starts `warmpath <agent|router>` with the given arguments and writes its
# PID to $AGENT_PID_FILE for the engine container's preStop hook
# (drain-agent.sh). Gossip peers need no help from here: both read
# WARMPATH_BOOTSTRAP_DNS (the routers' headless Service) and re-resolve it
# themselves, so pods that come and go are found without a restart.
set -eu
role=$1
shift
if [ -n "${AGENT_PID_FILE:-}" ]; then echo $$ > "$AGENT_PID_FILE"; fi
exec "${CLI_PATH:-/opt/warmpath/bin/warmpath}" "$role" "$@"
