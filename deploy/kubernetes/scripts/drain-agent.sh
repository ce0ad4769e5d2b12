#!/bin/sh
# preStop hook of the engine container. Kubernetes stops the main container
# (the engine) before its sidecars, so without this the agent would still
# route requests to an engine that is shutting down. It sends the agent
# SIGTERM (the pod shares one PID namespace) and waits until the agent has
# drained (announced draining, finished in-flight requests, announced down)
# and exited; only then does the engine get its own SIGTERM.
set -u
pid=$(cat "${AGENT_PID_FILE:?}" 2>/dev/null) || exit 0
kill -TERM "$pid" 2>/dev/null || exit 0
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
