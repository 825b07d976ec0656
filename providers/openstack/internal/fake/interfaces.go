package fake

import (
	"maps"
	"net/http"
	"strings"
)

// prefixHeader carries the interface's path prefix to the version documents, whose links must
// keep a client on the interface it came by.
const prefixHeader = "X-Fake-Interface-Prefix"

// byInterface serves the catalog's internal and admin endpoints: the same APIs under /internal
// and /admin, counted per interface, so a test sees which interface a client used.
func (c *Cloud) byInterface(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		iface := "public"
		r.Header.Del(prefixHeader)
		for _, p := range []string{"internal", "admin"} {
			if rest, ok := strings.CutPrefix(r.URL.Path, "/"+p+"/"); ok {
				iface = p
				r.URL.Path, r.URL.RawPath = "/"+rest, ""
				r.Header.Set(prefixHeader, "/"+p)
				break
			}
		}
		c.mu.Lock()
		c.userAgents[r.Header.Get("User-Agent")]++
		if !strings.HasPrefix(r.URL.Path, "/identity/") {
			c.interfaceCalls[iface]++
		}
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// InterfaceCalls counts the calls to the services (Keystone's token calls aside) per catalog
// interface: public, internal, admin.
func (c *Cloud) InterfaceCalls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.interfaceCalls {
		out[k] = v
	}
	return out
}

// TrustID is the Keystone trust the fake accepts as a token scope.
func (c *Cloud) TrustID() string { return c.opts.TrustID }

// UserAgents counts the calls per User-Agent header.
func (c *Cloud) UserAgents() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.userAgents)
}
