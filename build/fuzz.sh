#!/usr/bin/env bash
# Runs every Go fuzz target of the workspace briefly (go test -fuzz takes one target at a time).
#
# Hangs fail. Go's engine gives one input 10 s; past that the worker panics, and go reports
# "fuzzing process hung or terminated unexpectedly" and writes the input to testdata/fuzz. But
# an input that starts hanging less than 10 s before -fuzztime ends (every hang, with the 10 s
# of make test) is killed silently with the worker and the run PASSes. So a watchdog follows
# each worker's shared-memory header (it changes with every input the worker runs) and stops,
# with SIGQUIT, a worker that spent FUZZ_HANG on one input: go then records that input as
# "hung or terminated unexpectedly". A reported input is run again on its own with go test's
# -timeout FUZZ_INPUT_TIMEOUT (go's own 10 s). The target fails, naming the target and the input
# file, when go reported the hang itself or the input fails or times out on its own. Only when
# the watchdog's shorter limit stopped an input that then passes on its own in time (a slow
# input on a loaded machine, not a hang) is it removed and the target run once more.
#
# The engine can also stall until -fuzztime ends ("context deadline exceeded", 0 execs/s)
# without writing any input: that target is run once more, and only a second failure counts.
#
# FUZZ_ROOT: the directory whose modules are fuzzed (default: this repository).
# FUZZ_SELFTEST=1: first check this script against a throwaway module (build/fuzz_selftest.sh).
set -Eeuo pipefail
# set -e ends the script at a failed command; say which, so that a failure never passes silently.
trap 'echo "fuzz.sh: line $LINENO: \"$BASH_COMMAND\" failed (exit $?)" >&2' ERR
fuzztime=${1:-10s}
hang=${FUZZ_HANG:-3} # seconds one input may run before the watchdog stops its worker
input_timeout=${FUZZ_INPUT_TIMEOUT:-10s}
here=$(cd "$(dirname "$0")" && pwd)
if [ "${FUZZ_SELFTEST:-}" = 1 ]; then
  bash "$here/fuzz_selftest.sh"
fi
cd "${FUZZ_ROOT:-$here/..}"

# Milliseconds of the wall clock.
ms() {
  local t=${EPOCHREALTIME/[.,]/}
  echo $((t / 1000))
}

# The fuzz workers of our go test process: children of the test binary it runs.
workers() {
  local bin
  for bin in $(pgrep -P "$1" 2>/dev/null || true); do
    pgrep -P "$bin" -f -- '-test.fuzzworker' 2>/dev/null || true
  done
}

# The header of a worker's shared memory (/tmp/fuzz-*): it holds the count of inputs run and
# the mutator's state, so it stays the same only while one input runs (or the worker idles
# between two calls, for milliseconds).
header() {
  local fd
  for fd in /proc/"$1"/fd/*; do
    case $(readlink "$fd" 2>/dev/null) in
    */fuzz-*)
      # The worker may exit while it is read: then there is no header, not an error.
      head -c 64 "$fd" 2>/dev/null | cksum || true
      return 0
      ;;
    esac
  done
  return 0
}

