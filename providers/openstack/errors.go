package openstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/cloud-provider/api"
)

// What the LoadBalancer methods return becomes a Warning Event on the Service, readable by
// its tenant. gophercloud's errors carry the whole response body (and the URL); sanitize
// keeps the operation, the HTTP status and a short fault message, with the cloud's user
// names, project IDs, secrets and tokens taken out.

// maxFault bounds the cloud's own fault message kept in an error.
const maxFault = 160

var (
	// Keystone user and project IDs are 32 hex digits without dashes (Neutron and Octavia
	// resource IDs are dashed UUIDs and stay: they name the Service's own objects).
	keystoneIDRE = regexp.MustCompile(`\b[0-9a-fA-F]{32}\b`)
	// Fernet tokens start with gAAAA; a token of another format is found by the header name.
	tokenRE = regexp.MustCompile(`gAAAA[A-Za-z0-9_\-=]*|(?i)x-(auth|subject)-token[:=]\s*\S+`)
)

// responseErrors finds every gophercloud HTTP error in err's chain, through the wrappers
// gophercloud uses for re-authentication that do not implement Unwrap.
func responseErrors(err error) []gophercloud.ErrUnexpectedResponseCode {
	var out []gophercloud.ErrUnexpectedResponseCode
	var walk func(e error, depth int)
	walk = func(e error, depth int) {
		if e == nil || depth > 20 {
			return
		}
		switch v := e.(type) {
		case gophercloud.ErrUnexpectedResponseCode:
			out = append(out, v)
		case *gophercloud.ErrUnexpectedResponseCode:
			out = append(out, *v)
		case gophercloud.ErrUnableToReauthenticate:
			walk(v.ErrOriginal, depth+1)
			walk(v.ErrReauth, depth+1)
		case *gophercloud.ErrUnableToReauthenticate:
			walk(v.ErrOriginal, depth+1)
			walk(v.ErrReauth, depth+1)
		case gophercloud.ErrErrorAfterReauthentication:
			walk(v.ErrOriginal, depth+1)
		case *gophercloud.ErrErrorAfterReauthentication:
			walk(v.ErrOriginal, depth+1)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x, depth+1)
			}
		}
	}
	walk(err, 0)
	return out
}

// faultMessage reads the short message of an OpenStack error body: Octavia's faultstring,
// Neutron's NeutronError.message, Keystone's error.message, Nova's {"<kind>": {"message"}}.
func faultMessage(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	str := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &o) == nil {
			return o.Message
		}
		return ""
	}
	for _, k := range []string{"faultstring", "NeutronError", "error", "message"} {
		if raw, ok := m[k]; ok {
			if s := str(raw); s != "" {
				return s
			}
		}
	}
	for _, raw := range m { // Nova: {"itemNotFound": {"message": ..., "code": 404}}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &o) == nil && o.Message != "" {
			return o.Message
		}
	}
	return ""
}

// shortError is one HTTP error as an Event may show it.
func shortError(e gophercloud.ErrUnexpectedResponseCode) string {
	op := e.Method
	if u, err := url.Parse(e.URL); err == nil {
		op = operation(&http.Request{Method: e.Method, URL: u})
	}
	s := fmt.Sprintf("%s: HTTP %d", op, e.Actual)
	if f := strings.Join(strings.Fields(faultMessage(e.Body)), " "); f != "" {
		if len(f) > maxFault {
			f = f[:maxFault] + "..."
		}
		s += ": " + f
	}
	return s
}

// redact takes the config's secrets, its identities, Keystone IDs and tokens out of text. A
// secret (password, application credential secret, token) is taken out wherever it appears.
// An identity (user, project, application credential or trust name or ID) is taken out only
// where it stands alone: inside a name (kube_service_kubernetes_default_web, ccm:kubernetes, with the
// documented tenant-name = kubernetes and a cluster of that name) it is part of the name, and
// the message must still say which object it is about.
func (c *Config) redact(text string) string {
	text = tokenRE.ReplaceAllString(text, "<token>")
	g := c.Global
	for _, v := range []string{g.Password, g.ApplicationCredentialSecret, g.Token, g.TrusteePassword} {
		if len(strings.TrimSpace(v)) >= 3 { // shorter values would mangle ordinary words
			text = strings.ReplaceAll(text, v, "<redacted>")
		}
	}
	var ids []string
	for _, v := range []string{g.ApplicationCredentialID, g.ApplicationCredentialName, g.Username, g.UserID, g.TenantID, g.TenantName, g.TrusteeID, g.TrustID} {
		if len(strings.TrimSpace(v)) >= 3 {
			ids = append(ids, regexp.QuoteMeta(v))
		}
	}
	if len(ids) > 0 {
		alone := regexp.MustCompile(`(^|[^\w.:\-])(` + strings.Join(ids, "|") + `)($|[^\w.:\-])`)
		for range 2 { // a delimiter shared by two neighbours is matched once per pass
			text = alone.ReplaceAllString(text, "${1}<redacted>${3}")
		}
	}
	return keystoneIDRE.ReplaceAllString(text, "<id>")
}

// maxErr bounds an error's text as a Service's Event shows it.
const maxErr = 1000

// sanitize returns err as a Service's Events may show it (see the top of this file). A
// RetryError stays one, with the same delay.
func (c *Config) sanitize(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for _, e := range responseErrors(err) {
		text = strings.ReplaceAll(text, e.Error(), shortError(e))
	}
	text = c.redact(text)
	if len(text) > maxErr {
		text = text[:maxErr] + "..."
	}
	var retry *api.RetryError
	if errors.As(err, &retry) {
		return api.NewRetryError(text, retry.RetryAfter())
	}
	if text == err.Error() {
		return err
	}
	return &sanitized{text: text, err: err}
}

// sanitized is an error with a safe text that still unwraps to the original (errors.Is of
// ownership.ErrNotOwned, the status checks of the tests).
type sanitized struct {
	text string
	err  error
}

func (s *sanitized) Error() string { return s.text }
func (s *sanitized) Unwrap() error { return s.err }
