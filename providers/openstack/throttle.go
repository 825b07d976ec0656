package openstack

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/klog/v2"
)

// A throttled call (429, as OpenStack's rate-limit middleware answers) is retried inside the
// call by gophercloud's ProviderClient, which calls RetryBackoffFunc for 429 only; an
// error returned to the service controller would instead requeue the whole reconcile and
// repeat its reads. Each attempt, refused or not, is counted by the metrics transport
// (result "throttled" for a 429).
var (
	// throttleRetries bounds the retries of one call; with throttleMaxWait it bounds how long a
	// controller worker waits on a cloud that keeps refusing.
	throttleRetries uint = 6
	// throttleMaxWait caps one wait, whatever Retry-After asks.
	throttleMaxWait = 10 * time.Second
	// throttleBaseWait is the first wait; it doubles with every retry of the call.
	throttleBaseWait = 500 * time.Millisecond
)

// throttleBackoff is a gophercloud RetryBackoffFunc: it waits at least what Retry-After says,
// longer with every retry (exponential backoff), with jitter so the throttled callers do not come back together, and
// gives up when ctx would end first.
func throttleBackoff(ctx context.Context, respErr *gophercloud.ErrUnexpectedResponseCode, _ error, retry uint) error {
	// Retry-After is a floor: under sustained throttling the doubling spaces the callers out.
	wait := throttleBaseWait << min(retry-1, 16)
	if after, ok := retryAfter(respErr.ResponseHeader, time.Now()); ok {
		wait = max(wait, after)
	}
	wait = min(wait, throttleMaxWait)
	wait += rand.N(wait/4 + 1) //nolint:gosec // jitter, not security
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		return respErr
	}
	klog.V(4).InfoS("OpenStack call throttled; retrying", "method", respErr.Method, "url", respErr.URL, "retry", retry, "wait", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return respErr
	case <-t.C:
		return nil
	}
}

// retryAfter reads Retry-After: delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
