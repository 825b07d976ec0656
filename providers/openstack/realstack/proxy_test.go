package realstack_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// recorder stands between the provider and the real services: the provider's cloud.conf names
// it as Keystone, and the catalog Keystone answers is rewritten to name it for every service.
// It counts the mutating requests each service answered (the services' own answers, not the
// provider's counters) and injects the faults the real services cannot be asked for (an
// outage of Nova's reads). Every other byte goes through unchanged.
type recorder struct {
	url string
	srv *http.Server
	// services: the prefix in the recorder's URL space -> the service's base URL.
	services map[string]*url.URL

	mu     sync.Mutex
	writes int
	ops    map[string]int // "METHOD service" and "METHOD service resource" -> count
	faults map[string]int // service prefix -> HTTP status answered to its GETs (0: none)
}

// newRecorder serves on a loopback port; ports maps a service prefix ("keystone", "nova",
// "neutron", "octavia", ...) to the port it listens on at 127.0.0.1.
func newRecorder(t *testing.T, ports map[string]int) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{url: "http://" + ln.Addr().String(), services: map[string]*url.URL{}, ops: map[string]int{}, faults: map[string]int{}}
	for name, port := range ports {
		r.services[name] = &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	}
	r.srv = &http.Server{Handler: r}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// base is the recorder's URL for a service prefix.
func (r *recorder) base(name string) string { return r.url + "/" + name }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	name, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	target := r.services[name]
	if target == nil {
		http.Error(w, "no such service "+name, http.StatusNotFound)
		return
	}
	mutating := req.Method != http.MethodGet && req.Method != http.MethodHead
	r.mu.Lock()
	fault := r.faults[name]
	if mutating && name != "keystone" {
		r.writes++
		r.ops[req.Method+" "+name]++
		r.ops[req.Method+" "+name+" "+resource(rest)]++
	}
	r.mu.Unlock()
	if fault != 0 && !mutating {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fault)
		fmt.Fprintf(w, `{"computeFault": {"code": %d, "message": "injected by the test's recorder"}}`, fault)
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = "/"+rest, ""
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Accept-Encoding") // bodies are rewritten as text
		},
		ModifyResponse: r.rewrite,
	}
	proxy.ServeHTTP(w, req)
}

// resource is the kind of object a request path names: its last segment that is not an ID
// (lbaas/listeners/<id> is "listeners", v2.0/floatingips is "floatingips").
func resource(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if s := segs[i]; s != "" && !isID(s) {
			return s
		}
	}
	return ""
}

// isID: a UUID, or 32 hex digits (Keystone's IDs).
func isID(s string) bool {
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return false
	}
	for _, c := range h {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// rewrite names the recorder instead of each service in a response body (the catalog, links,
// pagination) and in a Location header.
func (r *recorder) rewrite(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	for name, u := range r.services {
		body = bytes.ReplaceAll(body, []byte(u.String()), []byte(r.base(name)))
		body = bytes.ReplaceAll(body, []byte(strings.Replace(u.String(), "/", `\/`, -1)), []byte(strings.Replace(r.base(name), "/", `\/`, -1)))
		if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, u.String()) {
			resp.Header.Set("Location", r.base(name)+strings.TrimPrefix(loc, u.String()))
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// Writes is the number of mutating requests the services (Keystone aside) were sent.
func (r *recorder) Writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes
}

// Ops is a copy of the counts by "METHOD service".
func (r *recorder) Ops() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.ops {
		out[k] = v
	}
	return out
}

// fail makes the service's reads answer status (0 ends the fault).
func (r *recorder) fail(name string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[name] = status
}
