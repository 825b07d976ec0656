package openstack

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tls-insecure as upstream reads it (a string compared with "true"): verification is off for
// the exact value true only (gcfg unquotes and trims it first, as for upstream); every other
// value keeps it on and is reported once with its line, except false and the empty value
// charts render. A key without a value is an error, as it is upstream's (gcfg has no blank
// string).
func TestTLSInsecureAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		line     string
		insecure bool
		report   bool
	}{
		{"tls-insecure = true", true, false},
		{`tls-insecure = "true"`, true, false},
		{"tls-insecure =   true   ", true, false},
		{"tls-insecure = True", false, true},
		{"tls-insecure = TRUE", false, true},
		{"tls-insecure = 1", false, true},
		{"tls-insecure = t", false, true},
		{"tls-insecure = yes", false, true},
		{"tls-insecure = on", false, true},
		{`tls-insecure = " true"`, false, true},
		{"tls-insecure = false", false, false},
		{"tls-insecure = 0", false, true},
		{`tls-insecure = ""`, false, false},
		{"", false, false},
	} {
		logged := captureNotices(t)
		conf := upstreamBase + tc.line + "\n"
		c, err := New(strings.NewReader(conf))
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := c.cfg.insecureTLS(); got != tc.insecure {
			t.Errorf("%q: verification off = %v, want %v", tc.line, got, tc.insecure)
		}
		if !tc.report {
			if len(*logged) != 0 {
				t.Errorf("%q: reported %q", tc.line, *logged)
			}
			continue
		}
		if len(*logged) != 1 || !strings.HasPrefix((*logged)[0], "line 7: [Global] tls-insecure: ") || !strings.Contains((*logged)[0], "certificates are verified") {
			t.Errorf("%q: reported %q, want one line 7 report saying verification stays on", tc.line, *logged)
		}
		if n := c.cfg.Notices(); len(n) != 1 || n[0] != (*logged)[0] {
			t.Errorf("%q: Notices() %q, want the start-up line", tc.line, n)
		}
	}
	if _, err := New(strings.NewReader(upstreamBase + "tls-insecure\n")); err == nil || !strings.Contains(err.Error(), "line 7: [Global] tls-insecure") {
		t.Errorf("tls-insecure without a value: %v, want an error naming line 7", err)
	}
}

// Through a TLS server whose certificate nothing trusts: tls-insecure = True (which
// strconv.ParseBool would take) is refused at the handshake as upstream refuses it; true
// connects.
func TestTLSInsecureTrueOnlyConnects(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	get := func(value string) error {
		c, err := New(strings.NewReader(upstreamBase + "tls-insecure = " + value + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := c.sess.transport()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	captureNotices(t)
	if err := get("true"); err != nil {
		t.Fatalf("tls-insecure = true: %v", err)
	}
	for _, v := range []string{"True", "1", "yes", "false"} {
		if err := get(v); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("tls-insecure = %s: %v, want the untrusted certificate refused", v, err)
		}
	}
}
