package vsphere

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ccm-project/ccm/common/config"
)

// The YAML form of vsphere.conf, with upstream's key names. It is read strictly: an unknown
// key is an error with its line, as in the INI form.
type yamlConfig struct {
	Global struct {
		yamlVC           `yaml:",inline"`
		CacheTTL         config.Duration `yaml:"cacheTTL"`
		SecretsDirectory string          `yaml:"secretsDirectory"`
		APIDisable       *bool           `yaml:"apiDisable"`
		APIBinding       *string         `yaml:"apiBinding"`
		// CAFileDashed is the spelling of the upstream chart's template, which the upstream
		// CCM does not read (its YAML key is caFile); ccm reads it as caFile.
		CAFileDashed string `yaml:"ca-file"`
	} `yaml:"global"`
	VCenter map[string]*yamlVCEntry `yaml:"vcenter"`
	Labels  struct {
		Region string `yaml:"region"`
		Zone   string `yaml:"zone"`
	} `yaml:"labels"`
	Nodes struct {
		InternalNetworkSubnetCIDR        string `yaml:"internalNetworkSubnetCidr"`
		ExternalNetworkSubnetCIDR        string `yaml:"externalNetworkSubnetCidr"`
		InternalVMNetworkName            string `yaml:"internalVmNetworkName"`
		ExternalVMNetworkName            string `yaml:"externalVmNetworkName"`
		ExcludeInternalNetworkSubnetCIDR string `yaml:"excludeInternalNetworkSubnetCidr"`
		ExcludeExternalNetworkSubnetCIDR string `yaml:"excludeExternalNetworkSubnetCidr"`
	} `yaml:"nodes"`
	Pools map[string]*yamlPool `yaml:"pools"`

	// Upstream's NSX-T sections, accepted and reported (upstreamkeys.go).
	LoadBalancer      yamlLB                  `yaml:"loadBalancer"`
	LoadBalancerClass map[string]*yamlLBClass `yaml:"loadBalancerClass"`
	NSXT              yamlNSXT                `yaml:"nsxt"`
	Route             struct {
		RouterPath *string `yaml:"routerPath"`
	} `yaml:"route"`
}

type yamlVCEntry struct {
	yamlVC    `yaml:",inline"`
	TenantRef *string `yaml:"tenantref"`
	SecretRef *string `yaml:"secretref"`
}

type yamlLBClass struct {
	IPPoolName        *string `yaml:"ipPoolName"`
	IPPoolID          *string `yaml:"ipPoolId"`
	TCPAppProfileName *string `yaml:"tcpAppProfileName"`
	TCPAppProfilePath *string `yaml:"tcpAppProfilePath"`
	UDPAppProfileName *string `yaml:"udpAppProfileName"`
	UDPAppProfilePath *string `yaml:"udpAppProfilePath"`
}

func (y *yamlLBClass) into() upstreamLBClass {
	return upstreamLBClass{IPPoolName: y.IPPoolName, IPPoolID: y.IPPoolID, TCPAppProfileName: y.TCPAppProfileName,
		TCPAppProfilePath: y.TCPAppProfilePath, UDPAppProfileName: y.UDPAppProfileName, UDPAppProfilePath: y.UDPAppProfilePath}
}

type yamlLB struct {
	yamlLBClass      `yaml:",inline"`
	Size             *string           `yaml:"size"`
	LBServiceID      *string           `yaml:"lbServiceId"`
	Tier1GatewayPath *string           `yaml:"tier1GatewayPath"`
	SnatDisabled     *bool             `yaml:"snatDisabled"`
	Tags             map[string]string `yaml:"tags"`
}

