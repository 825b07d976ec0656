package openstack

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ownership"
)

// Config is the upstream OpenStack CCM's cloud.conf, read strictly. See
// docs/providers/openstack.md.
type Config struct {
	Global struct {
		AuthURL          string `gcfg:"auth-url"`
		Username         string
		UserID           string `gcfg:"user-id"`
		Password         string
		TenantID         string `gcfg:"tenant-id"`
		TenantName       string `gcfg:"tenant-name"`
		DomainID         string `gcfg:"domain-id"`
		DomainName       string `gcfg:"domain-name"`
		UserDomainID     string `gcfg:"user-domain-id"`
		UserDomainName   string `gcfg:"user-domain-name"`
		TenantDomainID   string `gcfg:"tenant-domain-id"`
		TenantDomainName string `gcfg:"tenant-domain-name"`
		Region           string
		CAFile           string `gcfg:"ca-file"`
		// TLSInsecure is a string, as upstream's: only exactly "true" turns certificate
		// verification off (insecureTLS), any other value keeps it on and is reported.
		TLSInsecure                 string `gcfg:"tls-insecure"`
		ApplicationCredentialID     string `gcfg:"application-credential-id"`
		ApplicationCredentialName   string `gcfg:"application-credential-name"`
		ApplicationCredentialSecret string `gcfg:"application-credential-secret"`
		// EndpointType is the catalog interface of every service: public (default), internal or admin.
		EndpointType string `gcfg:"os-endpoint-type"`
		// CertFile and KeyFile: the TLS client certificate presented to Keystone and the services.
		CertFile string `gcfg:"cert-file"`
		KeyFile  string `gcfg:"key-file"`
		// Token: an existing Keystone token instead of a password (it cannot be renewed).
		Token string `gcfg:"token"`
		// TrustID scopes the token to a Keystone trust; the trustee logs in with trustee-id and
		// trustee-password when set, else with the user's own credentials.
		TrustID         string `gcfg:"trust-id"`
		TrusteeID       string `gcfg:"trustee-id"`
		TrusteePassword string `gcfg:"trustee-password"`
		// UseClouds fills the keys left empty from a clouds.yaml entry (clouds.go).
		UseClouds  bool   `gcfg:"use-clouds"`
		CloudsFile string `gcfg:"clouds-file"`
		Cloud      string `gcfg:"cloud"`

		upstreamGlobal // upstream keys ccm does not use or support (upstreamkeys.go)
	}
	LoadBalancer      LBConfig
	LoadBalancerClass map[string]*LBClass
	Networking        struct {
		IPv6SupportDisabled bool `gcfg:"ipv6-support-disabled"`

		upstreamNetworking
	}
	// Sections the upstream CCM (or its chart, which always renders them) has and ccm does
	// not use: accepted and reported, see upstreamkeys.go.
	Metadata     upstreamMetadata
	Route        upstreamRoute
	BlockStorage upstreamBlockStorage
	// KeyManager is the barbican-kms-plugin's section of the shared cloud.conf.
	KeyManager upstreamKeyManager

	// notices are the upstream keys in the file that ccm reads but does not use, one line
	// each, filled by Validate and logged once.
	notices []string
	// lineOf finds where a key is written (0: not written or not known), so that a notice
	// can name its line; set by New from the file before it is read.
	lineOf func(section, sub, key string) int
}

