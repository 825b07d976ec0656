package openstack

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// Annotations, in the upstream provider's vocabulary.
const (
	annPrefix            = "loadbalancer.openstack.org/"
	annFloatingNetworkID = annPrefix + "floating-network-id"
	annFloatingSubnetID  = annPrefix + "floating-subnet-id"
	annSubnetID          = annPrefix + "subnet-id"
	annNetworkID         = annPrefix + "network-id"
	annMemberSubnetID    = annPrefix + "member-subnet-id"
	annClass             = annPrefix + "class"
	annKeepFloatingIP    = annPrefix + "keep-floatingip"
	annProxyProtocol     = annPrefix + "proxy-protocol"
	annLBMethod          = annPrefix + "lb-method"
	annHealthMonitor     = annPrefix + "enable-health-monitor"
	annXForwardedFor     = annPrefix + "x-forwarded-for"
	annTLSContainerRef   = annPrefix + "default-tls-container-ref"
	annLoadBalancerID    = annPrefix + "load-balancer-id"
	// annLoadBalancerAddress is written by the upstream CCM onto every Service it manages (the
	// address it served); ccm reads nothing from it, and it is no user setting to warn about.
	annLoadBalancerAddress = annPrefix + "load-balancer-address"
	annInternal            = "service.beta.kubernetes.io/openstack-internal-load-balancer"
)

// lbSpec is what the Service asks of its load balancer, after class, annotations and config.
type lbSpec struct {
	name                                string
	internal, keepFIP                   bool
	subnetID, networkID, memberSubnetID string
	// memberDefault: memberSubnetID is upstream's default, no member-subnet-id names it.
	memberDefault bool
	// memberSubnetFrom names the setting memberSubnetID comes from, for errors.
	memberSubnetFrom string
	// svcSubnetID: subnet-id by annotation, class, config (an earlier ccm's VIP subnet).
	svcSubnetID string
	// memberSubnetAlts (per family): subnets that satisfy the default as well as
	// memberSubnetID (the VIP subnet, an earlier ccm's default). Members already on one keep
	// it: an upgrade does not rewrite every pool; new members go on memberSubnetID.
	memberSubnetAlts            []string
	floatingNetworkID, fixedFIP string
	// floatingSubnet: where a new floating IP comes from (floatingsubnet.go).
	floatingSubnet fipSubnetSel
	// vipAddress is the VIP asked for at creation: spec.loadBalancerIP of an internal or IPv6
	// load balancer of that address's family (as upstream; Octavia cannot change a VIP later).
	vipAddress string
	// createOnly: flavor, availability zone and VIP port, also taken at creation only
	// (createonly.go); the VIP port only for the first family's load balancer.
	createOnly
	existingID string // load-balancer-id: adopt, never create or delete
	// recordedID: load-balancer-id written by a CCM (ccm or upstream) as the record of the load
	// balancer that serves the Service (recordedLoadBalancer): looked up first, and when it is
	// gone the Service's own is found by name or made again, as without the annotation.
	recordedID string
	// detectSubnet: no subnet or network is named; familySpecs takes the VIP subnet (and the
	// member subnet, unless memberSubnetID names one) from a Node's port.
	detectSubnet bool
	provider     string
	family       v1.IPFamily
	listeners    []listenerSpec
	// tlsRef is the TLS container or secret of the TERMINATED_HTTPS listeners ("": none).
	tlsRef   string
	warnings []string // each names its annotation
	advice   []advice // Warnings with their own reason (createonly.go)
	// internalUnclear: the internal annotation is a value upstream reads as false and earlier
	// ccm versions read as true (internalUnclear()); the load balancer keeps its exposure.
	internalUnclear bool
}