type yamlNSXT struct {
	User               *string `yaml:"user"`
	Password           *string `yaml:"password"`
	Host               *string `yaml:"host"`
	InsecureFlag       *bool   `yaml:"insecureFlag"`
	RemoteAuth         *bool   `yaml:"remoteAuth"`
	SecretName         *string `yaml:"secretName"`
	SecretNamespace    *string `yaml:"secretNamespace"`
	VMCAccessToken     *string `yaml:"vmcAccessToken"`
	VMCAuthHost        *string `yaml:"vmcAuthHost"`
	ClientAuthCertFile *string `yaml:"clientAuthCertFile"`
	ClientAuthKeyFile  *string `yaml:"clientAuthKeyFile"`
	CAFile             *string `yaml:"caFile"`
}

type yamlPool struct {
	CIDR      []string `yaml:"cidr"`
	Range     []string `yaml:"range"`
	Namespace []string `yaml:"namespace"`
	Reserved  []string `yaml:"reserved"`
	// The pool settings of [Pool] (common/ippool), in the YAML's camelCase.
	SkipEndAddresses *bool    `yaml:"skipEndAddresses"`
	Order            string   `yaml:"order"`
	AutoAssign       *bool    `yaml:"autoAssign"`
	AvoidBuggyIPs    bool     `yaml:"avoidBuggyIPs"`
	ServiceSelector  []string `yaml:"serviceSelector"`
	Priority         int      `yaml:"priority"`
}

type yamlVC struct {
	User               string   `yaml:"user"`
	Password           string   `yaml:"password"`
	Server             string   `yaml:"server"`
	Port               string   `yaml:"port"`
	InsecureFlag       *bool    `yaml:"insecureFlag"`
	Datacenters        []string `yaml:"datacenters"`
	CAFile             string   `yaml:"caFile"`
	Thumbprint         string   `yaml:"thumbprint"`
	SecretName         string   `yaml:"secretName"`
	SecretNamespace    string   `yaml:"secretNamespace"`
	IPFamily           []string `yaml:"ipFamily"`
	SOAPRoundtripCount int      `yaml:"soapRoundtripCount"`
}

// isYAML tells the two forms apart as upstream does: INI starts with a [Section].
func isYAML(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") || l == "---" {
			continue
		}
		return !strings.HasPrefix(l, "[")
	}
	return false
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// readConfig reads vsphere.conf in either form into a validated Config.
func readConfig(r io.Reader) (*Config, error) {
	var src []byte
	if r != nil {
		var err error
		if src, err = io.ReadAll(r); err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
	}
	cfg := &Config{}
	if !isYAML(src) {
		cfg.lineOf = iniLineOf(src)
		if err := config.ReadINI(bytes.NewReader(src), cfg); err != nil {
			return nil, err
		}
		return cfg, nil
	}
	var y yamlConfig
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(src, &root) // decoded above; only the lines are wanted here
	cfg.lineOf = yamlLineOf(&root)
	cfg.yaml = true
	cfg.SetDefaults()
	ps := y.into(cfg)
	ps = append(ps, cfg.Validate()...)
	for i := range ps {
		if ps[i].Line == 0 {
			ps[i].Line = cfg.lineOf(ps[i].Section, ps[i].Subsection, ps[i].Key)
		}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// iniLineOf finds the line of a key in an INI document (0 if it is not there).
func iniLineOf(src []byte) func(section, sub, key string) int {
	type at struct{ sec, sub, key string }
	lines := map[at]int{}
	var cur at
	for i, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if m := iniHeaderRE.FindStringSubmatch(l); m != nil {
			cur = at{sec: strings.ToLower(m[1]), sub: m[2]}
			continue
		}
		if m := iniKeyRE.FindStringSubmatch(l); m != nil {
			k := at{cur.sec, cur.sub, strings.ToLower(m[1])}
			if lines[k] == 0 {
				lines[k] = i + 1
			}
		}
	}
	return func(section, sub, key string) int {
		return lines[at{strings.ToLower(section), sub, strings.ToLower(key)}]
	}
}

var (
	iniHeaderRE = regexp.MustCompile(`^\[\s*([A-Za-z][-A-Za-z0-9.]*)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]`)
	iniKeyRE    = regexp.MustCompile(`^([A-Za-z][-A-Za-z0-9]*)\s*(?:=|$)`)
)

// yamlSections maps the INI section names that problems use to the YAML keys.
var yamlSections = map[string]string{"global": "global", "virtualcenter": "vcenter", "labels": "labels", "nodes": "nodes", "pool": "pools",
	"loadbalancer": "loadBalancer", "loadbalancerclass": "loadBalancerClass", "nsxt": "nsxt", "route": "route"}

// yamlLineOf finds the line of a key in the YAML form, named as in INI: ("Global", "",
// "insecure-flag") is global.insecureFlag; a VirtualCenter subsection is the vcenter entry of
// that name or with that server.
func yamlLineOf(root *yaml.Node) func(section, sub, key string) int {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }
	get := func(m *yaml.Node, match func(k, v *yaml.Node) bool) (*yaml.Node, *yaml.Node) {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil, nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if match(m.Content[i], m.Content[i+1]) {
				return m.Content[i], m.Content[i+1]
			}
		}
		return nil, nil
	}
	byKey := func(name string) func(k, v *yaml.Node) bool {
		return func(k, _ *yaml.Node) bool { return norm(k.Value) == norm(name) }
	}
	return func(section, sub, key string) int {
		if root == nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
			return 0
		}
		_, sec := get(root.Content[0], byKey(yamlSections[strings.ToLower(section)]))
		if sub != "" {
			_, sec = get(sec, func(k, v *yaml.Node) bool {
				if k.Value == sub {
					return true
				}
				_, server := get(v, byKey("server"))
				return server != nil && server.Value == sub
			})
		}
		if key == "" {
			return 0
		}
		if k, _ := get(sec, byKey(key)); k != nil {
			return k.Line
		}
		return 0
	}
}

