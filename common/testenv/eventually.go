package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond every 100ms until it returns true, and fails t when timeout passes;
// cond's last error explains the failure.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
}
