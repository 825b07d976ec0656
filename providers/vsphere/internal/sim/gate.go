package sim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ccm-project/ccm/common/simcontrol"
)

// adminHeader marks the simulator's own requests (setup, Terminate, Resources): they are
// neither counted nor refused, so the harness can read the cloud during an outage.
const adminHeader = "X-Vcsim-Admin"

// gate sits in front of vcsim's whole HTTP handler, SOAP (/sdk) and vAPI (/rest, /api) alike:
// it counts every call by operation and refuses calls during an outage or when the token
// bucket is empty.
type gate struct {
	next http.Handler

	mu        sync.Mutex
	outage    bool
	limiter   *rate.Limiter // nil: no throttling
	calls     map[string]int
	failed    int
	throttled int
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(adminHeader) != "" {
		g.next.ServeHTTP(w, r)
		return
	}
	op := operation(r)
	g.mu.Lock()
	g.calls[op]++
	outage, lim := g.outage, g.limiter
	var wait time.Duration
	if !outage && lim != nil {
		now := time.Now()
		if !lim.AllowN(now, 1) {
			wait = time.Hour
			if lim.Limit() > 0 {
				wait = time.Duration((1 - lim.TokensAt(now)) / float64(lim.Limit()) * float64(time.Second))
			}
			g.throttled++
		}
	}
	if outage {
		g.failed++
	}
	g.mu.Unlock()
	switch {
	case outage:
		// No Retry-After: nothing says when it ends.
		http.Error(w, "vCenter unavailable (simulated outage)", http.StatusServiceUnavailable)
	case wait > 0:
		// vCenter has no per-client API rate limit; an overloaded one (its reverse proxy) answers
		// 503, which is what this models, with a Retry-After of whole seconds.
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		http.Error(w, fmt.Sprintf("vCenter busy (simulated throttling); retry after %d s", secs), http.StatusServiceUnavailable)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// operation names a call: the SOAP method ("RetrievePropertiesEx"), else the vAPI method and
// path without IDs ("POST /rest/com/vmware/cis/tagging/tag?~action=list-tags-for-category").
func operation(r *http.Request) string {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/sdk") {
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if m := soapMethod(body); m != "" {
				return m
			}
		}
		return "SOAP"
	}
	var keep []string
	for _, p := range strings.Split(strings.Trim(r.URL.Path, "/"), "/") {
		if strings.HasPrefix(p, "id:") || strings.HasPrefix(p, "urn:") || len(p) > 30 {
			break
		}
		keep = append(keep, p)
	}
	op := r.Method + " /" + strings.Join(keep, "/")
	for _, k := range []string{"~action", "action"} {
		if a := r.URL.Query().Get(k); a != "" {
			op += "?" + k + "=" + a
		}
	}
	return op
}

// soapMethod is the name of the first element inside the envelope's Body.
func soapMethod(body []byte) string {
	d := xml.NewDecoder(bytes.NewReader(body))
	inBody := false
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			if inBody {
				return se.Name.Local
			}
			inBody = se.Name.Local == "Body"
		}
	}
}

// isWrite tells calls that change the inventory or the tags from reads, logins and the
// session's own views and filters.
func isWrite(op string) bool {
	if method, path, ok := strings.Cut(op, " "); ok { // vAPI
		if method == http.MethodGet || strings.Contains(path, "/session") {
			return false
		}
		_, action, _ := strings.Cut(path, "action=")
		return !strings.HasPrefix(action, "list") && !strings.HasPrefix(action, "get")
	}
	switch op {
	case "CreateContainerView", "DestroyView", "CreateFilter", "DestroyPropertyFilter",
		"CreatePropertyCollector", "DestroyPropertyCollector":
		return false
	}
	for _, p := range []string{"Create", "Destroy", "Delete", "Update", "Reconfig", "PowerOn", "PowerOff",
		"Register", "Unregister", "Rename", "Move", "Set", "Add", "Remove", "Attach", "Detach"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// SetOutage makes every call but the simulator's own answer 503 (on), or serve (off).
func (s *Sim) SetOutage(on bool) {
	s.gate.mu.Lock()
	s.gate.outage = on
	s.gate.mu.Unlock()
}

// SetThrottle puts a token bucket of burst tokens refilled at perSecond in front of every
// call; burst <= 0 removes it.
func (s *Sim) SetThrottle(burst int, perSecond float64) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if burst <= 0 {
		s.gate.limiter = nil
		return
	}
	s.gate.limiter = rate.NewLimiter(rate.Limit(perSecond), burst)
}

// Calls counts the calls served since start, refused ones included.
func (s *Sim) Calls() simcontrol.Calls {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	out := simcontrol.Calls{Failed: s.gate.failed, Throttled: s.gate.throttled, PerOp: map[string]int{}}
	for op, n := range s.gate.calls {
		out.PerOp[op] = n
		out.Total += n
		if isWrite(op) {
			out.Writes += n
		}
	}
	return out
}

// adminTransport marks the simulator's own requests for the gate.
type adminTransport struct{ next http.RoundTripper }

func (a adminTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(adminHeader, "1")
	return a.next.RoundTrip(r)
}
