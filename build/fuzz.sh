#!/usr/bin/env bash
# Runs every Go fuzz target of the workspace briefly (go test -fuzz takes one target at a time).
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
for mod in $(go list -m -f '{{.Dir}}'); do
  (cd "$mod" && grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null || true) | while read -r f; do
    pkg=$(dirname "$f")
    for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$mod/$f" | sed 's/^func //'); do
      echo "fuzz: $target in ${mod#$PWD/}/${pkg#./} for $fuzztime"
      (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg") | tail -1
    done
  done
done
