package fake

import (
	"fmt"
	"net/http"
	"strings"
)

// A minimal Barbican (key-manager v1): the TLS containers and secrets that TERMINATED_HTTPS
// listeners name. Octavia refuses a default_tls_container_ref it cannot read from Barbican,
// and ccm (with container-store = barbican, as upstream) checks the reference here before it
// writes it. Only reads are served: tests add certificates with AddTLSContainer/AddTLSSecret.

// AddTLSContainer stores a certificate container named name and returns its reference, as
// Barbican gives it (https://<key-manager>/v1/containers/<uuid>).
func (c *Cloud) AddTLSContainer(name string) string { return c.addTLS("containers", name) }

// AddTLSSecret stores a PKCS12 secret named name and returns its reference.
func (c *Cloud) AddTLSSecret(name string) string { return c.addTLS("secrets", name) }

func (c *Cloud) addTLS(kind, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID(strings.TrimSuffix(kind, "s"))
	c.tls[kind+"/"+id] = name
	return fmt.Sprintf("%s/key-manager/v1/%s/%s", c.url, kind, id)
}

// tlsKnown: ref names a container or secret this Barbican holds. Callers hold c.mu.
func (c *Cloud) tlsKnown(ref string) bool {
	parts := strings.Split(ref, "/")
	if len(parts) < 2 {
		return false
	}
	_, ok := c.tls[parts[len(parts)-2]+"/"+parts[len(parts)-1]]
	return ok
}

func (c *Cloud) barbicanRoutes(m *http.ServeMux) {
	for _, kind := range []string{"containers", "secrets"} {
		op := "barbican.GetContainer"
		if kind == "secrets" {
			op = "barbican.GetSecret"
		}
		m.HandleFunc("GET /key-manager/v1/"+kind+"/{id}", c.op(op, func(w http.ResponseWriter, r *http.Request) {
			name, ok := c.tls[kind+"/"+r.PathValue("id")]
			if !ok {
				writeErr(w, http.StatusNotFound, "Not Found. Sorry but your "+strings.TrimSuffix(kind, "s")+" is in another castle.")
				return
			}
			ref := c.url + r.URL.Path
			body := map[string]any{"name": name, "status": "ACTIVE", "created": "2026-01-01T00:00:00", "updated": "2026-01-01T00:00:00"}
			if kind == "containers" {
				body["container_ref"], body["type"] = ref, "certificate"
				body["secret_refs"] = []any{}
			} else {
				body["secret_ref"], body["secret_type"] = ref, "opaque"
			}
			writeJSON(w, http.StatusOK, body)
		}))
	}
}
