#!/usr/bin/env bash
# Runs every Go fuzz target of the workspace briefly (go test -fuzz takes one target at a time).
#
# Go's fuzz engine sometimes reports "fuzzing process hung or terminated unexpectedly" for an
# input that passes when run again (golang/go#52569, #56238). A failure counts only when the
# input it wrote fails again on its own; otherwise it is reported as an engine flake, the
# input is removed and the next target runs. Real crashes always reproduce. The engine can
# also stall until -fuzztime ends ("context deadline exceeded") without writing any input:
# that target is run once more, and only a second failure counts.
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
status=0
for mod in $(go list -m -f '{{.Dir}}'); do
  while read -r f; do
    [ -n "$f" ] || continue
    pkg=$(dirname "$f")
    for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$mod/$f" | sed 's/^func //'); do
      echo "fuzz: $target in ${mod#$PWD/}/${pkg#./} for $fuzztime"
      out=$(mktemp)
      if (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg") >"$out" 2>&1; then
        tail -1 "$out"
      else
        cat "$out"
        input=$(grep -oE "testdata/fuzz/${target}/[0-9a-f]+" "$out" | head -1 || true)
        if [ -n "$input" ] && grep -q 'fuzzing process hung or terminated unexpectedly' "$out" &&
          (cd "$mod/$pkg" && go test -count=1 -run "^${target}\$/$(basename "$input")\$" .) >/dev/null 2>&1; then
          echo "fuzz: $target: the engine reported a hang but its input $(basename "$input") passes when run again; Go fuzz-engine flake, not a failure"
          rm -f "$mod/$pkg/$input"
          rmdir -p "$mod/$pkg/testdata/fuzz/$target" 2>/dev/null || true
        elif [ -z "$input" ] && grep -q 'context deadline exceeded' "$out" &&
          (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg") >/dev/null 2>&1; then
          # The engine stalled (0 execs/s, usually while minimising a new interesting input)
          # and hit -fuzztime without finding anything: no failing input was written, and a
          # second run passes.
          echo "fuzz: $target: the engine stalled until its deadline with no failing input, and a second run passes; Go fuzz-engine flake, not a failure"
        else
          echo "fuzz: $target FAILED${input:+; the failing input is $mod/$pkg/$input}"
          status=1
        fi
      fi
      rm -f "$out"
    done
  done < <(cd "$mod" && grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null || true)
done
exit $status
