package vsphere

import (
	"fmt"
	"net/netip"
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
		// SecretsDirectory holds credentials files named as a Secret's keys; it replaces the
		// [Global] Secret as the fallback source (credentials.go).
		SecretsDirectory string `gcfg:"secrets-directory"`
		// IPFamily is the order of address families reported for Nodes: ipv4, ipv6 or both.
		IPFamily string `gcfg:"ip-family"`
		// CacheTTL is how long one inventory read answers node look-ups.
		CacheTTL config.Duration `gcfg:"cache-ttl"`
		// SOAPRoundtripCount is how often a call is tried on a temporary network error.
		SOAPRoundtripCount int `gcfg:"soap-roundtrip-count"`

		upstreamGlobal // upstream keys ccm does not use (upstreamkeys.go)
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

	// Sections the upstream CCM reads (NSX-T load balancers and routes) or tolerates (the
	// in-tree provider's), which ccm accepts and reports: see upstreamkeys.go.
	LoadBalancer      upstreamLB
	LoadBalancerClass map[string]*upstreamLBClass
	NSXT              upstreamNSXT
	Route             upstreamRoute
	Network           upstreamNetwork
	Disk              upstreamDisk
	Workspace         upstreamWorkspace

	// notices are the start-up reports of this config (upstream keys and environment
	// variables read but not used, combinations that mean something else than they say), one
	// line each, filled by Validate and logged once.
	notices []string
	// yaml is true for the YAML form (notices then name keys as YAML does).
	yaml bool
	// envDone: the VSPHERE_* environment is applied once (Validate may run twice).
	envDone bool
	// globalSecretInFile: the file itself (before the environment) gives [Global] a credentials
	// source, so [VirtualCenter] sections do not inherit [Global] user and password (upstream).
	globalSecretInFile bool

	// lineOf finds where a key is written (0: not written, or not known), so that a problem
	// about two keys can name the line of the other one too. Set by readConfig.
	lineOf func(section, sub, key string) int
}

// VirtualCenterConfig is one [VirtualCenter "name"] section; empty keys inherit [Global]. The
// name is the vCenter's host unless server says otherwise (upstream's "tenant ref").
type VirtualCenterConfig struct {
	Server          string
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

	upstreamVC

	// env is the <id> of VSPHERE_VCENTER_<id> for a vCenter defined by the environment (env.go).
	env string
}

// PoolConfig is a pool of load balancer addresses, written as the dummy provider's [Pool].
type PoolConfig = ippool.Config

// SetDefaults implements config.Defaulter.
func (c *Config) SetDefaults() {
	c.Global.Port = "443"
	c.Global.CacheTTL = config.Duration{Duration: 30 * time.Second}
}

// vcenter is one vCenter with every key resolved as the upstream CCM resolves it (entries).
type vcenter struct {
	Name                         string // the section's name; "" for [Global] server
	Server, Port, User, Password string // User and Password from the file (may be empty)
	Insecure                     bool
	CAFile, Thumbprint           string
	Datacenters                  []string
	// The credentials source tried when the file has none or vCenter refuses them: a Secret
	// (the section's own, else [Global]'s) or, instead of [Global]'s, a secrets directory.
	SecretName, SecretNamespace string
	SecretsDirectory            string
	IPFamilies                  []string
	Tries                       int
}

// entry is one vCenter as the file (and environment) define it, before resolution.
type entry struct {
	name string               // section name; "" for the vCenter of [Global] server
	s    *VirtualCenterConfig // never nil: an empty one for [Global] server
}

func (e entry) host() string { return or(e.s.Server, e.name) }

// entries lists the vCenters as upstream does: every [VirtualCenter] section, plus [Global]
// server unless a section already stands for that host (then [Global] only fills in that
// section's empty keys, as for any section). Sorted by name, [Global] server first.
func (c *Config) entries() []entry {
	var out []entry
	covered := false
	for _, name := range sortedKeys(c.VirtualCenter) {
		e := entry{name: name, s: c.VirtualCenter[name]}
		covered = covered || e.host() == c.Global.Server
		out = append(out, e)
	}
	if c.Global.Server != "" && !covered {
		out = append([]entry{{name: "", s: &VirtualCenterConfig{Server: c.Global.Server}}}, out...)
	}
	return out
}

