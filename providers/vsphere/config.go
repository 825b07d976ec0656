package vsphere

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ippool"
)

// Config is vsphere.conf, read from INI (upstream's format) or YAML. Key names follow the
// upstream vSphere CCM so an existing file keeps working; unknown keys are errors.
type Config struct {
	Global struct {
		User            string
		Password        string
		Server          string
		Port            string
		InsecureFlag    bool   `gcfg:"insecure-flag"`
		Datacenters     string // comma-separated; empty = every datacenter of the vCenter
		CAFile          string `gcfg:"ca-file"`
		Thumbprint      string
		SecretName      string `gcfg:"secret-name"`
		SecretNamespace string `gcfg:"secret-namespace"`
		// IPFamily is the order of address families reported for Nodes: ipv4, ipv6 or both.
		IPFamily string `gcfg:"ip-family"`
		// CacheTTL is how long one inventory read answers node look-ups.
		CacheTTL config.Duration `gcfg:"cache-ttl"`
		// SOAPRoundtripCount is how often a call is tried on a temporary network error.
		SOAPRoundtripCount int `gcfg:"soap-roundtrip-count"`
	}
	VirtualCenter map[string]*VirtualCenterConfig
	Labels        struct {
		Region string // tag category whose tag names the region
		Zone   string // tag category whose tag names the zone
	}
	Nodes struct {
		InternalNetworkSubnetCIDR        string `gcfg:"internal-network-subnet-cidr"`
		ExternalNetworkSubnetCIDR        string `gcfg:"external-network-subnet-cidr"`
		InternalVMNetworkName            string `gcfg:"internal-vm-network-name"`
		ExternalVMNetworkName            string `gcfg:"external-vm-network-name"`
		ExcludeInternalNetworkSubnetCIDR string `gcfg:"exclude-internal-network-subnet-cidr"`
		ExcludeExternalNetworkSubnetCIDR string `gcfg:"exclude-external-network-subnet-cidr"`
	}
	Pool map[string]*PoolConfig // [Pool "name"]: load balancer addresses

	// lineOf finds where a key is written (0: not written, or not known), so that a problem
	// about two keys can name the line of the other one too. Set by readConfig.
	lineOf func(section, sub, key string) int
}

// VirtualCenterConfig is one [VirtualCenter "host"] section; empty keys inherit [Global].
type VirtualCenterConfig struct {
	User            string
	Password        string
	Port            string
	InsecureFlag    *bool  `gcfg:"insecure-flag"`
	Datacenters     string // comma-separated
	CAFile          string `gcfg:"ca-file"`
	Thumbprint      string
	SecretName      string `gcfg:"secret-name"`
	SecretNamespace string `gcfg:"secret-namespace"`
	IPFamily        string `gcfg:"ip-family"`
	// SOAPRoundtripCount overrides [Global] soap-roundtrip-count for this vCenter.
	SOAPRoundtripCount int `gcfg:"soap-roundtrip-count"`
}

// PoolConfig is a pool of load balancer addresses, written as the dummy provider's [Pool].
type PoolConfig = ippool.Config

// SetDefaults implements config.Defaulter.
func (c *Config) SetDefaults() {
	c.Global.Port = "443"
	c.Global.CacheTTL = config.Duration{Duration: 30 * time.Second}
}

// vcenter is one vCenter with every key resolved (section, then [Global]).
type vcenter struct {
	Server, Port, User, Password string
	Insecure                     bool
	CAFile, Thumbprint           string
	Datacenters                  []string
	SecretName, SecretNamespace  string
	IPFamilies                   []string
	Tries                        int
}

