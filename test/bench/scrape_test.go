package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// httpGet is a getFunc against a plain HTTP server (the ccm's is HTTPS with a token).
func httpGet(base string) getFunc {
	return func(path, token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
}

const goodMetrics = `# HELP ccm_cloud_api_requests_total [ALPHA] Cloud API calls.
# TYPE ccm_cloud_api_requests_total counter
ccm_cloud_api_requests_total{operation="Create",provider="dummy",result="ok",service="store"} 7
ccm_cloud_api_requests_total{operation="Get",provider="dummy",result="ok",service="store"} 100
ccm_cloud_api_requests_total{operation="Update",provider="dummy",result="ok",service="store"} 3
ccm_cloud_api_requests_total{operation="Update",provider="dummy",result="error",service="a b"} 2 1700000000000
process_start_time_seconds 1.7e+09
`

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Query().Get("case") {
		case "":
			io.WriteString(w, goodMetrics)
		case "html":
			io.WriteString(w, "<html><body>login</body></html>\n")
		case "empty":
		case "garbage-value":
			io.WriteString(w, "ccm_cloud_api_requests_total{operation=\"Update\"} seven\n")
		case "500":
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()

	m, err := scrape(httpGet(srv.URL), "tok")
	if err != nil {
		t.Fatalf("a good scrape failed: %v", err)
	}
	if w := m.sum(`ccm_cloud_api_requests_total{operation="Update",provider="dummy"`); w != 5 {
		t.Errorf("Update calls = %v, want 5", w)
	}
	if all := m.sum(`ccm_cloud_api_requests_total{`); all != 112 {
		t.Errorf("all calls = %v, want 112", all)
	}
	if u := m.sumWith("ccm_cloud_api_requests_total", `operation="Update"`, `provider="dummy"`); u != 5 {
		t.Errorf("sumWith Update = %v, want 5", u)
	}
	if g := m.sumWith("ccm_cloud_api_requests_total", `service="store"`, `operation="Get"`); g != 100 {
		t.Errorf("sumWith Get = %v, want 100", g)
	}
	if a := m.sumWith("ccm_cloud_api_requests_total", `vice="store"`); a != 0 {
		t.Errorf("sumWith of a label's tail = %v, want 0", a)
	}
	if d := m.sum(`ccm_cloud_api_requests_total{operation="Delete"`); d != 0 {
		t.Errorf("a series with no sample sums to %v, want 0", d)
	}

	for name, c := range map[string]struct {
		get  getFunc
		tok  string
		want string
	}{
		"unauthorised": {httpGet(srv.URL), "wrong", "HTTP 401"},
		"server error": {httpGet(srv.URL + "/x?case=500&"), "tok", "HTTP 500"},
		"HTML page":    {httpGet(srv.URL + "/x?case=html&"), "tok", "not a metric sample"},
		"empty answer": {httpGet(srv.URL + "/x?case=empty&"), "tok", "no metric sample"},
		"not a number": {httpGet(srv.URL + "/x?case=garbage-value&"), "tok", `value "seven" is not a number`},
		"refused":      {httpGet(closedURL()), "tok", "connection refused"},
	} {
		m, err := scrape(c.get, c.tok)
		if err == nil {
			t.Errorf("%s: scrape succeeded (%d samples), want an error", name, len(m.samples))
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/metrics") {
			t.Errorf("%s: error %q does not say %q about /metrics", name, err, c.want)
		}
	}
}

// closedURL is the address of a server that no longer listens.
func closedURL() string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}
