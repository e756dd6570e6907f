# syntax=docker/dockerfile:1
# One image with both programs, /aggregator and /ingest (the manifests pick one with `command`).
#
#   make image                      # = docker build --build-arg VERSION=$(cat VERSION) ... -t changerate/changerate:$(cat VERSION) .
#   docker run --rm changerate/changerate:0.1.0 /aggregator --version
#
# Stage 1 builds static binaries with scripts/build-static.sh (CGO_ENABLED=0, -trimpath, version stamped with
# -ldflags -X); internal/buildinfo's TestStaticRelease runs the same script and checks the result. Stage 2 is
# distroless "static" (no shell, no libc, CA certificates and tzdata included) running as the nonroot user
# 65532:65532, the UID the Kubernetes manifests require.
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# third_party/kfake is the tests' patched broker double, named by a replace directive in go.mod.
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION
ARG REVISION=unknown
ARG DATE=unknown
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH VERSION=${VERSION:-$(cat VERSION)} REVISION=$REVISION DATE=$DATE \
    ./scripts/build-static.sh /out

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/aggregator /out/ingest /
USER 65532:65532
EXPOSE 8080 9100
CMD ["/aggregator"]
