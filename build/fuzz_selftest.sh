#!/usr/bin/env bash
# Checks build/fuzz.sh against a throwaway module: a target that sleeps forever on some inputs
# must fail, naming the target and the input file go wrote, and a sound target must pass.
# Run by fuzz.sh when FUZZ_SELFTEST=1, or by hand; about 20 s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/go.mod" <<'MOD'
module fuzzselftest.invalid/m

go 1.22
MOD
cat >"$tmp/hang_test.go" <<'SRC'
package m

import (
	"testing"
	"time"
)

// FuzzHang sleeps forever on any input longer than its seed: the fuzzer finds one at once.
func FuzzHang(f *testing.F) {
	f.Add("ab")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4 {
			time.Sleep(time.Hour)
		}
	})
}

func FuzzFine(f *testing.F) {
	f.Add("ab")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<20 {
			t.Fatal("unreachable")
		}
	})
}
SRC
out=$tmp/out
rc=0
GOWORK=off FUZZ_ROOT=$tmp FUZZ_SELFTEST= FUZZ_DEBUG=${FUZZ_DEBUG:-} FUZZ_HANG=2 FUZZ_INPUT_TIMEOUT=2s bash "$here/fuzz.sh" 6s >"$out" 2>&1 || rc=$?
fail() {
  sed 's/^/  | /' "$out"
  echo "fuzz self-test FAILED: $*"
  exit 1
}
[ "$rc" = 1 ] || fail "fuzz.sh exited $rc, want 1"
line=$(grep -E "^fuzz: FuzzHang FAILED: the input $tmp/testdata/fuzz/FuzzHang/[0-9a-f]+ " "$out" || true)
[ -n "$line" ] || fail "no line naming FuzzHang and its input file"
file=$(grep -oE "$tmp/testdata/fuzz/FuzzHang/[0-9a-f]+" <<<"$line" | head -1)
[ -f "$file" ] || fail "the input $file was not kept"
! grep -q 'FuzzFine FAILED' "$out" || fail "FuzzFine failed"
grep -qE '^fuzz: FuzzFine in ' "$out" || fail "FuzzFine did not run"
echo "fuzz self-test: a hanging input fails and is named ($(basename "$file")); a sound target passes"
