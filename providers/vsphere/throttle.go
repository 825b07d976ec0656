package vsphere

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/throttle"
)

// vCenter has no per-client API rate limit, but an overloaded one (its reverse proxy) answers
// 503, and a proxy in front of it may answer 429; with Retry-After that means "come back
// then", and the call is repeated inside the same API call instead of failing the reconcile.
// govmomi's vim25.Retry cannot do this: it sees only the error (the status is in an unexported
// type, the Retry-After header is gone) and sleeps without the context. So the retry is an
// http.RoundTripper under the SOAP and vAPI clients. A 503 without Retry-After (vCenter down)
// is not retried: the caller's own backoff is the right one for an outage.
var throttlePolicy = throttle.Default // a variable for the tests

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
		if err != nil || retry >= throttlePolicy.Retries {
			return resp, err
		}
		after, ok := throttled(resp)
		if !ok {
			return resp, nil
		}
		if t.count != nil {
			t.count(req, start)
		}
		wait := throttlePolicy.Wait(retry, after, true)
		ctx := req.Context()
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return resp, nil
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // draining for connection reuse
		resp.Body.Close()
		klog.V(4).InfoS("vCenter call throttled; retrying", "path", req.URL.Path, "status", resp.StatusCode, "retry", retry+1, "wait", wait)
		if err := throttle.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// throttled says whether resp asks to come back, and when.
func throttled(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	return throttle.RetryAfter(resp.Header, time.Now())
}

// countSOAPThrottled records a refused SOAP attempt under its method; the counter records the
// call's final result.
func countSOAPThrottled(req *http.Request, start time.Time) {
	op, _ := req.Context().Value(opKey{}).(string)
	metrics.ObserveCloudCall(ProviderName, "vim25", op, start, metrics.ResultThrottled)
}
