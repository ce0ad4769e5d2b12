#!/bin/sh
# Starts `warmpath <agent|router>` with a --bootstrap flag for every gossip
# peer that the headless Service $GOSSIP_PEERS_SERVICE resolves to (agents
# dial the routers, routers dial the agents), and writes its PID to
# $AGENT_PID_FILE for the engine container's preStop hook (drain-agent.sh).
#
# The list is read once. It is read $GOSSIP_PEERS_WAIT_S seconds after start
# (default 10, more than DNS takes to publish a new pod's address), so of two
# pods that start together the later one always finds the earlier one; each
# node then re-dials its list whenever a peer restarts.
set -eu
: "${GOSSIP_PEERS_SERVICE:?set it to the headless Service of the other side}"
role=$1
shift
sleep "${GOSSIP_PEERS_WAIT_S:-10}"
for ip in $(getent ahostsv4 "$GOSSIP_PEERS_SERVICE" | cut -d' ' -f1 | sort -u); do
  set -- "$@" --bootstrap "/ip4/$ip/tcp/${GOSSIP_PEERS_PORT:-4001}"
done
if [ -n "${AGENT_PID_FILE:-}" ]; then echo $$ > "$AGENT_PID_FILE"; fi
exec "${CLI_PATH:-/opt/warmpath/bin/warmpath}" "$role" "$@"
