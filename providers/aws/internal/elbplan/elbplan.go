// Package elbplan is the difference between the classic ELB a Service asks for and the one the
// cloud holds: listeners, health check, attributes, subnets, security groups, PROXY protocol
// and SSL negotiation policies, and members. It is pure: package aws reads the ELB and writes
// the Plan. Each difference carries the words the drift Event says about it (Plan.Repairs).
//
// The observed side is the SDK's own LoadBalancerDescription (a data type; this package calls
// no API): a listing and a Describe both answer with it, and the plan reads a dozen of its
// fields where a nil matters (a listener without policies is not one with none), so a copy
// filled at the edge would be a second place to get that wrong.
package elbplan

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// Attrs are the ELB attributes the annotations set: idle timeout, draining and access logs
// (cross-zone load balancing is apart).
type Attrs struct {
	IdleTimeout     int32 // upstream's default 60
	Draining        bool
	DrainingTimeout int32 // 0: not set (ELB keeps what it has)
	AccessLog       bool
	EmitInterval    int32 // 0: not set
	Bucket          string
	Prefix          string
}

// NewAttrs are the attributes of a new ELB made through the API.
var NewAttrs = Attrs{IdleTimeout: 60, DrainingTimeout: 300, EmitInterval: 60}

// Desired is what the Service asks of its ELB.
type Desired struct {
	Scheme    string
	Listeners []string // listener keys, protocol:port:instance protocol:instance port:certificate (ListenerOf)
	// HealthCheck is the health check's target; Interval, Timeout, Healthy and Unhealthy its
	// settings.
	HealthCheck                           string
	Interval, Timeout, Healthy, Unhealthy int32
	CrossZone                             bool
	Attrs                                 Attrs
	Subnets                               []string
	Groups                                []string // the security groups to attach
	ProxyProtocol                         bool
	SSLPolicy                             string // ssl-negotiation-policy: a predefined ELB security policy
}

// Observed is a classic ELB as read: its description (from a listing or a Describe) and the
// attributes the description does not carry.
type Observed struct {
	Desc      *elbtypes.LoadBalancerDescription
	CrossZone bool
	Attrs     Attrs
}

// Plan is the difference between a desired and an observed ELB. Its zero value is "nothing
// to do". Repairs names each difference, for the drift Event.
type Plan struct {
	Recreate        bool // the scheme differs: ELB cannot change it in place
	DeleteListeners []int32
	AddListeners    []string // listener keys
	HealthCheck     bool
	CrossZone       *bool
	Attrs           bool // write the idle timeout, draining and access log attributes
	AttachSubnets   []string
	DetachSubnets   []string
	Groups          []string // the groups to apply; nil when they are as wanted
	ProxyPolicy     bool     // create the PROXY protocol policy
	SSLPolicy       string   // create this SSL negotiation policy (ssl-negotiation-policy)
	SSLListeners    []int32  // listener ports to set the SSL negotiation policy on
	BackendPolicies map[int32][]string
	Register        []string
	Deregister      []string
	Repairs         []string
}

// Empty says whether the plan writes nothing.
func (p *Plan) Empty() bool {
	return !p.Recreate && len(p.DeleteListeners)+len(p.AddListeners)+len(p.AttachSubnets)+len(p.DetachSubnets)+len(p.BackendPolicies)+len(p.Register)+len(p.Deregister) == 0 &&
		!p.HealthCheck && p.CrossZone == nil && !p.Attrs && p.Groups == nil && !p.ProxyPolicy && p.SSLPolicy == "" && len(p.SSLListeners) == 0
}

func (p *Plan) note(format string, args ...any) {
	p.Repairs = append(p.Repairs, fmt.Sprintf(format, args...))
}

// ProxyPolicyName is the ELB policy (type ProxyProtocolPolicyType) ccm creates once per ELB
// for the proxy-protocol annotation; upstream's name, so ELBs it made keep working.
const ProxyPolicyName = "k8s-proxyprotocol-enabled"