// listenerSpec is one listener with its pool and monitor; its fingerprint is kept in the
// listener's description, so a listener is rewritten only when this changes.
type listenerSpec struct {
	Protocol     string
	Port         int
	NodePort     int
	PoolProtocol string
	Method       string
	SourceRanges []string     `json:",omitempty"`
	Monitor      *monitorSpec `json:",omitempty"`
	// InsertXFF (x-forwarded-for) is the listener's insert_headers X-Forwarded-For=true. It is
	// left out of the fingerprint: Octavia updates it in place (see planPool), and the
	// listener's protocol, which the annotation also changes, is in the key.
	InsertXFF bool `json:"-"`
	// TLSRef is a TERMINATED_HTTPS listener's default_tls_container_ref: updated in place too
	// (a new certificate must not close the port), so not in the fingerprint.
	TLSRef string `json:"-"`
	// Limits: connection_limit and timeouts, updated in place (lblimits.go).
	Limits listenerLimits `json:"-"`
	// Persistence is the pool's session_persistence type ("" none): SOURCE_IP for
	// sessionAffinity ClientIP, as upstream (persistence.go). Updated in place, so not in the
	// fingerprint (which also keeps every listener made before it was compared).
	Persistence string `json:"-"`
}

type monitorSpec struct {
	Type                       string
	Delay, Timeout, MaxRetries int
	URLPath                    string `json:",omitempty"`
	Port                       int    `json:",omitempty"` // member monitor_port (healthCheckNodePort)
	// Want are the timings compared and written: the health-monitor-* annotations, else the
	// config's (Delay, Timeout, MaxRetries above, which stay in the fingerprint as before).
	// Updated in place; Overridden: an annotation sets one (a difference is then no drift).
	Want       monitorValues `json:"-"`
	Overridden bool          `json:"-"`
}

func (l listenerSpec) key() string { return fmt.Sprintf("%s/%d", l.Protocol, l.Port) }

// fingerprint is the hash of the listener's spec, kept in its description.
func (l listenerSpec) fingerprint() string { return fingerprint.Of(l) }

// classBySpec is the [LoadBalancerClass] section named by the Service's spec.loadBalancerClass
// (issue 16: where upstream has a class in config, the same name is the Service's class; ccm
// serves it when run with --load-balancer-class of that name), or "" when none is.
func classBySpec(svc *v1.Service, classes map[string]*LBClass) string {
	if c := svc.Spec.LoadBalancerClass; c != nil && classes[*c] != nil {
		return *c
	}
	return ""
}

// spec builds the desired load balancer. An unknown class is an error (the user named a
// network setup that does not exist); every other bad value is a warning with a safe default.
func (l *loadBalancers) spec(name string, svc *v1.Service) (*lbSpec, error) {
	if err := checkValues(svc); err != nil {
		return nil, err
	}
	cfg := l.c.cfg.LoadBalancer
	s := &lbSpec{name: name, provider: cfg.LBProvider, family: v1.IPv4Protocol}
	cn, cls, err := l.classOf(svc, s)
	if err != nil {
		return nil, err
	}
	if err = l.checkNamedNetworks(svc); err != nil {
		return nil, err
	}
	if err = s.setExisting(svc); err != nil {
		return nil, err
	}
	s.setInternal(svc, cfg)
	s.setNetworks(chooseNetworks(&cfg, cls, cn, svc.Annotations, s.internal)) // the VIP's precedence depends on it
	if s.createOnly, s.advice, err = createOnlyOf(svc, cfg, s.provider); err != nil {
		return nil, err
	}
	s.keepFIP = upstreamBool(svc, annKeepFloatingIP, false, &s.warnings)
	if err = s.setFixedFIP(svc); err != nil {
		return nil, err
	}
	// Neither subnet-id nor network-id: the VIP subnet is taken from a Node's port, as
	// upstream does (vipsubnet.go, in familySpecs).
	s.detectSubnet = s.subnetID == "" && s.networkID == ""
	s.warnUnsupported(svc.Annotations)
	s.family = families(svc)[0]

	in, err := s.listenerInputs(svc, cfg)
	if err != nil {
		return nil, err
	}
	for _, p := range svc.Spec.Ports {
		if ls, ok := s.listenerOf(svc, p, in); ok {
			s.listeners = append(s.listeners, ls)
		}
	}
	sort.Slice(s.listeners, func(i, j int) bool { return s.listeners[i].key() < s.listeners[j].key() })
	return s, nil
}

