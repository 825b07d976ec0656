package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/common/version"
)

// session holds one authenticated gophercloud ProviderClient: one Keystone token, reused by
// every call until Keystone answers 401, when gophercloud re-authenticates once and retries.
type session struct {
	cfg *Config

	mu    sync.Mutex
	cli   *clients
	login loginGate
}

type clients struct {
	compute, network, lb *gophercloud.ServiceClient
	// Barbican is looked up on first use only (checking a TLS reference, tls.go): its
	// discovery costs a read that most clusters never need.
	pc     *gophercloud.ProviderClient
	eo     gophercloud.EndpointOpts
	kmOnce sync.Once
	keymgr *gophercloud.ServiceClient // nil when the catalog has none
}

// keyManager is the Barbican client, or nil when the catalog has no key-manager endpoint.
func (c *clients) keyManager() *gophercloud.ServiceClient {
	c.kmOnce.Do(func() {
		if c.pc == nil {
			return
		}
		if km, err := gopenstack.NewKeyManagerV1(c.pc, c.eo); err == nil {
			c.keymgr = km
		}
	})
	return c.keymgr
}

func newSession(cfg *Config) *session { return &session{cfg: cfg} }

// get returns the clients, authenticating on first use (and again after a failed attempt).
func (s *session) get(ctx context.Context) (*clients, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli != nil {
		return s.cli, nil
	}
	if err := s.login.allow(time.Now()); err != nil {
		return nil, err
	}
	g := s.cfg.Global
	pc, err := gopenstack.NewClient(g.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("openstack: auth-url: %w", err)
	}
	// "ccm/VERSION", then what --user-agent adds (as upstream's flag), then gophercloud's own.
	pc.UserAgent.Prepend(append([]string{"ccm/" + version.Get().Version}, provider.UserAgent()...)...)
	tr, err := s.transport()
	if err != nil {
		return nil, err
	}
	// [Metadata] request-timeout bounds every call, as upstream (metadataopts.go).
	pc.HTTPClient = http.Client{Transport: tr, Timeout: s.cfg.apiTimeout()}
	pc.RetryBackoffFunc, pc.MaxBackoffRetries = throttleBackoff, uint(throttlePolicy.Retries) // 429s (throttle.go)
	err = gopenstack.Authenticate(ctx, pc, s.authOptions())
	s.login.done(err, time.Now())
	if err != nil {
		// gophercloud's errors carry the URL, status and response body, never the request's.
		return nil, fmt.Errorf("openstack: authenticating at %s: %w", g.AuthURL, err)
	}
	// gophercloud logs in again when a token expires (a 401 from a service): through the same
	// gate, so a password changed under a running ccm does not lock the account either.
	if reauth := pc.ReauthFunc; reauth != nil {
		pc.ReauthFunc = func(ctx context.Context) error {
			if err := s.login.allow(time.Now()); err != nil {
				return err
			}
			err := reauth(ctx)
			s.login.done(err, time.Now())
			return err
		}
	}
	avail, _ := endpointType(g.EndpointType) // validated
	eo := gophercloud.EndpointOpts{Region: g.Region, Availability: avail}
	c := &clients{pc: pc, eo: eo}
	if c.compute, err = gopenstack.NewComputeV2(pc, eo); err != nil {
		return nil, fmt.Errorf("openstack: compute endpoint in region %q: %w", g.Region, err)
	}
	if c.network, err = gopenstack.NewNetworkV2(pc, eo); err != nil {
		return nil, fmt.Errorf("openstack: network endpoint in region %q: %w", g.Region, err)
	}
	if s.cfg.LoadBalancer.Enabled {
		if c.lb, err = gopenstack.NewLoadBalancerV2(pc, eo); err != nil {
			return nil, fmt.Errorf("openstack: load-balancer endpoint in region %q: %w", g.Region, err)
		}
	}
	s.cli = c
	return c, nil
}

