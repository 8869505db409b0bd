# One image with both programs: /millwright-manager (the entrypoint) and
# /millwright-sim (the simulated cloud's driver, run as a sidecar by
# config/manager with `command: [/millwright-sim]`).
#
#   docker build -t ghcr.io/millwright-dev/millwright:latest .
#
# Not built by `make test` or CI: the machines Millwright is developed on
# have no container engine, so this file has never been built there. What
# it compiles is what `make build` compiles, with the same Go version
# (go.mod: go 1.26).

FROM golang:1.26 AS builder
WORKDIR /src
# Modules first, so source edits do not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
COPY pkg/ pkg/
# Static binaries (distroless/static has no libc); TARGETOS/TARGETARCH are
# set by `docker buildx build --platform ...`, empty otherwise (the
# builder's own platform).
ARG TARGETOS
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/millwright-manager ./cmd/millwright-sim

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/millwright-manager /out/millwright-sim /
# distroless's "nonroot" user; config/manager runs the pod as 65532 too.
USER 65532:65532
ENTRYPOINT ["/millwright-manager"]