// classOf is the Service's [LoadBalancerClass] (name and section; "" and nil: none): the
// class annotation, else spec.loadBalancerClass. A class the config does not have is an error.
func (l *loadBalancers) classOf(svc *v1.Service, s *lbSpec) (string, *LBClass, error) {
	cn, byAnnotation := svc.Annotations[annClass]
	if !byAnnotation {
		cn = classBySpec(svc, l.c.cfg.LoadBalancerClass)
	} else if sc := classBySpec(svc, l.c.cfg.LoadBalancerClass); sc != "" && sc != cn {
		s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: %q wins over spec.loadBalancerClass %q (both name a [LoadBalancerClass] section)", annClass, cn, sc))
	}
	var cls *LBClass
	if cn != "" {
		if cls = l.c.cfg.LoadBalancerClass[cn]; cls == nil {
			return "", nil, fmt.Errorf("annotation %s: no [LoadBalancerClass %q] in the cloud config", annClass, cn)
		}
	}
	return cn, cls, nil
}

// setExisting reads load-balancer-id: a load balancer to adopt, or (recordedLoadBalancer) the
// record of the one a CCM made for the Service.
func (s *lbSpec) setExisting(svc *v1.Service) error {
	s.existingID = svc.Annotations[annLoadBalancerID]
	if s.existingID != "" && !objectIDRE.MatchString(s.existingID) {
		return fmt.Errorf("annotation %s: %q is not an Octavia load balancer ID", annLoadBalancerID, s.existingID)
	}
	if recordedLoadBalancer(svc) {
		s.recordedID, s.existingID = s.existingID, ""
	}
	return nil
}

// setInternal decides whether the load balancer is internal (no floating IP).
func (s *lbSpec) setInternal(svc *v1.Service, cfg LBConfig) {
	a := svc.Annotations
	if cfg.InternalLB {
		// As upstream: internal-lb = true is the operator's rule, no Service can open itself
		// to a public address.
		s.internal = true
		if v, ok := a[annInternal]; ok && v != "true" {
			s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: %q is ignored: [LoadBalancer] internal-lb = true keeps every load balancer internal", annInternal, v))
		}
	} else if internalUnclear(a) {
		// Upstream reads True, 1, t as false (public); ccm before this version read them as
		// true (internal). Neither reading is safe to apply: see internalUnclear.
		s.internalUnclear = true
		s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: %q is not true or false: the upstream CCM reads it as false (public, with a floating IP), earlier ccm versions as true (internal); "+
			"an existing load balancer is kept as it is, internal or public, and none is created until the value is true or false", annInternal, a[annInternal]))
	} else {
		s.internal = upstreamBool(svc, annInternal, false, &s.warnings)
	}
}

// setNetworks takes the networks chooseNetworks resolved, and warns of a floating-subnet
// pattern that cannot match any subnet.
func (s *lbSpec) setNetworks(nc netChoice) {
	s.subnetID, s.networkID, s.memberSubnetID, s.memberDefault = nc.subnetID, nc.networkID, nc.memberSubnetID, nc.memberDefault
	s.memberSubnetFrom, s.svcSubnetID = nc.memberSubnetFrom, nc.svcSubnetID
	s.floatingNetworkID, s.floatingSubnet = nc.floatingNetworkID, nc.floatingSubnet
	if sel := s.floatingSubnet; sel.from == "" && sel.matching() && sel.Pattern != "" {
		if _, err := subnetNameMatcher(sel.Pattern); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("%s: %v; no floating IP can be allocated by it", sel.key("floating-subnet"), err))
		}
	}
}