// LBConfig is [LoadBalancer].
type LBConfig struct {
	Enabled bool
	// NodeSelector narrows the members to Nodes with these labels (nodeselector.go).
	NodeSelector      string `gcfg:"node-selector"`
	SubnetID          string `gcfg:"subnet-id"`
	MemberSubnetID    string `gcfg:"member-subnet-id"`
	NetworkID         string `gcfg:"network-id"`
	FloatingNetworkID string `gcfg:"floating-network-id"`
	FloatingSubnetID  string `gcfg:"floating-subnet-id"`
	// FloatingSubnet and FloatingSubnetTags pick the floating IP's subnet by name pattern
	// and tags when FloatingSubnetID is unset (floatingsubnet.go).
	FloatingSubnet       string          `gcfg:"floating-subnet"`
	FloatingSubnetTags   string          `gcfg:"floating-subnet-tags"`
	LBMethod             string          `gcfg:"lb-method"`
	LBProvider           string          `gcfg:"lb-provider"`
	CreateMonitor        bool            `gcfg:"create-monitor"`
	MonitorDelay         config.Duration `gcfg:"monitor-delay"`
	MonitorTimeout       config.Duration `gcfg:"monitor-timeout"`
	MonitorMaxRetries    int             `gcfg:"monitor-max-retries"`
	ManageSecurityGroups bool            `gcfg:"manage-security-groups"`
	InternalLB           bool            `gcfg:"internal-lb"`
	// PendingRetry is how soon a Service whose load balancer is still PENDING_* is looked at
	// again; the worker is free meanwhile. Not an upstream key.
	PendingRetry config.Duration `gcfg:"pending-retry"`
	// AllowedResourceNamespaces and AllowedResourceIDs are the operator's exceptions to "a
	// Service may name only its own cloud objects" (ownership.Allow): Services in these
	// namespaces, or any Service naming one of these IDs (a load balancer, floating IP or
	// its address, network, subnet), may use an object ccm did not create for them. Not
	// upstream keys.
	AllowedResourceNamespaces string `gcfg:"allowed-resource-namespaces"`
	AllowedResourceIDs        string `gcfg:"allowed-resource-ids"`
	// FloatingIPsPerNamespace bounds the floating IPs ccm allocates for the Services of one
	// namespace (0: no bound): the project's quota is shared by every tenant. Not upstream.
	FloatingIPsPerNamespace int `gcfg:"floating-ips-per-namespace"`

	upstreamLB

	allow ownership.Allow // parsed by Validate
}

// LBClass is [LoadBalancerClass "name"], chosen by the loadbalancer.openstack.org/class annotation
// or by a Service whose spec.loadBalancerClass is that name.
type LBClass struct {
	FloatingNetworkID  string `gcfg:"floating-network-id"`
	FloatingSubnetID   string `gcfg:"floating-subnet-id"`
	FloatingSubnet     string `gcfg:"floating-subnet"`
	FloatingSubnetTags string `gcfg:"floating-subnet-tags"`
	SubnetID           string `gcfg:"subnet-id"`
	NetworkID          string `gcfg:"network-id"`
	MemberSubnetID     string `gcfg:"member-subnet-id"`
}

// tlsRef is [LoadBalancer] default-tls-container-ref ("" if unset).
func (c LBConfig) tlsRef() string {
	if c.DefaultTLSContainerRef == nil {
		return ""
	}
	return *c.DefaultTLSContainerRef
}

// containerStore is [LoadBalancer] container-store, barbican when unset (as upstream): with
// barbican, a TLS container reference is checked in Barbican before it is written; any other
// value (upstream documents external) skips the check.
func (c LBConfig) containerStore() string {
	if c.ContainerStore == nil || strings.TrimSpace(*c.ContainerStore) == "" {
		return "barbican"
	}
	return strings.ToLower(strings.TrimSpace(*c.ContainerStore))
}

// SetDefaults implements config.Defaulter.
func (c *Config) SetDefaults() {
	c.LoadBalancer.Enabled = true
	c.LoadBalancer.LBMethod = "ROUND_ROBIN"
	c.LoadBalancer.MonitorDelay = config.Duration{Duration: 5 * time.Second}
	c.LoadBalancer.MonitorTimeout = config.Duration{Duration: 3 * time.Second}
	c.LoadBalancer.MonitorMaxRetries = 1
	c.LoadBalancer.PendingRetry = config.Duration{Duration: 5 * time.Second}
	c.LoadBalancerClass = map[string]*LBClass{}
}

var lbMethods = map[string]bool{"ROUND_ROBIN": true, "LEAST_CONNECTIONS": true, "SOURCE_IP": true, "SOURCE_IP_PORT": true}