# run_fuzz MOD PKG TARGET OUT: one watched go test -fuzz run; sets rc and stopped (the number of
# workers the watchdog stopped).
run_fuzz() {
  local mod=$1 pkg=$2 target=$3 out=$4 gopid w h now t0
  (cd "$mod" && exec go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg") >"$out" 2>&1 &
  gopid=$!
  stopped=0
  t0=$(ms)
  declare -A seen=() since=()
  while kill -0 "$gopid" 2>/dev/null; do
    sleep 0.5
    now=$(ms)
    for w in $(workers "$gopid"); do
      h=$(header "$w") || h=
      [ -n "$h" ] || continue
      if [ "${seen[$w]:-}" != "$h" ]; then
        seen[$w]=$h since[$w]=$now
      elif [ $((now - since[$w])) -ge $((hang * 1000)) ] && ! grep -q '^fuzz: minimizing' "$out"; then
        # (While go minimises a crasher the other workers idle: they are not stopped.)
        echo "fuzz: $target: a worker ran one input for ${hang}s or more; stopping it (SIGQUIT) so that go records the input${FUZZ_DEBUG:+ (pid $w at $((now - t0))ms)}"
        kill -QUIT "$w" 2>/dev/null || true
        stopped=$((stopped + 1))
        since[$w]=$((now + 3600000))
      fi
    done
  done
  rc=0
  wait "$gopid" || rc=$?
}

status=0
for mod in $(go list -m -f '{{.Dir}}'); do
  while read -r f; do
    [ -n "$f" ] || continue
    pkg=$(dirname "$f")
    dir=$(cd "$mod/$pkg" && pwd)
    for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$mod/$f" | sed 's/^func //'); do
      echo "fuzz: $target in ${mod#$PWD/}/${pkg#./} for $fuzztime"
      out=$(mktemp)
      for attempt in 1 2; do
        run_fuzz "$mod" "$pkg" "$target" "$out"
        verdict=fail retry=
        input=$(grep -oE "testdata/fuzz/${target}/[0-9a-f]+" "$out" | head -1 || true)
        hung=$(grep -c 'fuzzing process hung or terminated unexpectedly' "$out" || true)
        if [ "$rc" = 0 ] && [ "$stopped" = 0 ]; then
          tail -1 "$out"
          verdict=pass
        elif [ "$rc" = 0 ]; then
          cat "$out"
          echo "fuzz: $target: go ended before it recorded the input the watchdog stopped"
          retry="the watchdog stopped a worker, but the run ended before go recorded its input"
        else
          cat "$out"
          if [ -n "$input" ] && [ "$hung" != 0 ]; then
            # Run the input on its own, within the per-input deadline.
            start=$SECONDS
            if (cd "$dir" && go test -count=1 -timeout "$input_timeout" -run "^${target}\$/$(basename "$input")\$" .) >"$out.alone" 2>&1; then
              alone="passes on its own in $((SECONDS - start))s"
              if [ "$stopped" != 0 ]; then
                retry="the input the watchdog stopped after ${hang}s $alone: a slow input, not a hang"
                rm -f "$dir/$input"
                rmdir -p "$dir/testdata/fuzz/$target" 2>/dev/null || true
              fi
            else
              grep -E 'panic: test timed out|--- FAIL' "$out.alone" | head -3 || true
              alone="fails or runs longer than $input_timeout on its own"
            fi
            rm -f "$out.alone"
            [ -n "$retry" ] || echo "fuzz: $target FAILED: the input $dir/$input hung or crashed the fuzz worker; it $alone (go test -run=$target/$(basename "$input") in ${mod#$PWD/}/${pkg#./})"
          elif [ -z "$input" ] && [ "$stopped" != 0 ]; then
            retry="the watchdog stopped a worker, but go recorded no input"
          elif [ -z "$input" ] && grep -q 'context deadline exceeded' "$out"; then
            # The engine stalled (0 execs/s, usually while minimising a new interesting input)
            # and hit -fuzztime without finding anything: no failing input was written.
            retry="the engine stalled until its deadline with no failing input"
          fi
        fi
        if [ "$verdict" = pass ]; then
          [ "$attempt" = 1 ] || echo "fuzz: $target: the second run passes; Go fuzz-engine flake or slow input, not a failure"
          break
        fi
        if [ -n "$retry" ] && [ "$attempt" = 1 ]; then
          echo "fuzz: $target: $retry; running it once more"
          continue
        fi
        if [ -z "$input" ] && [ "$stopped" != 0 ]; then
          echo "fuzz: $target FAILED: an input ran ${hang}s or more (twice), and go recorded none"
        elif [ -n "$retry" ]; then
          echo "fuzz: $target FAILED: $retry, twice"
        elif [ "$hung" = 0 ] || [ -z "$input" ]; then
          echo "fuzz: $target FAILED${input:+; the failing input is $dir/$input}"
        fi
        status=1
        break
      done
      rm -f "$out"
    done
  done < <(cd "$mod" && grep -rl --include='*_test.go' '^func Fuzz' . 2>/dev/null || true)
done
exit $status
