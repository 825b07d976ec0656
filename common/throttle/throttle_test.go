package throttle

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"3":                             3 * time.Second,
		"0":                             0,
		"Thu, 01 Jan 2026 12:00:07 GMT": 7 * time.Second,
		"Thu, 01 Jan 2026 11:00:00 GMT": 0,               // in the past: go now
		" 5 ":                           5 * time.Second, // optional white space around the value
		// Far too long: capped, not wrapped around (9999999999 s overflowed to a negative wait;
		// longer digit strings were refused as out of range).
		"9999999999":                     MaxRetryAfter,
		"99999999999999999999999":        MaxRetryAfter,
		"Fri, 31 Dec 9999 23:59:59 GMT":  MaxRetryAfter,
		"Thu, 01 Jan 2026 13:00:00 GMT":  MaxRetryAfter,
		"Monday, 01-Jan-26 12:00:02 GMT": 2 * time.Second, // the obsolete forms HTTP allows
		"Thu Jan  1 12:00:03 2026":       3 * time.Second,
	} {
		got, ok := RetryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok || got != want {
			t.Errorf("Retry-After %q = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-1", "+3", "3.5", "1e3", "0x10", "3 s"} {
		if _, ok := RetryAfter(http.Header{"Retry-After": {v}}, now); ok {
			t.Errorf("Retry-After %q accepted", v)
		}
	}
}

func TestWait(t *testing.T) {
	p := Policy{Retries: 6, BaseWait: 100 * time.Millisecond, MaxWait: time.Second}
	within := func(got, least time.Duration) bool { return got >= least && got <= least+least/4 }
	for _, c := range []struct {
		retry int
		after time.Duration
		ok    bool
		least time.Duration
	}{
		{0, 0, false, 100 * time.Millisecond},
		{2, 0, false, 400 * time.Millisecond},                     // doubles
		{0, 700 * time.Millisecond, true, 700 * time.Millisecond}, // Retry-After is a floor
		{4, 0, false, time.Second},                                // capped
		{0, time.Hour, true, time.Second},                         // capped whatever Retry-After asks
		{40, 0, false, time.Second},                               // no overflow
	} {
		if got := p.Wait(c.retry, c.after, c.ok); !within(got, c.least) {
			t.Errorf("Wait(%d, %v, %v) = %v, want %v plus at most a quarter", c.retry, c.after, c.ok, got, c.least)
		}
	}
}

func TestSleepRespectsTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Second); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 40*time.Millisecond {
		t.Errorf("Sleep past the deadline = %v after %v, want DeadlineExceeded at once", err, time.Since(start))
	}
	if err := Sleep(context.Background(), 10*time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}
