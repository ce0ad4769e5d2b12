#!/bin/sh
# Runs the pinned pnpm with only Node.js and npm on the machine. pnpm then puts
# the workspace's own Node 24 (the `node` devDependency) first on the PATH of
# every `pnpm run` script, so nothing else needs installing by hand.
exec npx --yes pnpm@10.34.8 "$@"