// yamlError keeps the line and the key of a YAML error but never the value (it may be a
// password).
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &config.Error{Problems: []config.Problem{{Msg: "not valid YAML: " + quotedRE.ReplaceAllString(err.Error(), "the value")}}}
	}
	var ps []config.Problem
	for _, e := range te.Errors {
		p := config.Problem{Msg: e}
		if m := yamlLineRE.FindStringSubmatch(e); m != nil {
			fmt.Sscan(m[1], &p.Line)
			p.Msg = m[2]
			if f := fieldRE.FindStringSubmatch(m[2]); f != nil {
				p.Key, p.Msg = f[1], "unknown key (check the spelling; see docs/providers/vsphere.md)"
			} else {
				p.Msg = quotedRE.ReplaceAllString(p.Msg, "the value")
			}
		}
		ps = append(ps, p)
	}
	return &config.Error{Problems: ps}
}

var (
	fieldRE  = regexp.MustCompile(`^field (\S+) not found`)
	quotedRE = regexp.MustCompile("`[^`]*`|\"[^\"]*\"")
)

func (y *yamlConfig) into(c *Config) config.Problems {
	var ps config.Problems
	g := &c.Global
	yg := y.Global.yamlVC
	g.User, g.Password, g.Server = yg.User, yg.Password, yg.Server
	g.Port = or(yg.Port, g.Port)
	if yg.InsecureFlag != nil {
		g.InsecureFlag = *yg.InsecureFlag
	}
	g.Datacenters, g.CAFile, g.Thumbprint = strings.Join(yg.Datacenters, ","), yg.CAFile, yg.Thumbprint
	if d := y.Global.CAFileDashed; d != "" {
		if g.CAFile != "" && g.CAFile != d {
			ps = append(ps, config.Problem{Line: c.line("Global", "", "ca-file"), Key: "global.ca-file", Msg: "and global.caFile name different files: keep one (caFile is upstream's spelling)"})
		}
		g.CAFile = d
	}
	g.SecretsDirectory = y.Global.SecretsDirectory
	g.APIDisable, g.APIBinding = y.Global.APIDisable, y.Global.APIBinding
	g.SecretName, g.SecretNamespace = yg.SecretName, yg.SecretNamespace
	g.IPFamily, g.SOAPRoundtripCount = strings.Join(yg.IPFamily, ","), yg.SOAPRoundtripCount
	if y.Global.CacheTTL.Duration != 0 {
		g.CacheTTL = y.Global.CacheTTL
	}
	for name, v := range y.VCenter {
		if v == nil { // "vcenter: {name: }": an entry with no keys
			v = &yamlVCEntry{}
		}
		if c.VirtualCenter == nil {
			c.VirtualCenter = map[string]*VirtualCenterConfig{}
		}
		c.VirtualCenter[name] = &VirtualCenterConfig{
			Server: v.Server, upstreamVC: upstreamVC{TenantRef: v.TenantRef, SecretRef: v.SecretRef},
			User: v.User, Password: v.Password, Port: v.Port, InsecureFlag: v.InsecureFlag,
			Datacenters: strings.Join(v.Datacenters, ","), CAFile: v.CAFile, Thumbprint: v.Thumbprint,
			SecretName: v.SecretName, SecretNamespace: v.SecretNamespace, IPFamily: strings.Join(v.IPFamily, ","),
			SOAPRoundtripCount: v.SOAPRoundtripCount,
		}
	}
	c.Labels.Region, c.Labels.Zone = y.Labels.Region, y.Labels.Zone
	n := &c.Nodes
	n.InternalNetworkSubnetCIDR, n.ExternalNetworkSubnetCIDR = y.Nodes.InternalNetworkSubnetCIDR, y.Nodes.ExternalNetworkSubnetCIDR
	n.InternalVMNetworkName, n.ExternalVMNetworkName = y.Nodes.InternalVMNetworkName, y.Nodes.ExternalVMNetworkName
	n.ExcludeInternalNetworkSubnetCIDR, n.ExcludeExternalNetworkSubnetCIDR = y.Nodes.ExcludeInternalNetworkSubnetCIDR, y.Nodes.ExcludeExternalNetworkSubnetCIDR
	for name, p := range y.Pools {
		if p == nil { // an entry with no keys: Validate says what a pool needs
			p = &yamlPool{}
		}
		if c.Pool == nil {
			c.Pool = map[string]*PoolConfig{}
		}
		c.Pool[name] = &PoolConfig{CIDR: p.CIDR, Range: p.Range, Namespace: p.Namespace, Reserved: p.Reserved,
			SkipEndAddresses: p.SkipEndAddresses, Order: p.Order, AutoAssign: p.AutoAssign, AvoidBuggyIPs: p.AvoidBuggyIPs,
			ServiceSelector: p.ServiceSelector, Priority: p.Priority}
	}
	lb := &c.LoadBalancer
	lb.upstreamLBClass = y.LoadBalancer.into()
	lb.Size, lb.LBServiceID, lb.Tier1GatewayPath, lb.SnatDisabled = y.LoadBalancer.Size, y.LoadBalancer.LBServiceID, y.LoadBalancer.Tier1GatewayPath, y.LoadBalancer.SnatDisabled
	if len(y.LoadBalancer.Tags) > 0 {
		tags := strings.Join(sortedKeys(y.LoadBalancer.Tags), ",")
		lb.Tags = &tags
	}
	for name, cl := range y.LoadBalancerClass {
		if cl == nil {
			cl = &yamlLBClass{}
		}
		if c.LoadBalancerClass == nil {
			c.LoadBalancerClass = map[string]*upstreamLBClass{}
		}
		v := cl.into()
		c.LoadBalancerClass[name] = &v
	}
	x := y.NSXT
	c.NSXT = upstreamNSXT{User: x.User, Password: x.Password, Host: x.Host, InsecureFlag: x.InsecureFlag, RemoteAuth: x.RemoteAuth,
		SecretName: x.SecretName, SecretNamespace: x.SecretNamespace, VMCAccessToken: x.VMCAccessToken, VMCAuthHost: x.VMCAuthHost,
		ClientAuthCertFile: x.ClientAuthCertFile, ClientAuthKeyFile: x.ClientAuthKeyFile, CAFile: x.CAFile}
	c.Route.RouterPath = y.Route.RouterPath
	return ps
}
