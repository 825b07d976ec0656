package metrics

import (
	"net/http"
	"time"
)

// Transport counts every HTTP request a cloud SDK makes. Operation names the call from the
// request (for example the AWS "Action" or the SOAP method); a 429 or 503 counts as throttled.
type Transport struct {
	Provider, Service string
	Operation         func(*http.Request) string
	Next              http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.Next
	if next == nil {
		next = http.DefaultTransport
	}
	op := req.Method
	if t.Operation != nil {
		op = t.Operation(req)
	}
	start := time.Now()
	resp, err := next.RoundTrip(req)
	result := ResultOK
	switch {
	case err != nil:
		result = ResultError
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		result = ResultThrottled
	case resp.StatusCode >= 400:
		result = ResultError
	}
	ObserveCloudCall(t.Provider, t.Service, op, start, result)
	return resp, err
}