// vcenters lists the configured vCenters: the [VirtualCenter] sections, or [Global] server.
func (c *Config) vcenters() []vcenter {
	g := c.Global
	if len(c.VirtualCenter) == 0 && g.Server != "" {
		return []vcenter{{Server: g.Server, Port: g.Port, User: g.User, Password: g.Password, Insecure: g.InsecureFlag,
			CAFile: g.CAFile, Thumbprint: g.Thumbprint, Datacenters: list(g.Datacenters),
			SecretName: g.SecretName, SecretNamespace: g.SecretNamespace, IPFamilies: families(g.IPFamily), Tries: tries(g.SOAPRoundtripCount)}}
	}
	var out []vcenter
	for _, host := range sortedKeys(c.VirtualCenter) {
		s := c.VirtualCenter[host]
		v := vcenter{Server: host, Port: or(s.Port, g.Port), User: or(s.User, g.User), Password: or(s.Password, g.Password),
			Insecure: g.InsecureFlag, CAFile: or(s.CAFile, g.CAFile), Thumbprint: s.Thumbprint,
			Datacenters: list(or(s.Datacenters, g.Datacenters)), SecretName: or(s.SecretName, g.SecretName),
			SecretNamespace: or(s.SecretNamespace, g.SecretNamespace), IPFamilies: families(or(s.IPFamily, g.IPFamily)), Tries: tries(g.SOAPRoundtripCount)}
		if s.SOAPRoundtripCount > 0 {
			v.Tries = tries(s.SOAPRoundtripCount)
		}
		if s.InsecureFlag != nil {
			v.Insecure = *s.InsecureFlag
		}
		out = append(out, v)
	}
	return out
}

// Validate implements config.Validator.
func (c *Config) Validate() config.Problems {
	var ps config.Problems
	g := c.Global
	if g.Server == "" && len(c.VirtualCenter) == 0 {
		ps.Add("Global", "server", "no vCenter configured: set [Global] server or add a [VirtualCenter \"host\"] section")
	}
	if g.Server != "" && len(c.VirtualCenter) > 0 {
		ps.Add("Global", "server", "set either [Global] server or [VirtualCenter] sections, not both")
	}
	checkPort := func(sec, sub, port string) {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			ps.AddSub(sec, sub, "port", "%q is not a TCP port", port)
		}
	}
	checkPort("Global", "", g.Port)
	for host, s := range c.VirtualCenter {
		if s.Port != "" {
			checkPort("VirtualCenter", host, s.Port)
		}
		checkFamilies(&ps, "VirtualCenter", host, s.IPFamily)
		if (s.SecretName == "") != (s.SecretNamespace == "") && g.SecretName == "" {
			ps.AddSub("VirtualCenter", host, "secret-name", "secret-name and secret-namespace go together")
		}
		if s.CAFile != "" {
			if _, err := os.Stat(s.CAFile); err != nil {
				ps.AddSub("VirtualCenter", host, "ca-file", "cannot read: %v", err)
			}
		}
	}
	checkFamilies(&ps, "Global", "", g.IPFamily)
	if (g.SecretName == "") != (g.SecretNamespace == "") {
		ps.Add("Global", "secret-name", "secret-name and secret-namespace go together")
	}
	if g.CAFile != "" {
		if _, err := os.Stat(g.CAFile); err != nil {
			ps.Add("Global", "ca-file", "cannot read: %v", err)
		}
	}
	c.checkVerification(&ps)
	for _, v := range c.vcenters() {
		sub, sec := v.Server, "VirtualCenter"
		if len(c.VirtualCenter) == 0 {
			sub, sec = "", "Global"
		}
		if v.SecretName == "" && (v.User == "" || v.Password == "") {
			ps.AddSub(sec, sub, "user", "no credentials for vCenter %s: set user and password (quote a password holding ; or #), or secret-name and secret-namespace", v.Server)
		}
	}
	if g.SOAPRoundtripCount < 0 || g.SOAPRoundtripCount > 10 {
		ps.Add("Global", "soap-roundtrip-count", "must be between 0 and 10")
	}
	if c.Global.CacheTTL.Duration < time.Second || c.Global.CacheTTL.Duration > 10*time.Minute {
		ps.Add("Global", "cache-ttl", "must be between 1s and 10m")
	}
	n := c.Nodes
	for _, k := range []struct{ key, val string }{
		{"internal-network-subnet-cidr", n.InternalNetworkSubnetCIDR},
		{"external-network-subnet-cidr", n.ExternalNetworkSubnetCIDR},
		{"exclude-internal-network-subnet-cidr", n.ExcludeInternalNetworkSubnetCIDR},
		{"exclude-external-network-subnet-cidr", n.ExcludeExternalNetworkSubnetCIDR},
	} {
		if _, err := cidrs(k.val); err != nil {
			ps.Add("Nodes", k.key, "%v", err)
		}
	}
	for name, p := range c.Pool {
		if len(p.CIDR) == 0 && len(p.Range) == 0 {
			ps.AddSub("Pool", name, "cidr", "a pool needs at least one cidr or range")
		}
		if _, err := ippool.New(name, p); err != nil {
			ps.AddSub("Pool", name, err.Key, "%s", err.Msg)
		}
	}
	return ps
}

