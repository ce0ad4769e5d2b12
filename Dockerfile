# Warmpath's container image: the `warmpath` CLI (router, agent, sim, demo,
# bench) on Node.js 24. The entrypoint is `warmpath`, so
#   docker run IMAGE router --host 0.0.0.0 …
#   docker run IMAGE agent --engine vllm --engine-url http://… …
# Build from the repository root: docker build -t warmpath .

# --- build: install the workspace, bundle the CLI, pack it as npm would -----
FROM node:24-slim AS build
WORKDIR /src
# Manifests first, so the dependency layer is rebuilt only when they change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
COPY packages/agent/package.json packages/agent/
COPY packages/bench/package.json packages/bench/
COPY packages/cli/package.json packages/cli/
COPY packages/launch/package.json packages/launch/
COPY packages/router/package.json packages/router/
COPY packages/shared/package.json packages/shared/
COPY packages/sim/package.json packages/sim/
COPY packages/testkit/package.json packages/testkit/
COPY test/package.json test/
# The CLI and the workspace packages it bundles. No install scripts: the only
# one is the root's `node` package fetching a Node.js the image already has.
RUN npx --yes pnpm@10.34.8 install --frozen-lockfile --filter "warmpath..." --ignore-scripts
COPY packages ./packages
RUN npx --yes pnpm@10.34.8 --filter warmpath run build \
 && mkdir /tmp/pkg \
 && cd packages/cli \
 && npm pack --ignore-scripts --pack-destination /tmp/pkg \
 && npm install --global --prefix /opt/warmpath --omit=dev --no-audit --no-fund /tmp/pkg/warmpath-*.tgz

# --- runtime: Node.js, the bundle and its one production dependency ---------
FROM node:24-slim
ENV NODE_ENV=production
COPY --from=build /opt/warmpath /opt/warmpath
# The image's unprivileged `node` user, by number so that Kubernetes'
# runAsNonRoot can verify it.
USER 1000:1000
# router HTTP · agent proxy · agent admin · gossip (libp2p TCP)
EXPOSE 8080 9000 9001 4001
ENTRYPOINT ["/opt/warmpath/bin/warmpath"]
CMD ["--help"]