// Validate implements config.Validator. Messages never echo secret values.
func (c *Config) Validate() config.Problems {
	var ps config.Problems
	if c.Global.UseClouds {
		if err := c.readClouds(); err != nil {
			ps.Add("Global", "use-clouds", "%v", err)
		}
	}
	c.validateAuthURL(&ps)
	c.validateCredentials(&ps)
	c.validateTLS(&ps)
	c.LoadBalancer.allow = c.validateLoadBalancer(&ps)
	notices, ups := c.upstreamReport()
	ps = append(ps, ups...)
	notices = append(notices, c.boolNotices()...)
	notices = append(notices, c.ovnCreateOnlyNotices()...)
	notices = append(notices, c.ovnMethodNotices()...)
	if st := c.LoadBalancer.containerStore(); st != "barbican" && st != "external" {
		// As upstream, which only warns: the reference is then not checked in Barbican.
		notices = append(notices, fmt.Sprintf("[LoadBalancer] container-store: %q is neither barbican nor external; TLS container references are not checked in Barbican (as with external)", st))
	}
	c.notices = notices
	if len(ps) == 0 {
		for _, n := range notices {
			logNotice(n)
		}
	}
	return ps
}

// validateAuthURL checks [Global] auth-url: an http(s) URL, https unless the host is loopback.
func (c *Config) validateAuthURL(ps *config.Problems) {
	g := c.Global
	if g.AuthURL == "" {
		ps.Add("Global", "auth-url", "is required (the Keystone v3 URL, e.g. https://keystone.example.com:5000/v3)")
	} else if u, err := url.Parse(g.AuthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		ps.Add("Global", "auth-url", "must be an http(s) URL")
	} else if u.Scheme == "http" && !loopback(u.Hostname()) {
		ps.Add("Global", "auth-url", "is http://: the password or application credential secret would cross the network in clear text; use https:// "+
			"(plain http is accepted only for a loopback host such as 127.0.0.1, e.g. a local simulator)")
	}
}

// validateCredentials checks that [Global] holds one complete way to log in, and a project
// to scope the token to.
func (c *Config) validateCredentials(ps *config.Problems) {
	g := c.Global
	appCred := g.ApplicationCredentialID != "" || g.ApplicationCredentialName != ""
	trustee := g.TrustID != "" && g.TrusteeID != ""
	switch {
	case g.Token != "" || trustee:
		// a token, or the trustee's own login: no user or password of the file is needed
		if trustee && g.TrusteePassword == "" {
			ps.Add("Global", "trustee-password", "is required with trustee-id")
		}
	case appCred && g.ApplicationCredentialSecret == "":
		ps.Add("Global", "application-credential-secret", "is required with application-credential-id or -name")
	case g.ApplicationCredentialName != "" && g.ApplicationCredentialID == "" && g.Username == "" && g.UserID == "":
		ps.Add("Global", "application-credential-name", "needs username or user-id (or use application-credential-id)")
	case !appCred && g.Username == "" && g.UserID == "":
		ps.Add("Global", "username", "username or user-id is required (or an application credential)")
	case !appCred && g.Password == "":
		ps.Add("Global", "password", "is required with username/user-id (quote it if it contains ; or #)")
	}
	if (g.TrusteeID != "" || g.TrusteePassword != "") && g.TrustID == "" {
		ps.Add("Global", "trustee-id", "trustee-id and trustee-password are used only with trust-id")
	}
	if !appCred && g.TrustID == "" && g.TenantID == "" && g.TenantName == "" {
		ps.Add("Global", "tenant-id", "tenant-id or tenant-name is required to scope the token to a project")
	}
}

// validateTLS checks [Global] ca-file, os-endpoint-type and the client certificate.
func (c *Config) validateTLS(ps *config.Problems) {
	g := c.Global
	if g.CAFile != "" {
		if err := config.StatReferenced("[Global] ca-file", g.CAFile); err != nil {
			ps.Add("Global", "ca-file", "cannot read: %v", err)
		}
	}
	if _, ok := endpointType(g.EndpointType); !ok {
		ps.Add("Global", "os-endpoint-type", "must be public, internal or admin (the catalog interface every service is reached at), not %q", g.EndpointType)
	}
	switch {
	case (g.CertFile == "") != (g.KeyFile == ""):
		ps.Add("Global", "cert-file", "cert-file and key-file go together (the TLS client certificate and its key)")
	case g.CertFile != "":
		if _, err := tls.LoadX509KeyPair(g.CertFile, g.KeyFile); err != nil {
			ps.Add("Global", "cert-file", "cannot load the client certificate with key-file: %s", safeTLSError(err))
		}
	}
}