// setFixedFIP reads spec.loadBalancerIP, the floating IP asked for, in its canonical form.
func (s *lbSpec) setFixedFIP(svc *v1.Service) error {
	s.fixedFIP = svc.Spec.LoadBalancerIP //nolint:staticcheck // deprecated in the API, still the upstream way to ask for a floating IP
	if s.fixedFIP != "" {
		ip, err := netip.ParseAddr(s.fixedFIP)
		if err != nil || ip.Zone() != "" {
			return fmt.Errorf("spec.loadBalancerIP: %q is not an IP address", s.fixedFIP)
		}
		s.fixedFIP = ip.String()
	}
	return nil
}

// warnUnsupported warns of each annotation in the provider's prefix that it does not read.
func (s *lbSpec) warnUnsupported(a map[string]string) {
	for k := range a {
		if strings.HasPrefix(k, annPrefix) && !supportedAnnotations[k] {
			s.warnings = append(s.warnings, fmt.Sprintf("annotation %s is not supported by this provider and is ignored", k))
		}
	}
}

// listenerSettings are the Service-wide settings each port's listener is made from.
type listenerSettings struct {
	cfg                  LBConfig
	method, proxy        string
	xff, monitors, local bool
	limits               listenerLimits
	timing               monitorValues
	overridden           bool
	ranges               []string
}

// listenerInputs reads the Service-wide listener settings (and s.tlsRef), warning of bad values;
// proxy protocol with x-forwarded-for is an error.
func (s *lbSpec) listenerInputs(svc *v1.Service, cfg LBConfig) (listenerSettings, error) {
	in := listenerSettings{cfg: cfg}
	in.method = methodOf(svc, cfg, s.provider, &s.warnings) // lbmethod.go
	var known bool
	in.proxy, known = proxyPool(svc)
	if !known {
		s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: %q is not true, v1, v2 or false (the upstream CCM reads only these, in lower case); proxy protocol is off", annProxyProtocol, svc.Annotations[annProxyProtocol]))
	}
	in.xff = upstreamBool(svc, annXForwardedFor, false, &s.warnings)
	if in.xff && in.proxy != "" {
		// As upstream: the two ask for contradicting listeners (HTTP that rewrites the request
		// vs TCP that passes it with a PROXY header), so the Service is not synced.
		return in, fmt.Errorf("annotations %s and %s cannot be used together", annProxyProtocol, annXForwardedFor)
	}
	s.tlsRef = strings.TrimSpace(or(svc.Annotations[annTLSContainerRef], cfg.tlsRef()))
	in.monitors = upstreamBool(svc, annHealthMonitor, cfg.CreateMonitor, &s.warnings)
	in.local = svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort > 0
	in.limits = limitsOf(svc, s.provider, &s.warnings)
	in.timing, in.overridden = monitorValuesOf(svc, cfg, &s.warnings)
	ranges, err := sourceRanges(svc)
	if err != nil {
		return in, err
	}
	if s.provider == providerOVN {
		// ovn-octavia-provider refuses allowed_cidrs (400, "OVN provider does not support
		// allowed_cidrs option"), as upstream knows (it sends none to ovn): the ranges are
		// left to kube-proxy, which reads the spec field only.
		ranges = nil
		if msg, ok := sourceranges.Unenforced(svc); ok {
			s.advice = append(s.advice, advice{sourceranges.ReasonNotEnforced, msg})
		}
	}
	in.ranges = ranges
	return in, nil
}

