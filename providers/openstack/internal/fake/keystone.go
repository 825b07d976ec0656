package fake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"time"
)

// Keystone v3 as the provider meets it. The fake has one domain (ID "default", named
// Options.DomainName) with two projects: Options.ProjectName (ID "pid-<name>"), which holds
// every resource, and "other" (ID "pid-other"), where the user also has a role. A token is
// scoped as asked (a project by ID, or by name within a domain; a domain; or, for an
// application credential, its own project) and is valid for Options.TokenTTL: an expired or
// unknown token gets a 401 from every service, and a token not scoped to the resources'
// project a 403.

type token struct {
	projectID string // "" for a domain-scoped or unscoped token
	expires   time.Time
}

// OtherProjectName is the second project of the fake: the user may scope a token to it, and
// such a token acts on nothing of the first.
const OtherProjectName = "other"

const defaultDomainID = "default"

type domainRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password struct {
				User struct {
					ID       string    `json:"id"`
					Name     string    `json:"name"`
					Password string    `json:"password"`
					Domain   domainRef `json:"domain"`
				} `json:"user"`
			} `json:"password"`
			ApplicationCredential struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Secret string `json:"secret"`
				User   struct {
					ID     string    `json:"id"`
					Name   string    `json:"name"`
					Domain domainRef `json:"domain"`
				} `json:"user"`
			} `json:"application_credential"`
			Token struct {
				ID string `json:"id"`
			} `json:"token"`
		} `json:"identity"`
		Scope *struct {
			Trust *struct {
				ID string `json:"id"`
			} `json:"OS-TRUST:trust"`
			Project *struct {
				ID     string    `json:"id"`
				Name   string    `json:"name"`
				Domain domainRef `json:"domain"`
			} `json:"project"`
			Domain *domainRef `json:"domain"`
		} `json:"scope"`
	} `json:"auth"`
}

func (c *Cloud) projectID() string { return "pid-" + c.opts.ProjectName }

func (c *Cloud) userID() string { return "uid-" + c.opts.Username }

// isDomain: d names the fake's domain (by ID or name).
func (c *Cloud) isDomain(d domainRef) bool {
	return (d.ID != "" && d.ID == defaultDomainID) || (d.ID == "" && d.Name != "" && d.Name == c.opts.DomainName)
}

