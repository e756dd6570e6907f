#!/usr/bin/env bash
# The performance report (README: `make bench`). It makes sure redis-server
# is installed, runs research/cmd/benchreport — real redis-server, in-process kfake
# broker, the real KafkaSource → Processor → Redis/KafkaSink path against a
# naive one-round-trip-per-observation design, latency at half load, bytes
# per object, and the query API's latency and index memory (research/cmd/benchreport/query.go;
# alone: go -C research run ./cmd/benchreport -query=only -out $PWD/docs/bench.md) — which writes docs/bench.md, then appends the `go test -bench`
# results of the hot-path packages. Takes about 8 minutes on 2 cores (462 s on 2026-11-24).
#
# Knobs: BENCH_OUT (report file, default docs/bench.md), BENCH_RUNS (runs per
# design, default 5), BENCH_FLAGS (more benchreport flags, see
# `go -C research run ./cmd/benchreport -h`), BENCHTIME (go test -benchtime, default 1s).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
OUT=${BENCH_OUT:-docs/bench.md}
RUNS=${BENCH_RUNS:-5}
BENCHTIME=${BENCHTIME:-1s}

if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench.sh: installing redis-server"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "bench.sh: redis-server is required (apt-get install redis-server)" >&2
    exit 1
  fi
fi

start=$(date +%s)
tmp=$(mktemp)
bindir=$(mktemp -d)
trap 'rm -rf "$tmp" "$bindir"' EXIT
# The live-crawl runs use the aggregator binary as its own process.
$GO build -o "$bindir/aggregator" ./cmd/aggregator
# benchreport is in the research module; it runs from here (paths are the
# repository root's).
$GO -C research build -o "$bindir/benchreport" ./cmd/benchreport
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
"$bindir/benchreport" -out "$OUT" -runs "$RUNS" -timeout 40m -aggregator "$bindir/aggregator" -cpuprofile "$bindir/pipeline.pprof" ${BENCH_FLAGS:-}

# One go test per package group; a package that does not build (other work in
# progress) is reported in the output instead of stopping the report.
bench() { # benchtime pattern packages...
  local bt=$1 pat=$2
  shift 2
  if ! $GO test -run '^$' -benchmem -benchtime "$bt" -bench "$pat" "$@" >>"$tmp" 2>&1; then
    echo "FAILED: go test -bench '$pat' $*" >>"$tmp"
  fi
}
bench "$BENCHTIME" 'BenchmarkApply|BenchmarkProcessor$|BenchmarkProcessorLive|BenchmarkChangeEstimate|BenchmarkCacheBytesPerObject' ./aggregate
bench 1x 'BenchmarkProcessorCacheMemory' ./aggregate
bench "$BENCHTIME" 'BenchmarkDecodeObservation|BenchmarkAppendEstimateJSON|BenchmarkMarshalEstimate' ./records
bench "$BENCHTIME" . ./estimators ./windows
bench "$BENCHTIME" 'BenchmarkParse' ./parse
bench 100x 'BenchmarkCommit1000$|BenchmarkGet1000$' ./state
{
  echo
  echo "## Hot-path benchmarks (\`go test -bench\`)"
  echo
  echo "Appended by \`scripts/bench.sh\` (\`-benchtime $BENCHTIME\`; state: \`-benchtime 100x\` against a real redis-server)."
  echo "Wall-clock ns/op on the shared machine: compare within a run, e.g. \`BenchmarkDecodeObservation\` with"
  echo "\`BenchmarkDecodeObservationJSON\` (the encoding/json path it replaces) and \`BenchmarkAppendEstimateJSON\` with"
  echo "\`BenchmarkMarshalEstimate\`. \`BenchmarkChangeEstimate\` (aggregate) is the full published change estimate record per"
  echo "object (issue 13: at most 2 µs); \`BenchmarkCacheBytesPerObject\` and \`BenchmarkProcessorCacheMemory\` (heap in use after the"
  echo "Processor has cached 1,000,000 objects, \`-benchtime 1x\`) measure the cache's bytes per object (at most 400)."
  echo
  echo '```'
  grep -E '^(goos|goarch|cpu|pkg|Benchmark|ok|FAIL)' "$tmp"
  echo '```'
  # Issue 13's two go-bench targets, judged from the numbers above (no tolerance).
  field() { # benchmark-name-regexp unit: the value before unit on the first matching line
    awk -v re="$1" -v unit="$2" '$1 ~ re { for (i = 2; i < NF; i++) if ($(i+1) == unit) { print $i; exit } }' "$tmp"
  }
  verdict() { # value bound
    if [ -z "$1" ]; then echo "not measured ✗"; elif awk -v v="$1" -v b="$2" 'BEGIN { exit !(v <= b) }'; then echo "✓ met"; else echo "✗ not met"; fi
  }
  est=$(field '^BenchmarkChangeEstimate/live-[0-9]+$' ns/op)
  cache=$(field '^BenchmarkProcessorCacheMemory-[0-9]+$' heapinuse-B/object)
  echo
  echo "| issue 13 target | bound | measured | verdict |"
  echo "|---|---:|---:|---|"
  echo "| full change estimate record per object (\`BenchmarkChangeEstimate/live\`, aggregate) | ≤ 2000 ns | ${est:-–} ns | $(verdict "$est" 2000) |"
  echo "| cache: heap in use per cached object after 1,000,000 objects (\`BenchmarkProcessorCacheMemory\`) | ≤ 400 B | ${cache:-–} B | $(verdict "$cache" 400) |"
  if [ -s "$bindir/pipeline.pprof" ]; then
    echo
    echo "## CPU profile of the pipeline runs (top entries)"
    echo
    echo "\`go tool pprof -top -nodecount 25\` of \`benchreport -cpuprofile\` over the last pipeline run above (the in-process"
    echo "pipeline: KafkaSource, Processor, Redis store and KafkaSink, with the kfake broker in the same process)."
    echo
    echo '```'
    $GO tool pprof -top -nodecount 25 "$bindir/benchreport" "$bindir/pipeline.pprof" 2>/dev/null | sed -n '/^Showing\|flat/,$p'
    echo '```'
  fi
  echo
  echo "\`make bench\` took $(( $(date +%s) - start )) s."
} >>"$OUT"
echo "bench.sh: wrote $OUT"
