#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 30s).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $f ($t)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$t" "$pkg"
  done
done
# The patched kafka-go record decoder (third_party/kafka-go, PATCH.md) is
# another module: go test -fuzz runs only in the main module, so from its own
# directory (its go.mod, with this module's module cache).
echo "== third_party/kafka-go/protocol FuzzRecordCursor ($t)"
(cd third_party/kafka-go && GOFLAGS=-mod=mod go test -run '^$' -fuzz '^FuzzRecordCursor$' -fuzztime "$t" ./protocol)
