package aws

import (
	"strings"
	"testing"
	"time"
)

// Production keeps its policy (8 attempts, back-off up to 10 s); the tests' shorter back-off
// must not change the number of attempts a check exercises.
func TestRetryPolicy(t *testing.T) {
	if got := defaultRetry.retryer().MaxAttempts(); got != 8 {
		t.Errorf("production attempts %d, want 8", got)
	}
	if got := testRetry.retryer().MaxAttempts(); got != defaultRetry.maxAttempts {
		t.Errorf("test attempts %d, want production's %d", got, defaultRetry.maxAttempts)
	}
	c, err := New(strings.NewReader("[Global]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.retry != defaultRetry {
		t.Errorf("New's retry policy %+v, want %+v", c.retry, defaultRetry)
	}
	if defaultRetry.maxBackoff != 10*time.Second {
		t.Errorf("production back-off %v, want 10s", defaultRetry.maxBackoff)
	}
}