func (s *session) authOptions() gophercloud.AuthOptions {
	g := s.cfg.Global
	if g.Token != "" {
		// A token of the user: scoped as the file says (or as the token was), never renewed.
		o := gophercloud.AuthOptions{IdentityEndpoint: g.AuthURL, TokenID: g.Token}
		if g.TrustID != "" {
			o.Scope = &gophercloud.AuthScope{TrustID: g.TrustID}
		} else if g.TenantID != "" || g.TenantName != "" {
			o.Scope = &gophercloud.AuthScope{ProjectID: g.TenantID, ProjectName: g.TenantName}
			if g.TenantID == "" {
				o.Scope.DomainID, o.Scope.DomainName = or(g.TenantDomainID, g.DomainID), or(g.TenantDomainName, g.DomainName)
			}
		}
		return o
	}
	if g.TrustID != "" {
		// A trust: the trustee (trustee-id/-password, else the file's user) logs in and the token
		// is scoped to the trust, which carries the trustor's project and roles.
		o := gophercloud.AuthOptions{IdentityEndpoint: g.AuthURL, AllowReauth: true, Scope: &gophercloud.AuthScope{TrustID: g.TrustID}}
		switch {
		case g.TrusteeID != "":
			o.UserID, o.Password = g.TrusteeID, g.TrusteePassword
		case g.UserID != "":
			o.UserID, o.Password = g.UserID, g.Password
		default:
			o.Username, o.Password = g.Username, g.Password
			o.DomainID, o.DomainName = or(g.UserDomainID, g.DomainID), or(g.UserDomainName, g.DomainName)
			if o.DomainID == "" && o.DomainName == "" {
				o.DomainName = "Default"
			}
		}
		return o
	}
	o := gophercloud.AuthOptions{
		IdentityEndpoint: g.AuthURL,
		Username:         g.Username,
		UserID:           g.UserID,
		Password:         g.Password,
		DomainID:         or(g.UserDomainID, g.DomainID),
		DomainName:       or(g.UserDomainName, g.DomainName),
		AllowReauth:      true,

		ApplicationCredentialID:     g.ApplicationCredentialID,
		ApplicationCredentialName:   g.ApplicationCredentialName,
		ApplicationCredentialSecret: g.ApplicationCredentialSecret,
	}
	if g.ApplicationCredentialID == "" && g.ApplicationCredentialName == "" {
		// Password auth scoped to the project; an application credential carries its own scope.
		o.Scope = &gophercloud.AuthScope{ProjectID: g.TenantID, ProjectName: g.TenantName}
		if g.TenantID == "" {
			o.Scope.DomainID = or(g.TenantDomainID, g.DomainID)
			o.Scope.DomainName = or(g.TenantDomainName, g.DomainName)
			if o.Scope.DomainID == "" && o.Scope.DomainName == "" {
				o.Scope.DomainName = or(o.DomainName, "Default")
			}
		}
		if o.DomainID == "" && o.DomainName == "" && g.UserID == "" {
			o.DomainName = "Default"
		}
	}
	return o
}

// transport is TLS per config, counted per OpenStack operation in ccm_cloud_api_requests_total.
func (s *session) transport() (http.RoundTripper, error) {
	g := s.cfg.Global
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 32
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.cfg.insecureTLS()} //nolint:gosec // the user's explicit choice
	if g.CAFile != "" {
		pem, err := os.ReadFile(g.CAFile)
		if err != nil {
			return nil, fmt.Errorf("openstack: ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("openstack: ca-file %s holds no PEM certificate", g.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if g.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(g.CertFile, g.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("openstack: cert-file and key-file: %s", safeTLSError(err))
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	base.TLSClientConfig = tlsCfg
	return &metrics.Transport{Provider: ProviderName, Service: "openstack", Operation: operation, Next: base}, nil
}

// operation names a request by method and resource, without IDs, e.g. "GET servers".
func operation(r *http.Request) string {
	var parts []string
	for _, p := range strings.Split(strings.Trim(r.URL.Path, "/"), "/") {
		if p == "" || strings.ContainsAny(p, "0123456789") {
			continue // IDs (UUIDs) and versions (v2.0) say nothing about the operation
		}
		parts = append(parts, p)
	}
	if len(parts) > 3 {
		parts = parts[len(parts)-3:]
	}
	return r.Method + " " + strings.Join(parts, "/")
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// Keystone locks an account after a number of failed logins (PCI-DSS settings of many
// clouds). After a refused login (401 or 403 on the token request), ccm waits before the
// next attempt, doubling the wait on each refusal up to loginBackoffMax; a success resets
// it. Calls in between fail at once, saying when the next attempt is.
var (
	loginBackoffFirst = 10 * time.Second
	loginBackoffMax   = 5 * time.Minute
)

// loginGate is the login backoff; its methods are safe for concurrent use.
type loginGate struct {
	mu       sync.Mutex
	refusals int
	status   int
	next     time.Time
}

// allow returns nil if a login may be tried at now, else an error saying when.
func (g *loginGate) allow(now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.next) {
		return fmt.Errorf("openstack: Keystone refused the last login (HTTP %d, %d time(s) in a row); not trying again before %s (in %s), "+
			"so that the account is not locked: check the credentials in the cloud config",
			g.status, g.refusals, g.next.UTC().Format(time.RFC3339), g.next.Sub(now).Round(time.Second))
	}
	return nil
}

// done records the outcome of a login attempt: a refusal (401/403) starts or doubles the
// wait, a success resets it; other failures (an outage, a timeout) say nothing about the
// credentials and leave it as it is.
func (g *loginGate) done(err error, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch status := refusal(err); {
	case err == nil:
		g.refusals, g.next = 0, time.Time{}
	case status != 0:
		wait := loginBackoffFirst
		for i := 0; i < g.refusals && wait < loginBackoffMax; i++ {
			wait *= 2
		}
		g.refusals++
		g.status, g.next = status, now.Add(min(wait, loginBackoffMax))
	}
}

// refusal is 401 or 403 if err is Keystone refusing the credentials, else 0.
func refusal(err error) int {
	for _, e := range responseErrors(err) {
		if e.Actual == http.StatusUnauthorized || e.Actual == http.StatusForbidden {
			return e.Actual
		}
	}
	return 0
}