// validateLoadBalancer checks [LoadBalancer] and the classes' floating-subnet, and returns
// the parsed allowed-resource-* settings.
func (c *Config) validateLoadBalancer(ps *config.Problems) ownership.Allow {
	lb := c.LoadBalancer
	if !lbMethods[strings.ToUpper(lb.LBMethod)] {
		ps.Add("LoadBalancer", "lb-method", "must be ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT")
	}
	if lb.MonitorDelay.Duration < time.Second || lb.MonitorTimeout.Duration < time.Second {
		ps.Add("LoadBalancer", "monitor-delay", "monitor-delay and monitor-timeout must be at least 1s")
	} else if lb.MonitorTimeout.Duration > lb.MonitorDelay.Duration {
		ps.Add("LoadBalancer", "monitor-timeout", "must not exceed monitor-delay")
	}
	if lb.MonitorMaxRetries < 1 || lb.MonitorMaxRetries > 10 {
		ps.Add("LoadBalancer", "monitor-max-retries", "must be between 1 and 10")
	}
	if d := lb.MonitorMaxRetriesDown; d != nil && *d > 10 {
		ps.Add("LoadBalancer", "monitor-max-retries-down", "must be between 1 and 10 (Octavia refuses more; 0 is its default, 3)")
	}
	if lb.PendingRetry.Duration < 100*time.Millisecond {
		ps.Add("LoadBalancer", "pending-retry", "must be at least 100ms")
	}
	if _, err := subnetNameMatcher(lb.FloatingSubnet); lb.FloatingSubnet != "" && err != nil {
		ps.Add("LoadBalancer", "floating-subnet", "%v", err)
	}
	for name, cls := range c.LoadBalancerClass {
		if _, err := subnetNameMatcher(cls.FloatingSubnet); cls.FloatingSubnet != "" && err != nil {
			ps.AddSub("LoadBalancerClass", name, "floating-subnet", "%v", err)
		}
	}
	allow, err := ownership.ParseAllow(lb.AllowedResourceNamespaces, lb.AllowedResourceIDs)
	if err != nil {
		ps.Add("LoadBalancer", "allowed-resource-namespaces", "%v", err)
	}
	if lb.FloatingIPsPerNamespace < 0 {
		ps.Add("LoadBalancer", "floating-ips-per-namespace", "must be 0 (no bound) or more, not %d", lb.FloatingIPsPerNamespace)
	}
	return allow
}

// endpointType maps os-endpoint-type to the catalog interface; upstream passes the value to
// gophercloud as it is, so only its three names (any case, and the v2-era ...URL spellings
// Keystone still answers to) are accepted. "" is public.
func endpointType(v string) (gophercloud.Availability, bool) {
	switch strings.ToLower(v) {
	case "", "public", "publicurl":
		return gophercloud.AvailabilityPublic, true
	case "internal", "internalurl":
		return gophercloud.AvailabilityInternal, true
	case "admin", "adminurl":
		return gophercloud.AvailabilityAdmin, true
	}
	return "", false
}

// safeTLSError is what a config error may say of a failed key pair load: Go's errors name the
// file's problem, never its bytes, but a PEM parse error is kept to its first line.
func safeTLSError(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// loopback reports whether host (a URL's host name) is a loopback address or localhost.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serialCalls is [LoadBalancer] provider-requires-serial-api-calls: create load balancers bare
// and their children one call at a time.
func (c *Config) serialCalls() bool {
	return c.LoadBalancer.ProviderRequiresSerialAPICalls != nil && *c.LoadBalancer.ProviderRequiresSerialAPICalls
}