// listenerOf is port p's listener; false (with a warning) for a protocol Octavia cannot serve.
func (s *lbSpec) listenerOf(svc *v1.Service, p v1.ServicePort, in listenerSettings) (listenerSpec, bool) {
	ls := listenerSpec{Protocol: string(p.Protocol), Port: int(p.Port), NodePort: int(p.NodePort), PoolProtocol: string(p.Protocol), Method: in.method, SourceRanges: in.ranges, Limits: in.limits,
		Persistence: persistenceOf(svc)}
	switch p.Protocol {
	case v1.ProtocolTCP:
		ls.Protocol, ls.PoolProtocol, ls.InsertXFF = tcpListener(in.proxy, in.xff, s.tlsRef != "")
		if ls.Protocol == "TERMINATED_HTTPS" {
			ls.TLSRef = s.tlsRef
		}
	case v1.ProtocolUDP, v1.ProtocolSCTP:
		if in.xff {
			s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: port %d is %s, which Octavia cannot serve as HTTP; its listener stays %s", annXForwardedFor, p.Port, p.Protocol, p.Protocol))
		}
		if _, ok := svc.Annotations[annTLSContainerRef]; ok {
			s.warnings = append(s.warnings, fmt.Sprintf("annotation %s: port %d is %s, on which Octavia cannot terminate TLS; its listener stays %s", annTLSContainerRef, p.Port, p.Protocol, p.Protocol))
		}
	default:
		s.warnings = append(s.warnings, fmt.Sprintf("port %d: protocol %s is not supported by Octavia; port skipped", p.Port, p.Protocol))
		return ls, false
	}
	if in.monitors {
		ls.Monitor = in.monitorOf(svc, p, s.provider)
	}
	return ls, true
}

// monitorOf is the health monitor of port p's pool.
func (in listenerSettings) monitorOf(svc *v1.Service, p v1.ServicePort, provider string) *monitorSpec {
	cfg := in.cfg
	m := &monitorSpec{Type: "TCP", Delay: secs(cfg.MonitorDelay.Seconds()), Timeout: secs(cfg.MonitorTimeout.Seconds()), MaxRetries: cfg.MonitorMaxRetries,
		Want: in.timing, Overridden: in.overridden}
	switch {
	case in.local && provider != providerOVN:
		// kube-proxy answers /healthz on healthCheckNodePort only where endpoints run.
		// The OVN provider has no HTTP monitors: as upstream, its pools keep the
		// port's own type (and the members no monitor_port).
		m.Type, m.URLPath, m.Port = "HTTP", "/healthz", int(svc.Spec.HealthCheckNodePort)
	case p.Protocol == v1.ProtocolUDP:
		m.Type = "UDP-CONNECT"
	case p.Protocol == v1.ProtocolSCTP:
		m.Type = "SCTP"
	}
	return m
}

// providerOVN is the Octavia provider name of ovn-octavia-provider ([LoadBalancer] lb-provider),
// which upstream compares as it is.
const providerOVN = "ovn"

// tcpListener is the listener protocol, pool protocol and X-Forwarded-For of a TCP port, as
// upstream chooses them: a TLS container makes a TERMINATED_HTTPS listener in front of an
// HTTP pool (a PROXY pool with proxy-protocol), inserting the header with x-forwarded-for;
// else x-forwarded-for makes an HTTP listener inserting the header in front of an HTTP pool;
// proxy-protocol alone keeps a TCP listener in front of a PROXY pool.
func tcpListener(proxy string, xff, tls bool) (listener, pool string, insertXFF bool) {
	switch {
	case tls && proxy != "":
		return "TERMINATED_HTTPS", proxy, xff
	case tls:
		return "TERMINATED_HTTPS", "HTTP", xff
	case xff:
		return "HTTP", "HTTP", true
	case proxy != "":
		return "TCP", proxy, false
	}
	return "TCP", "TCP", false
}

// objectIDRE is what an OpenStack object ID may look like (UUIDs; the fake's "lb-000001"): it
// goes into a URL path, so nothing else (no "/", "..", "?") is accepted.
var objectIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// sourceRanges are the Service's source ranges (spec.loadBalancerSourceRanges, else the legacy
// annotation upstream honours: common/sourceranges) as canonical prefixes, sorted; nil when
// the Service lets every client in. A value that is not a CIDR is an error naming the field.
func sourceRanges(svc *v1.Service) ([]string, error) {
	r, err := sourceranges.Of(svc)
	return r.CIDRs, err
}

