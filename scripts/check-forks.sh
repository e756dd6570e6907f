#!/usr/bin/env bash
# Proves that each patched copy under third_party/ is its upstream module
# plus its changerate.patch, and nothing else (issue 37).
#
# For each copy: the module's path and version come from the root go.mod's
# require line for the module the replace directive points at; the upstream
# source is taken from the Go module cache (`go mod download`); the copy's
# selection of it (FORK.conf: which files upstream ships that the copy keeps)
# is laid out in a temporary directory, gofmt is run over its Go files (the
# project's CI formats every Go file it holds; upstream's doc comments predate
# gofmt's comment rules), changerate.patch is applied with `git apply`, and
# the result is compared with the copy, PATCH.md, FORK.conf and the patch
# itself aside. Any difference fails the run and is printed.
#
#   scripts/check-forks.sh           check every copy
#   scripts/check-forks.sh --regen   rewrite each changerate.patch from the
#                                    copy as it is (after changing a copy)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
regen=0
[ "${1:-}" = "--regen" ] && regen=1

fail=0
for conf in third_party/*/FORK.conf; do
  dir=$(dirname "$conf")
  # FORK.conf: `module <path>`, then `exclude <regexp>` lines (paths,
  # relative to the module root, of upstream files the copy leaves out).
  module=$(awk '$1=="module"{print $2}' "$conf")
  excludes=$(awk '$1=="exclude"{print $2}' "$conf" | paste -sd'|' -)
  version=$(go list -m -f '{{if .Replace}}{{.Version}}{{end}}' "$module")
  if [ -z "$version" ]; then
    echo "check-forks: $dir: go.mod has no require line (or no replace) for $module" >&2
    fail=1; continue
  fi
  src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  if [ -z "$src" ] || [ ! -d "$src" ]; then
    echo "check-forks: $dir: cannot download $module@$version" >&2
    fail=1; continue
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  up=$tmp/upstream
  mkdir -p "$up"
  # The selection: upstream's non-test Go files, go.mod, go.sum, LICENSE,
  # less FORK.conf's excludes. Nested modules are not part of a module's
  # download, so they are never in it.
  (cd "$src" && find . -type f \( \( -name '*.go' ! -name '*_test.go' \) -o -name go.mod -o -name go.sum -o -name LICENSE \) \
      | sed 's|^\./||' | { if [ -n "$excludes" ]; then grep -Ev "^($excludes)" || true; else cat; fi; } | sort) > "$tmp/files"
  tar -C "$src" -cf - -T "$tmp/files" | tar -C "$up" -xf -
  chmod -R u+w "$up"
  gofmt -w $(find "$up" -name '*.go')
  if [ $regen = 1 ]; then
    mkdir -p "$tmp/a" "$tmp/b" && cp -R "$up/." "$tmp/a/" && cp -R "$dir/." "$tmp/b/"
    rm -f "$tmp/b/PATCH.md" "$tmp/b/FORK.conf" "$tmp/b/changerate.patch"
    (cd "$tmp" && git -c core.quotepath=off diff --no-index --no-prefix --binary a b || true) > "$dir/changerate.patch"
    echo "check-forks: $dir/changerate.patch rewritten ($(grep -c '^diff --git' "$dir/changerate.patch") files)"
  fi
  if ! (cd "$up" && git apply --whitespace=nowarn "$root/$dir/changerate.patch"); then
    echo "check-forks: $dir: changerate.patch does not apply to $module@$version" >&2
    fail=1; rm -rf "$tmp"; trap - EXIT; continue
  fi
  if diff -r -x PATCH.md -x FORK.conf -x changerate.patch "$up" "$dir" > "$tmp/diff"; then
    echo "check-forks: $dir is $module@$version + changerate.patch ($(grep -c '^diff --git' "$dir/changerate.patch") files changed or added)"
  else
    echo "check-forks: $dir differs from $module@$version + changerate.patch:" >&2
    head -50 "$tmp/diff" >&2
    fail=1
  fi
  rm -rf "$tmp"; trap - EXIT
done
exit $fail