// vcenters lists the configured vCenters with every key resolved.
func (c *Config) vcenters() []vcenter {
	var out []vcenter
	for _, e := range c.entries() {
		out = append(out, c.resolve(e))
	}
	return out
}

// resolve fills a vCenter's empty keys from [Global], with upstream's rules: thumbprint and
// ca-file are inherited; insecure-flag is the section's OR [Global]'s (a section cannot turn
// verification back on, and a vCenter from the environment is always verified); user and
// password are inherited only when the file names no credentials source at all.
func (c *Config) resolve(e entry) vcenter {
	g, s := c.Global, e.s
	ownSecret := s.SecretName != "" && s.SecretNamespace != ""
	v := vcenter{Name: e.name, Server: e.host(), Port: or(s.Port, g.Port), User: s.User, Password: s.Password,
		CAFile: or(s.CAFile, g.CAFile), Thumbprint: or(s.Thumbprint, g.Thumbprint),
		Datacenters: list(or(s.Datacenters, g.Datacenters)), IPFamilies: families(or(s.IPFamily, g.IPFamily)),
		Tries: tries(g.SOAPRoundtripCount)}
	if s.SOAPRoundtripCount > 0 {
		v.Tries = tries(s.SOAPRoundtripCount)
	}
	if s.env == "" {
		v.Insecure = g.InsecureFlag || (s.InsecureFlag != nil && *s.InsecureFlag)
		// The vCenter of [Global] server is made from [Global], credentials included.
		if e.name == "" || (!ownSecret && !c.globalSecretInFile) {
			v.User, v.Password = or(s.User, g.User), or(s.Password, g.Password)
		}
	}
	switch {
	case ownSecret:
		v.SecretName, v.SecretNamespace = s.SecretName, s.SecretNamespace
	case g.SecretsDirectory != "":
		v.SecretsDirectory = g.SecretsDirectory
	case g.SecretName != "" && g.SecretNamespace != "":
		v.SecretName, v.SecretNamespace = g.SecretName, g.SecretNamespace
	}
	return v
}

// place is where a vCenter's problems are reported: its section, or [Global] for the vCenter
// of [Global] server.
func (e entry) place() (section, sub string) {
	if e.name == "" {
		return "Global", ""
	}
	return "VirtualCenter", e.name
}

// Validate implements config.Validator.
func (c *Config) Validate() config.Problems {
	envNotices, ps := c.applyEnv(environ())
	g := c.Global
	if g.Server == "" && len(c.VirtualCenter) == 0 {
		ps.Add("Global", "server", "no vCenter configured: set [Global] server or add a [VirtualCenter \"host\"] section (or VSPHERE_VCENTER_<id>)")
	}
	checkPort := func(sec, sub, port string) {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			ps.AddSub(sec, sub, "port", "%q is not a TCP port", port)
		}
	}
	checkPort("Global", "", g.Port)
	for host, s := range c.VirtualCenter {
		if s.env != "" {
			continue // checked with its variables (env.go)
		}
		if s.Port != "" {
			checkPort("VirtualCenter", host, s.Port)
		}
		checkFamilies(&ps, "VirtualCenter", host, s.IPFamily)
		if (s.SecretName == "") != (s.SecretNamespace == "") && g.SecretName == "" {
			ps.AddSub("VirtualCenter", host, "secret-name", "secret-name and secret-namespace go together")
		}
		if s.CAFile != "" {
			if err := config.StatReferenced("[VirtualCenter \""+host+"\"] ca-file", s.CAFile); err != nil {
				ps.AddSub("VirtualCenter", host, "ca-file", "cannot read: %v", err)
			}
		}
	}
	checkFamilies(&ps, "Global", "", g.IPFamily)
	if (g.SecretName == "") != (g.SecretNamespace == "") {
		ps.Add("Global", "secret-name", "secret-name and secret-namespace go together")
	}
	if g.CAFile != "" {
		if err := config.StatReferenced("[Global] ca-file", g.CAFile); err != nil {
			ps.Add("Global", "ca-file", "cannot read: %v", err)
		}
	}
	hosts := map[string]string{}
	for _, e := range c.entries() {
		v := c.resolve(e)
		sec, sub := e.place()
		if v.SecretName == "" && v.SecretsDirectory == "" && (v.User == "" || v.Password == "") {
			ps.AddSub(sec, sub, "user", "no credentials for vCenter %s: set user and password (quote a password holding ; or #), or secret-name and secret-namespace, or secrets-directory", v.Server)
		}
		if other, dup := hosts[v.Server]; dup {
			ps.AddSub(sec, sub, "server", "vCenter %s is also configured by [VirtualCenter %q]: ccm holds one session per vCenter, so write its keys in one section", v.Server, other)
		}
		hosts[v.Server] = e.name
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
	c.notices = append(append(append(c.upstreamReport(), c.insecureNotices()...), c.verificationNotices()...), envNotices...)
	if len(ps) == 0 {
		for _, n := range c.notices {
			logNotice(n)
		}
	}
	return ps
}

