package fake

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password struct {
				User struct {
					ID       string `json:"id"`
					Name     string `json:"name"`
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
			ApplicationCredential struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Secret string `json:"secret"`
			} `json:"application_credential"`
		} `json:"identity"`
	} `json:"auth"`
}

// createToken is Keystone v3 POST /v3/auth/tokens: password (user name or ID) or application
// credential (secret = the fake's password); the catalog points back at this server.
func (c *Cloud) createToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed auth request")
		return
	}
	id := req.Auth.Identity
	ok := false
	for _, m := range id.Methods {
		switch m {
		case "password":
			u := id.Password.User
			ok = (u.Name == c.opts.Username || u.ID == "uid-"+c.opts.Username) && u.Password == c.opts.Password
		case "application_credential":
			ok = id.ApplicationCredential.Secret == c.opts.Password
		}
	}
	if !ok {
		writeErr(w, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := "gAAAA" + hex.EncodeToString(b)
	c.tokens[tok] = true
	c.allTokens = append(c.allTokens, tok)
	c.issued++
	endpoint := func(typ, name, path string) map[string]any {
		return map[string]any{"type": typ, "name": name, "id": name, "endpoints": []map[string]any{
			{"id": name + "-public", "interface": "public", "region": c.opts.Region, "region_id": c.opts.Region, "url": c.url + path},
			// An endpoint of another region must never be picked.
			{"id": name + "-other", "interface": "public", "region": "OtherRegion", "region_id": "OtherRegion", "url": "http://127.0.0.1:9/" + name},
		}}
	}
	now := time.Now().UTC()
	w.Header().Set("X-Subject-Token", tok)
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods":    id.Methods,
		"issued_at":  now.Format(time.RFC3339),
		"expires_at": now.Add(time.Hour).Format(time.RFC3339),
		"user":       map[string]any{"id": "uid-" + c.opts.Username, "name": c.opts.Username, "domain": map[string]any{"id": "default", "name": c.opts.DomainName}},
		"project":    map[string]any{"id": "pid-" + c.opts.ProjectName, "name": c.opts.ProjectName, "domain": map[string]any{"id": "default", "name": c.opts.DomainName}},
		"catalog": []any{
			endpoint("identity", "keystone", "/identity/v3/"),
			endpoint("compute", "nova", "/compute/v2.1/"),
			endpoint("network", "neutron", "/network/"),
			endpoint("load-balancer", "octavia", "/load-balancer/"),
		},
	}})
}