func checkFamilies(ps *config.Problems, sec, sub, v string) {
	for _, f := range list(v) {
		if f != "ipv4" && f != "ipv6" {
			ps.AddSub(sec, sub, "ip-family", "%q is not ipv4 or ipv6 (write ipv4, ipv6, \"ipv4,ipv6\" or \"ipv6,ipv4\")", f)
		}
	}
}

// cidrs parses a comma-separated list of CIDRs.
func cidrs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range list(s) {
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/16 or fd00::/64", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func tries(n int) int { return max(n, 1) }

func families(s string) []string {
	if l := list(strings.ToLower(s)); len(l) > 0 {
		return l
	}
	return []string{"ipv4"}
}

// list splits a comma-separated value, trimming blanks.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkVerification refuses ca-file or thumbprint together with insecure-flag = true for one
// vCenter. govmomi (and so the upstream CCM) skips verification altogether when insecure-flag
// is on, so the CA bundle or the pinned thumbprint would be silently ignored and any
// certificate accepted: the operator asked for both, and only one can hold.
func (c *Config) checkVerification(ps *config.Problems) {
	type place struct{ sec, sub string }
	type setting struct {
		at       place
		key, val string
	}
	where := func(p place, key string) string {
		s := "[" + p.sec
		if p.sub != "" {
			s += fmt.Sprintf(" %q", p.sub)
		}
		s += "] " + key
		if c.lineOf != nil {
			if n := c.lineOf(p.sec, p.sub, key); n > 0 {
				s += fmt.Sprintf(" (line %d)", n)
			}
		}
		return s
	}
	seen := map[setting]bool{}
	check := func(insecureAt place, settings ...setting) {
		for _, k := range settings {
			if k.val == "" || seen[k] {
				continue
			}
			seen[k] = true
			ps.AddSub(k.at.sec, k.at.sub, k.key, "is set together with %s = true, which turns certificate verification off, so %s would be ignored and any certificate accepted: "+
				"remove insecure-flag (or set it to false) to verify vCenter's certificate with %s", where(insecureAt, "insecure-flag"), k.key, k.key)
		}
	}
	g := c.Global
	global := place{"Global", ""}
	if len(c.VirtualCenter) == 0 {
		if g.InsecureFlag {
			check(global, setting{global, "ca-file", g.CAFile}, setting{global, "thumbprint", g.Thumbprint})
		}
		return
	}
	for _, host := range sortedKeys(c.VirtualCenter) {
		s := c.VirtualCenter[host]
		vc := place{"VirtualCenter", host}
		insecure, insecureAt := g.InsecureFlag, global
		if s.InsecureFlag != nil {
			insecure, insecureAt = *s.InsecureFlag, vc
		}
		if !insecure {
			continue
		}
		ca := setting{vc, "ca-file", s.CAFile}
		if s.CAFile == "" {
			ca = setting{global, "ca-file", g.CAFile}
		}
		check(insecureAt, ca, setting{vc, "thumbprint", s.Thumbprint})
	}
}
