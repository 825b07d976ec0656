package vsphere

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// vCenter has no per-client API rate limit, but an overloaded one (its reverse proxy) answers
// 503, and a proxy in front of it may answer 429; with Retry-After that means "come back
// then", and the call is repeated inside the same API call instead of failing the reconcile.
// govmomi's vim25.Retry cannot do this: it sees only the error (the status is in an unexported
// type, the Retry-After header is gone) and sleeps without the context. So the retry is an
// http.RoundTripper under the SOAP and vAPI clients. A 503 without Retry-After (vCenter down)
// is not retried: the caller's own backoff is the right one for an outage.
var (
	throttleRetries = 6                // per call
	throttleMaxWait = 10 * time.Second // per wait, whatever Retry-After asks
	// throttleBaseWait is the least first wait; it doubles with every retry of the call.
	throttleBaseWait = 500 * time.Millisecond
)

// opKey carries the SOAP method from the counter to the retrying transport, for the metric.
type opKey struct{}

// throttleRetry repeats a request answered 429 or 503 with Retry-After. Each refused attempt
// is counted by count (nil when the transport below counts every attempt itself).
type throttleRetry struct {
	next  http.RoundTripper
	count func(*http.Request, time.Time)
}

func (t *throttleRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		// SOAP bodies are a one-shot reader: keep a copy to send again.
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for retry := 0; ; retry++ {
		r := req
		if body != nil {
			r = req.Clone(req.Context())
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		start := time.Now()
		resp, err := t.next.RoundTrip(r)
		if err != nil || retry >= throttleRetries {
			return resp, err
		}
		wait, ok := throttled(resp)
		if !ok {
			return resp, nil
		}
		if t.count != nil {
			t.count(req, start)
		}
		// Retry-After is a floor: under sustained throttling the doubling spaces the callers out.
		wait = min(max(wait, throttleBaseWait<<min(retry, 16)), throttleMaxWait)
		wait += rand.N(wait/4 + 1) //nolint:gosec // jitter, not security
		ctx := req.Context()
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return resp, nil
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // draining for connection reuse
		resp.Body.Close()
		klog.V(4).InfoS("vCenter call throttled; retrying", "path", req.URL.Path, "status", resp.StatusCode, "retry", retry+1, "wait", wait)
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// throttled says whether resp asks to come back, and when.
func throttled(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	return retryAfter(resp.Header, time.Now())
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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// countSOAPThrottled records a refused SOAP attempt under its method; the counter records the
// call's final result.
func countSOAPThrottled(req *http.Request, start time.Time) {
	op, _ := req.Context().Value(opKey{}).(string)
	metrics.ObserveCloudCall(ProviderName, "vim25", op, start, metrics.ResultThrottled)
}