// familyRanges keeps the ranges of one IP family: Octavia refuses allowed_cidrs of the other
// family than the VIP's. When the Service restricts its sources but names none of this
// family, the family's listener gets a prefix no client can come from (0.0.0.0/32, ::/128):
// an empty list would open it to everyone.
func familyRanges(ranges []string, family v1.IPFamily) []string {
	if len(ranges) == 0 {
		return nil
	}
	v6 := family == v1.IPv6Protocol
	var out []string
	for _, r := range ranges {
		if p, err := netip.ParsePrefix(r); err == nil && p.Addr().Is6() == v6 {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		if v6 {
			return []string{"::/128"}
		}
		return []string{"0.0.0.0/32"}
	}
	return out
}

// networkAnnotations name networks and subnets (their kinds are in the annotation table); each
// is checked by checkNamedNetworks.
var networkAnnotations = []string{annSubnetID, annNetworkID, annMemberSubnetID, annFloatingNetworkID, annFloatingSubnetID}

// checkNamedNetworks refuses a network or subnet a Service names by annotation unless the
// cloud config names it ([LoadBalancer] or a [LoadBalancerClass]) or the operator allowed it
// (allowed-resource-namespaces / -ids): a tenant must not put its load balancer, its
// members or its floating IP on another cluster's or a hand-made network.
func (l *loadBalancers) checkNamedNetworks(svc *v1.Service) error {
	id := ownership.Identity{Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
	for _, key := range networkAnnotations {
		if v := svc.Annotations[key]; v != "" {
			if err := l.namedNetwork(id, key, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// namedNetwork decides the network or subnet v that annotation key names: named in the cloud
// config, or allowed by the operator (ccm does not read the ownership of networks).
func (l *loadBalancers) namedNetwork(id ownership.Identity, key, v string) error {
	if l.configNames(v) {
		return nil
	}
	a, _ := annotations.Lookup(key)
	return reach.Named(id, l.c.cfg.LoadBalancer.allow, a, v, reach.Evidence{})
}

// configNames reports whether the cloud config names the network or subnet v ([LoadBalancer]
// or a [LoadBalancerClass]): such a one is the operator's choice for every Service.
func (l *loadBalancers) configNames(v string) bool {
	cfg := l.c.cfg.LoadBalancer
	known := []string{cfg.SubnetID, cfg.NetworkID, cfg.MemberSubnetID, cfg.FloatingNetworkID, cfg.FloatingSubnetID}
	for _, c := range l.c.cfg.LoadBalancerClass {
		known = append(known, c.SubnetID, c.NetworkID, c.MemberSubnetID, c.FloatingNetworkID, c.FloatingSubnetID)
	}
	return v != "" && slices.Contains(known, v)
}

// checkPickedFIPSubnets: the subnets a Service's floating-subnet or floating-subnet-tags
// annotation picks are each one floating-subnet-id would take (namedNetwork); a pattern must
// not reach a subnet an ID could not.
func (l *loadBalancers) checkPickedFIPSubnets(id ownership.Identity, sel fipSubnetSel, picked []subnets.Subnet) error {
	if sel.from != "" {
		return nil // the operator's selection, in the cloud config
	}
	key := annFloatingSubnet
	if sel.Pattern == "" {
		key = annFloatingSubnetTags
	}
	for _, s := range picked {
		if err := l.namedNetwork(id, annFloatingSubnetID, s.ID); err != nil {
			return reach.Refuse(key, "picks subnet %q, which %s would not take: no cloud config names it and the operator did not allow it (by namespace or by ID)", s.ID, annFloatingSubnetID)
		}
	}
	return nil
}

// families are the Service's IP families, primary first; IPv4 when the field is unset.
func families(svc *v1.Service) []v1.IPFamily {
	if len(svc.Spec.IPFamilies) == 0 {
		return []v1.IPFamily{v1.IPv4Protocol}
	}
	return svc.Spec.IPFamilies
}

func secs(f float64) int {
	if f < 1 {
		return 1
	}
	return int(f)
}