// ListenerOf is the listener a key of Desired.Listeners stands for.
func ListenerOf(s string) elbtypes.Listener {
	f := strings.SplitN(s, ":", 5)
	port, _ := strconv.Atoi(f[1])
	iport, _ := strconv.Atoi(f[3])
	l := elbtypes.Listener{Protocol: aws.String(f[0]), LoadBalancerPort: int32(port), InstanceProtocol: aws.String(f[2]), InstancePort: aws.Int32(int32(iport))}
	if f[4] != "" {
		l.SSLCertificateId = aws.String(f[4])
	}
	return l
}

// listenerKey is the key of a listener as read (protocols in upper case, as keys hold them).
func listenerKey(l elbtypes.Listener) string {
	return fmt.Sprintf("%s:%d:%s:%d:%s", strings.ToUpper(aws.ToString(l.Protocol)), l.LoadBalancerPort,
		strings.ToUpper(aws.ToString(l.InstanceProtocol)), aws.ToInt32(l.InstancePort), aws.ToString(l.SSLCertificateId))
}

// Compute compares want (and the member instances) with what the cloud holds.
func Compute(want Desired, members []string, have Observed) Plan {
	var p Plan
	cur := have.Desc
	if want.Scheme != aws.ToString(cur.Scheme) {
		p.Recreate = true
		p.note("scheme was %s, not %s", aws.ToString(cur.Scheme), want.Scheme)
		return p
	}
	held := map[string]bool{}
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener == nil {
			continue
		}
		k := listenerKey(*ld.Listener)
		held[k] = true
		if !slices.Contains(want.Listeners, k) {
			p.DeleteListeners = append(p.DeleteListeners, ld.Listener.LoadBalancerPort)
			p.note("listener %s/%d was not wanted", aws.ToString(ld.Listener.Protocol), ld.Listener.LoadBalancerPort)
		}
	}
	for _, s := range want.Listeners {
		if !held[s] {
			p.AddListeners = append(p.AddListeners, s)
			l := ListenerOf(s)
			p.note("listener %s/%d was missing", aws.ToString(l.Protocol), l.LoadBalancerPort)
		}
	}
	if hc := cur.HealthCheck; hc == nil || aws.ToString(hc.Target) != want.HealthCheck || aws.ToInt32(hc.Interval) != want.Interval ||
		aws.ToInt32(hc.Timeout) != want.Timeout || aws.ToInt32(hc.HealthyThreshold) != want.Healthy || aws.ToInt32(hc.UnhealthyThreshold) != want.Unhealthy {
		p.HealthCheck = true
		p.note("health check differed")
	}
	if have.CrossZone != want.CrossZone {
		p.CrossZone = aws.Bool(want.CrossZone)
		p.note("cross-zone load balancing was %s", onOff(have.CrossZone))
	}
	if d := attrsDiff(want.Attrs, have.Attrs); d != "" {
		p.Attrs = true
		p.note("%s", d)
	}
	for _, s := range want.Subnets {
		if !slices.Contains(cur.Subnets, s) {
			p.AttachSubnets = append(p.AttachSubnets, s)
			p.note("subnet %s was not attached", s)
		}
	}
	for _, s := range cur.Subnets {
		if !slices.Contains(want.Subnets, s) {
			p.DetachSubnets = append(p.DetachSubnets, s)
			p.note("subnet %s was not wanted", s)
		}
	}
	if !sameSet(want.Groups, cur.SecurityGroups) {
		p.Groups = slices.Clone(want.Groups)
		p.note("security groups were %v, not %v", cur.SecurityGroups, want.Groups)
	}
	planProxyProtocol(&p, want, cur)
	planSSLPolicy(&p, want, cur)
	for _, id := range members {
		if !slices.Contains(instanceIDs(cur), id) {
			p.Register = append(p.Register, id)
			p.note("instance %s was not registered", id)
		}
	}
	for _, id := range instanceIDs(cur) {
		if !slices.Contains(members, id) {
			p.Deregister = append(p.Deregister, id)
			p.note("instance %s was registered but is no member", id)
		}
	}
	return p
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// planProxyProtocol: with the annotation, the policy exists and every backend port of the
// listeners has it; without, no port has it (the port's other policies stay).
func planProxyProtocol(p *Plan, want Desired, cur *elbtypes.LoadBalancerDescription) {
	backends := map[int32][]string{}
	for _, b := range cur.BackendServerDescriptions {
		backends[aws.ToInt32(b.InstancePort)] = b.PolicyNames
	}
	set := func(port int32, names []string) {
		if p.BackendPolicies == nil {
			p.BackendPolicies = map[int32][]string{}
		}
		p.BackendPolicies[port] = names
	}
	if !want.ProxyProtocol {
		for port, names := range backends {
			if slices.Contains(names, ProxyPolicyName) {
				set(port, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ProxyPolicyName }))
				p.note("PROXY protocol was on for port %d", port)
			}
		}
		return
	}
	if cur.Policies == nil || !slices.Contains(cur.Policies.OtherPolicies, ProxyPolicyName) {
		p.ProxyPolicy = true
	}
	for _, s := range want.Listeners {
		port := aws.ToInt32(ListenerOf(s).InstancePort)
		if _, planned := p.BackendPolicies[port]; !planned && !slices.Contains(backends[port], ProxyPolicyName) {
			set(port, append(slices.Clone(backends[port]), ProxyPolicyName))
			p.note("PROXY protocol was off for port %d", port)
		}
	}
}

