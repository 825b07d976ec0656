// Package throttle is how the providers wait out a cloud that answers "too many requests":
// inside the call, at least as long as Retry-After asks, longer with every retry, with jitter,
// a bounded number of times, and never past the caller's deadline. An error returned to the
// service controller instead would requeue the whole reconcile and repeat its reads.
package throttle

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Default is the providers' policy: with its cap it bounds how long a controller worker
// waits on a cloud that keeps refusing (at most 6 waits of 10 s).
var Default = Policy{Retries: 6, BaseWait: 500 * time.Millisecond, MaxWait: 10 * time.Second}

// Policy bounds the retries of one call.
type Policy struct {
	Retries  int           // per call
	BaseWait time.Duration // the least first wait; it doubles with every retry
	MaxWait  time.Duration // per wait, whatever Retry-After asks
}

// Wait is how long to wait before retry number retry (0 for the first retry), given what
// Retry-After asked (after, when ok). Retry-After is a floor: under sustained throttling the
// doubling spaces the callers out, and the jitter keeps them from coming back together.
func (p Policy) Wait(retry int, after time.Duration, ok bool) time.Duration {
	wait := p.BaseWait << min(max(retry, 0), 16)
	if ok {
		wait = max(wait, after)
	}
	wait = min(wait, p.MaxWait)
	return wait + rand.N(wait/4+1) //nolint:gosec // jitter, not security
}

// Sleep waits d, or returns ctx's error when ctx ends first; it does not start when ctx's
// deadline comes before d is over (returning context.DeadlineExceeded at once).
func Sleep(ctx context.Context, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.DeadlineExceeded
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter reads a Retry-After header: delay-seconds (digits only, RFC 9110) or an HTTP date
// (a past date is 0). The result is never negative and never above MaxRetryAfter, however many
// digits or however distant a date the server sends; ok is false when there is no header or it
// is neither form.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		// All digits: parse them saturating, never wrapping around.
		if s, err := strconv.ParseUint(v, 10, 64); err == nil && s < uint64(MaxRetryAfter/time.Second) {
			return time.Duration(s) * time.Second, true
		}
		return MaxRetryAfter, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

// MaxRetryAfter caps what RetryAfter returns (Policy.MaxWait caps the wait itself).
const MaxRetryAfter = time.Hour