// isUser: the user named by ID, or by name within its domain.
func (c *Cloud) isUser(id, name string, d domainRef) bool {
	if id != "" {
		return id == c.userID()
	}
	return name == c.opts.Username && c.isDomain(d)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// project resolves a project scope to its ID; "" if there is no such project.
func (c *Cloud) project(id, name string, d domainRef) string {
	for _, p := range []string{c.opts.ProjectName, OtherProjectName} {
		if (id != "" && id == "pid-"+p) || (id == "" && name == p && c.isDomain(d)) {
			return "pid-" + p
		}
	}
	return ""
}

// createToken is Keystone v3 POST /v3/auth/tokens: password (user by ID, or by name with its
// domain) or application credential (by ID, or by name with its user, and its secret); the
// catalog points back at this server.
func (c *Cloud) createToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed auth request")
		return
	}
	id := req.Auth.Identity
	ok, appCred := false, false
	for _, m := range id.Methods {
		switch m {
		case "password":
			u := id.Password.User
			ok = c.isUser(u.ID, u.Name, u.Domain) && equal(u.Password, c.opts.Password)
		case "application_credential":
			a := id.ApplicationCredential
			named := a.ID == c.opts.AppCredID || (a.ID == "" && a.Name == c.opts.AppCredName && c.isUser(a.User.ID, a.User.Name, a.User.Domain))
			ok, appCred = named && equal(a.Secret, c.opts.AppCredSecret), true
		case "token": // a token issued before and still valid, e.g. the one a cloud.conf names
			t := c.tokens[id.Token.ID]
			ok = t != nil && time.Now().Before(t.expires)
		}
	}
	if !ok {
		writeErr(w, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	}
	tok := &token{expires: time.Now().Add(c.opts.TokenTTL)}
	var scope map[string]any
	switch sc := req.Auth.Scope; {
	case appCred:
		if sc != nil {
			writeErr(w, http.StatusUnauthorized, "An application credential carries its own scope; a scope may not be requested")
			return
		}
		tok.projectID = c.projectID() // the credential's project
	case sc != nil && sc.Trust != nil:
		// The fake knows one trust (TrustID): the user trusted with the project's roles.
		if sc.Trust.ID != c.opts.TrustID {
			writeErr(w, http.StatusNotFound, "Could not find trust: "+sc.Trust.ID)
			return
		}
		tok.projectID = c.projectID()
	case sc != nil && sc.Project != nil:
		if tok.projectID = c.project(sc.Project.ID, sc.Project.Name, sc.Project.Domain); tok.projectID == "" {
			writeErr(w, http.StatusUnauthorized, "The request you have made requires authentication: no such project in the scope")
			return
		}
	case sc != nil && sc.Domain != nil:
		if !c.isDomain(*sc.Domain) {
			writeErr(w, http.StatusUnauthorized, "The request you have made requires authentication: no such domain in the scope")
			return
		}
		scope = map[string]any{"domain": map[string]any{"id": defaultDomainID, "name": c.opts.DomainName}}
	}
	if tok.projectID != "" {
		name := c.opts.ProjectName
		if tok.projectID == "pid-"+OtherProjectName {
			name = OtherProjectName
		}
		scope = map[string]any{"project": map[string]any{"id": tok.projectID, "name": name, "domain": map[string]any{"id": defaultDomainID, "name": c.opts.DomainName}}}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	secret := "gAAAA" + hex.EncodeToString(b)
	c.tokens[secret] = tok
	c.allTokens = append(c.allTokens, secret)
	c.issued++
	endpoint := func(typ, name, path string) map[string]any {
		return map[string]any{"type": typ, "name": name, "id": name, "endpoints": []map[string]any{
			{"id": name + "-public", "interface": "public", "region": c.opts.Region, "region_id": c.opts.Region, "url": c.url + path},
			// The other interfaces reach the same APIs under their own prefix (interfaces.go).
			{"id": name + "-internal", "interface": "internal", "region": c.opts.Region, "region_id": c.opts.Region, "url": c.url + "/internal" + path},
			{"id": name + "-admin", "interface": "admin", "region": c.opts.Region, "region_id": c.opts.Region, "url": c.url + "/admin" + path},
			// An endpoint of another region must never be picked.
			{"id": name + "-other", "interface": "public", "region": "OtherRegion", "region_id": "OtherRegion", "url": "http://127.0.0.1:9/" + name},
		}}
	}
	now := time.Now().UTC()
	body := map[string]any{
		"methods":    id.Methods,
		"issued_at":  now.Format(time.RFC3339),
		"expires_at": tok.expires.UTC().Format(time.RFC3339),
		"user":       map[string]any{"id": c.userID(), "name": c.opts.Username, "domain": map[string]any{"id": defaultDomainID, "name": c.opts.DomainName}},
	}
	for k, v := range scope {
		body[k] = v
	}
	if scope != nil { // Keystone returns a catalog with scoped tokens only
		body["catalog"] = []any{
			endpoint("identity", "keystone", "/identity/v3/"),
			endpoint("compute", "nova", "/compute/v2.1/"),
			endpoint("network", "neutron", "/network/"),
			endpoint("load-balancer", "octavia", "/load-balancer/"),
		}
		if !c.opts.NoBarbican {
			body["catalog"] = append(body["catalog"].([]any), endpoint("key-manager", "barbican", "/key-manager/"))
		}
	}
	w.Header().Set("X-Subject-Token", secret)
	writeJSON(w, http.StatusCreated, map[string]any{"token": body})
}

// AppCredential returns the application credential the fake accepts: ID, name and secret.
func (c *Cloud) AppCredential() (id, name, secret string) {
	return c.opts.AppCredID, c.opts.AppCredName, c.opts.AppCredSecret
}