// SSLPolicyName is upstream's name of the ELB policy that refers to the security policy the
// ssl-negotiation-policy annotation names (type SSLNegotiationPolicyType).
func SSLPolicyName(ref string) string { return "k8s-SSLNegotiationPolicy-" + ref }

// planSSLPolicy: with ssl-negotiation-policy, the policy exists and every SSL or HTTPS
// listener has it (as upstream, it replaces the listener's policies). Without, nothing changes
// (upstream leaves the listeners' policies as they are).
func planSSLPolicy(p *Plan, want Desired, cur *elbtypes.LoadBalancerDescription) {
	if want.SSLPolicy == "" {
		return
	}
	name := SSLPolicyName(want.SSLPolicy)
	if cur.Policies == nil || !slices.Contains(cur.Policies.OtherPolicies, name) {
		p.SSLPolicy = name
	}
	held := map[int32][]string{}
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener != nil {
			held[ld.Listener.LoadBalancerPort] = ld.PolicyNames
		}
	}
	for _, s := range want.Listeners {
		l := ListenerOf(s)
		have := held[l.LoadBalancerPort]
		if slices.Contains(p.AddListeners, s) {
			have = nil // (re)created by this plan: no policies yet
		}
		if proto := aws.ToString(l.Protocol); (proto == "SSL" || proto == "HTTPS") && !slices.Equal(have, []string{name}) {
			p.SSLListeners = append(p.SSLListeners, l.LoadBalancerPort)
			if have != nil {
				p.note("listener %s/%d had SSL policies %v, not %s", proto, l.LoadBalancerPort, have, name)
			}
		}
	}
}

// attrsDiff says how have differs from want in what the annotations set ("" when it does
// not): a timeout the Service does not set is not compared, nor the log bucket of disabled logs.
func attrsDiff(want, have Attrs) string {
	var d []string
	if want.IdleTimeout != have.IdleTimeout {
		d = append(d, fmt.Sprintf("idle timeout was %ds", have.IdleTimeout))
	}
	if want.Draining != have.Draining {
		d = append(d, "connection draining was "+onOff(have.Draining))
	}
	if want.DrainingTimeout != 0 && want.DrainingTimeout != have.DrainingTimeout {
		d = append(d, fmt.Sprintf("connection draining timeout was %ds", have.DrainingTimeout))
	}
	if want.AccessLog != have.AccessLog {
		d = append(d, "access logs were "+onOff(have.AccessLog))
	}
	if want.AccessLog && (want.Bucket != have.Bucket || want.Prefix != have.Prefix || (want.EmitInterval != 0 && want.EmitInterval != have.EmitInterval)) {
		d = append(d, fmt.Sprintf("access logs went to s3://%s/%s every %d minutes", have.Bucket, have.Prefix, have.EmitInterval))
	}
	return strings.Join(d, ", ")
}

func instanceIDs(d *elbtypes.LoadBalancerDescription) []string {
	var out []string
	for _, in := range d.Instances {
		out = append(out, aws.ToString(in.InstanceId))
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}
