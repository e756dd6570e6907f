#!/bin/sh
# Builds the release binaries into OUTDIR: static (CGO_ENABLED=0), without
# local paths (-trimpath), stamped with the version, revision and build date
# (internal/buildinfo, read by --version and changerate_build_info).
# The Dockerfile, `make build` and internal/buildinfo's TestStaticRelease
# all call this script, so the image's flags are the tested flags.
#
#   scripts/build-static.sh OUTDIR
#
# VERSION (default: the VERSION file), REVISION (default: git rev-parse HEAD)
# and DATE (default: the commit's time, so that rebuilding a commit gives the
# same bytes) may be set in the environment; GOOS/GOARCH are honoured.
set -eu
out=${1:?usage: scripts/build-static.sh OUTDIR}
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(cat VERSION)}
REVISION=${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)}
pkg=github.com/changerate/changerate/internal/buildinfo
mkdir -p "$out"
CGO_ENABLED=0 ${GO:-go} build -trimpath \
  -ldflags "-s -w -X $pkg.Version=$VERSION -X $pkg.Revision=$REVISION -X $pkg.Date=$DATE" \
  -o "$out/" ./cmd/aggregator ./cmd/ingest
