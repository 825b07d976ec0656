#!/usr/bin/env bash
# Prints the whole output of every failed test in a `go test -v` log (the console shows only a
# filtered view, which drops the indented log lines a failing test prints, such as a ccm's log).
set -euo pipefail
log=${1:?usage: failed-tests.sh LOG}
awk '
  /^=== (RUN|CONT|PAUSE)/ { split($3, p, "/"); cur = p[1] }
  cur != "" { buf[cur] = buf[cur] $0 "\n" }
  /^--- FAIL: / { split($3, p, "/"); failed[p[1]] = 1 }
  END {
    for (t in failed) {
      printf "\n===== full output of failed test %s =====\n%s", t, buf[t]
    }
  }
' "$log" | tail -n 600