// insecureNotices reports a [VirtualCenter] insecure-flag = false under [Global]
// insecure-flag = true: the upstream CCM combines the two with OR, so the section's false
// does not turn verification on, and neither does it here.
func (c *Config) insecureNotices() []string {
	if !c.Global.InsecureFlag {
		return nil
	}
	var out []string
	for _, e := range c.entries() {
		if s := e.s; e.name != "" && s.env == "" && s.InsecureFlag != nil && !*s.InsecureFlag {
			out = append(out, config.Problem{Line: c.line("VirtualCenter", e.name, "insecure-flag"), Section: "VirtualCenter", Subsection: e.name, Key: "insecure-flag",
				Msg: fmt.Sprintf("false has no effect while %s = true: the certificate of vCenter %s is not verified (the upstream CCM combines the two with OR, and so does ccm); "+
					"to verify it, remove insecure-flag from [Global] and set it per vCenter", c.where("Global", "", "insecure-flag"), e.host())}.String())
		}
	}
	return out
}

// line is where a key is written, 0 if unknown.
func (c *Config) line(section, sub, key string) int {
	if c.lineOf == nil {
		return 0
	}
	return c.lineOf(section, sub, key)
}

// where names a key with its line, e.g. `[Global] insecure-flag (line 4)`.
func (c *Config) where(section, sub, key string) string {
	s := "[" + section
	if sub != "" {
		s += fmt.Sprintf(" %q", sub)
	}
	s += "] " + key
	if n := c.line(section, sub, key); n > 0 {
		s += fmt.Sprintf(" (line %d)", n)
	}
	return s
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

// verificationNotices reports ca-file or thumbprint together with insecure-flag = true for one
// vCenter, each as resolved (inherited from [Global] or not, insecure-flag combined with OR).
// govmomi (and so the upstream CCM) skips verification altogether when insecure-flag is on, so
// the CA bundle or the pinned thumbprint is ignored and any certificate accepted. ccm does the
// same, so a file that logs in upstream logs in here, but says so at every start and in
// check-config: the operator asked for both, and only one holds.
func (c *Config) verificationNotices() []string {
	type at struct{ sec, sub, key string }
	seen := map[at]bool{}
	g := c.Global
	var out []string
	for _, e := range c.entries() {
		v := c.resolve(e)
		if !v.Insecure {
			continue
		}
		sec, sub := e.place()
		insecureAt := at{"Global", "", "insecure-flag"}
		if !g.InsecureFlag {
			insecureAt = at{sec, sub, "insecure-flag"}
		}
		for _, k := range []struct{ key, own, global string }{{"ca-file", e.s.CAFile, g.CAFile}, {"thumbprint", e.s.Thumbprint, g.Thumbprint}} {
			setAt := at{sec, sub, k.key}
			switch {
			case k.own != "":
			case k.global != "":
				setAt = at{"Global", "", k.key}
			default:
				continue
			}
			if seen[setAt] {
				continue
			}
			seen[setAt] = true
			out = append(out, config.Problem{Line: c.line(setAt.sec, setAt.sub, k.key), Section: setAt.sec, Subsection: setAt.sub, Key: k.key,
				Msg: fmt.Sprintf("is ignored: %s = true turns certificate verification off, so any certificate is accepted (as the upstream CCM does); "+
					"remove insecure-flag (or set it to false) to verify vCenter's certificate with %s", c.where(insecureAt.sec, insecureAt.sub, insecureAt.key), k.key)}.String())
		}
	}
	return out
}
