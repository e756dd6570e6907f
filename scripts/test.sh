#!/usr/bin/env bash
# The project's test command (README: `make test`). It makes sure the real
# third-party programs the tests drive are installed — redis-server and
# redis-cli (state/ and pipeline tests start their own servers on free ports)
# kcat (a non-Go Kafka client reading our topics), chromium (the headless
# browser of the web page's end-to-end test) and promtool (Debian's prometheus
# package: deploy/k8s checks and unit-tests the alerting rules with it) — then
# runs go vet and
# every test, under the race detector except in the packages listed in
# scripts/race-free-packages. With CHANGERATE_REQUIRE_* set, a test
# that would need a missing program fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "test.sh: missing ${need[*]}; install them (apt-get install ${need[*]}) or the tests that need them skip" >&2
  fi
fi
if command -v redis-server >/dev/null 2>&1; then export CHANGERATE_REQUIRE_REDIS=1; fi
if command -v kcat >/dev/null 2>&1; then export CHANGERATE_REQUIRE_KCAT=1; fi
if command -v chromium >/dev/null 2>&1; then export CHANGERATE_REQUIRE_CHROMIUM=1; fi
# The browser test's screenshot (object-page.png) goes here.
export CHANGERATE_ARTIFACT_DIR="${CHANGERATE_ARTIFACT_DIR:-$PWD/artifacts}"
if command -v promtool >/dev/null 2>&1; then export CHANGERATE_REQUIRE_PROMTOOL=1; fi

go vet ./...
go -C research vet ./...
# The research and measurement tools (evaluation, benchmark report) are a
# module of their own, research/, built against this one. Its tests run
# beside the product's: the product's end-to-end tests spend most of their
# time waiting on processes they killed or paused, which leaves a core
# free. Its output is printed after the product's, whole.
research_log=$(mktemp)
trap 'rm -f "$research_log"' EXIT
go -C research test -race -count=1 -timeout 20m "$@" ./... >"$research_log" 2>&1 &
research_pid=$!
# The packages of scripts/race-free-packages start no goroutine (checked by
# internal/racefree), so their tests run without the race detector; every
# other package runs under it.
module=$(go list -m)
race_free=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e "s|^|$module/|" scripts/race-free-packages)
raced=$(go list ./... | grep -vxF "$race_free")
product=0
go test -race -count=1 -timeout 20m "$@" $raced || product=$?
go test -count=1 -timeout 20m "$@" $race_free || product=$?
research=0
wait "$research_pid" || research=$?
echo "--- research module (go -C research test):"
cat "$research_log"
# The patched copy of kafka-go (third_party/kafka-go, PATCH.md) is another
# module: its test compares the patched record decoder with upstream's.
go test -race -count=1 -run 'RecordCursor' github.com/segmentio/kafka-go/protocol
if [ "$product" != 0 ] || [ "$research" != 0 ]; then
  echo "test.sh: product tests exit $product, research tests exit $research" >&2
  exit 1
fi
