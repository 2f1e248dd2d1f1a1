# syntax=docker/dockerfile:1
#
# agentmux images, built from the repository root:
#
#   docker build -t agentmux .                          the runtime alone (distroless)
#   docker build -t agentmux:agents --target agents .   with a shell, Node.js and the agent CLIs
#
# The context leaves .git out, so the build knows no revision of its own: stamp it, so
# that `agentmux version`, `agentmux nodes` and agentmux_build_info say what runs:
#
#   docker build --build-arg VERSION=$(git describe --tags --always) --build-arg REVISION=$(git rev-parse HEAD) -t agentmux .
#
# The default image has no shell: it serves NATS server nodes, supervisor nodes (rule,
# static, llm, human), the console and the CLI. A node that starts processes — agents,
# command supervisors, tools — needs /bin/sh (each process starts under a shim that kills
# its group when the node dies): run it from the agents target, or FROM it with your own
# agent's runtime added. Both run as a non-root user, keep the embedded server's store in
# /var/lib/agentmux, and read the manifest from /etc/agentmux/agentmux.toml.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
ARG VERSION
ARG REVISION
RUN go build -trimpath -tags grpcnotrace -ldflags="-s -w -X github.com/agentmux/agentmux/metrics.stampVersion=${VERSION} -X github.com/agentmux/agentmux/metrics.stampRevision=${REVISION}" -o /out/agentmux ./cmd/runtime
RUN go build -trimpath -tags grpcnotrace -ldflags="-s -w" -o /out/loadgen ./cmd/loadgen
RUN mkdir -p /out/store

# The agent CLIs are the versions the tests run (.ci/run installs the same).
FROM node:22-bookworm-slim AS agents
RUN apt-get update \
	&& apt-get install -y --no-install-recommends ca-certificates git \
	&& rm -rf /var/lib/apt/lists/*
RUN npm install -g --no-audit --no-fund \
	@anthropic-ai/claude-code@2.1.197 @agentclientprotocol/claude-agent-acp@0.100.0 @openai/codex@0.169.0 \
	&& npm cache clean --force
COPY --from=build /out/agentmux /out/loadgen /usr/local/bin/
COPY --from=build --chown=node:node /out/store /var/lib/agentmux
# Where agents work: mount a volume here (a new volume takes this folder's owner).
RUN install -d -o node -g node /home/node/work
USER node
# Where `agentmux up` keeps the local operator's credential for the CLI in the container
# (with no [[nats.users]]; docs/security.md).
ENV AGENTMUX_STATE_DIR=/var/lib/agentmux/state
WORKDIR /home/node
EXPOSE 4222 6222 9464
ENTRYPOINT ["/usr/local/bin/agentmux"]
CMD ["up", "-c", "/etc/agentmux/agentmux.toml"]

FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/agentmux /out/loadgen /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/store /var/lib/agentmux
USER 65532:65532
ENV AGENTMUX_STATE_DIR=/var/lib/agentmux/state
EXPOSE 4222 6222 9464
ENTRYPOINT ["/usr/local/bin/agentmux"]
CMD ["up", "-c", "/etc/agentmux/agentmux.toml"]
