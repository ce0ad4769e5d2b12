#!/bin/sh
# Runs the pinned pnpm with only Node.js and npm on the machine. pnpm then puts
# the workspace's own Node 24 (the `node` devDependency) first on the PATH of
# every `pnpm run` script, so nothing else needs installing by hand.
#
# npx starts pnpm through a script shell; dash (Debian's sh) waiting there
# dies of the Ctrl-C meant for the command, and npm then reports the command
# as failed. bash waits for the command and exits as it does.
shell=$(command -v bash || echo sh)
exec npx --yes --script-shell="$shell" pnpm@10.34.8 "$@"
