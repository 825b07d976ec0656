package aws

// An NLB's reconcile as observe → plan → apply. nlbDesired is what the Service asks for;
// nlbobserve.go reads what the cloud holds and writes nothing; package nlbplan (pure,
// table-tested) decides the frame (the NLB, its security groups, the node rules its clients
// need: PlanFrame) and the parts (target groups, listeners, targets, attributes, tags:
// Compute); nlbapply.go checks ownership once before the first write, writes in the plan's
// order, and drops exactly the listings its writes made stale.
//
// [Global] NLBSecurityGroupMode = Managed (upstream since v1.35.0): each new NLB gets a security
// group of its own, admitting the Service's loadBalancerSourceRanges (default 0.0.0.0/0) on the
// listener ports, and ICMP types 3-4 (MTU discovery) from the IPv4 ranges, as upstream does.
// AWS attaches groups to an NLB only when it is created with some: an NLB made without (before
// the mode, or by upstream's default mode) stays without, as upstream leaves it. The node rules
// are those of every NLB (from the source ranges and the NLB's subnets, below): upstream
// keeps them in this mode too.
//
// The group: ccm names its own k8s-nlb-<NLB name> and gives it the Service's ownership tags.
// Upstream's (k8s-<ns:8>-<name:8>-<sha256:10>, its fixed description, only the cluster tag) is
// recognized on the Service's own NLB (proven the Service's by its tags) and taken over in place
// by adding ccm's tags. The group is deleted with the NLB, after it (in AWS, a group stays in
// use for a while after its NLB is gone: the delete is retried), whatever the mode: upstream
// deletes it so too. With the security-groups annotation the NLB has the named groups instead
// (nlbplan.PlanSecurityGroups): the Service's own group is then detached and deleted.
//
// Path-MTU discovery for NLB clients. An NLB keeps the client's address, so a node's
// "fragmentation needed" answer (ICMP 3-4) goes straight to the client: the node group must admit
// it from the client ranges. EC2 holds one rule per protocol, ports and source in a group, so
// every NLB admitting a range needs the same rule; it is a shared rule of the cluster, described
// ccm:<cluster> - - nlb-mtu, present in a group while a client rule of this cluster's NLBs
// admits that range there, and revoked when none does. Every NLB reconcile and delete derives it
// again for the groups it looks at: which rules a group is to hold is sgrules.NLBMTURules, pure;
// nlbapply.go writes them.
//
// The rules go in calls of their own after the client rules: AWS applies an Authorize whole or
// not at all, and a group at its rule quota or a rule another writer just added must not fail
// the client rules or the target registration (either is a Warning Event; the next sync looks
// again). Concurrent syncs share these rules, so one sync at a time decides a group's (a lock per
// group), from one read of the group as it is then. An MTU rule the upstream CCM made is taken
// as ccm's while a client rule admits its range. Upstream parity: docs/providers/aws.md.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// nlbPoll is how soon a Service whose NLB is still provisioning is looked at again: the
// worker is released meanwhile, so many new NLBs provision in parallel.
const nlbPoll = 5 * time.Second

// Target group names: at most 32 characters, scoped to the cluster, one per Service port.
var tgNames = lbname.Scheme{Prefix: "k8s-tg-", Sep: "-", MaxLen: 32, Allowed: func(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}}

// nlbDesired is what an NLB's fingerprint covers (members excepted, as for classic ELBs).
type nlbDesired struct {
	Scheme    string
	Subnets   []string
	Ports     []nlbPort
	Health    string // protocol:port:path
	HC        annotations.HCOptions
	ExtraTags map[string]string
	// Clients reach the nodes directly (through the NLB's own group, if any), so the node groups admit
	// SourceRanges on the Service's nodePorts.
	NodeGroups   []string
	SourceRanges []string
	HCNodePort   int32
	// HealthCIDRs are the NLB's subnets' CIDRs, whence its health checks come, admitted on the
	// health ports the client rules do not cover for everyone (restricted source ranges, UDP
	// ports checked over TCP), as upstream admits them. Omitted when empty, so the fingerprints
	// of NLBs made before it existed hold.
	HealthCIDRs []string `json:",omitempty"`
	// TGAttributes are the target-group-attributes annotation's: only these keys are
	// compared and written (upstream leaves the others, and those it no longer names, as
	// they are).
	TGAttributes map[string]string `json:",omitempty"`
	// CrossZone and the access logs are the NLB's attributes upstream reconciles (omitted
	// when off, so fingerprints of NLBs made before hold).
	CrossZone bool   `json:",omitempty"`
	AccessLog bool   `json:",omitempty"`
	Bucket    string `json:",omitempty"`
	Prefix    string `json:",omitempty"`
	// ManagedGroup: NLBSecurityGroupMode Managed, the NLB has a group of its own (see the file
	// comment), or, with NamedGroups (the security-groups annotation), those
	// (nlbplan.PlanSecurityGroups).
	ManagedGroup bool     `json:",omitempty"`
	NamedGroups  []string `json:",omitempty"`
	// Addresses are the Elastic IP allocations or private IPv4 addresses, one per subnet in
	// order, given to the NLB at its creation (AWS cannot change them later, so they are not
	// fingerprinted: a change is advice, not a write).
	Addresses []string `json:"-"`
	vpc       string
}

type nlbPort struct {
	Protocol string
	Port     int32
	NodePort int32
	Cert     string
	TG       string // target group name
	// SSLPolicy is ssl-negotiation-policy on a TLS listener ("": ELB's default, left as it is).
	SSLPolicy string `json:",omitempty"`
	// Backend is the target group's protocol when it is not the listener's own (TCP behind
	// TLS): "TLS" with backend-protocol ssl, as upstream. Omitted otherwise, so fingerprints
	// of NLBs made before it existed hold.
	Backend string `json:",omitempty"`
}

// backend is the protocol of p's target group: TLS behind a TLS listener with backend-protocol
// ssl, TCP behind one without, else the listener's protocol. ELBv2 cannot change it in place.
func (p nlbPort) backend() string {
	switch {
	case p.Backend != "":
		return p.Backend
	case p.Protocol == "TLS":
		return "TCP"
	}
	return p.Protocol
}

// nlbSync is one reconcile of an NLB: what it read, and what its writes learnt.
type nlbSync struct {
	svc     *v1.Service
	opts    *annotations.Options
	name    string
	cur     *v2types.LoadBalancer
	tags    map[string]string // nil: made by this reconcile
	listed  bool              // cur and tags are the listing's
	want    *nlbDesired
	members []string
	groups  nlbplan.SecurityGroups
	group   *types.SecurityGroup           // the Service's own group, as read
	named   map[string]v2types.TargetGroup // target groups looked up by name before a creation
	// verify: the NLB is upstream's, not yet reconciled by ccm: its target groups and node
	// rules are taken over only where their tags or descriptions prove them the Service's.
	verify bool
	have   nlbplan.FrameObserved
	target nlbTarget
	parts  nlbplan.Observed
	// applied: the desired state is the one last applied (its fingerprint is on the NLB), so
	// a difference is drift.
	applied bool
	repairs []string
	// lbStale: the NLB's entry in the listing is no longer what the cloud holds (it was made
	// or its groups changed here; or an error left that unknown).
	lbStale bool
}

// nlbTarget is what the plan compares the NLB named name (ARN arn) with.
type nlbTarget struct {
	name, arn string
	want      *nlbDesired
	members   []string
	tags      map[string]string // the NLB's as read; nil for one made by this reconcile
	newTags   map[string]string
}

// ensureNLB is EnsureLoadBalancer for type nlb, as observe → plan → apply. It reads the NLB
// (the cluster's listing, else one Describe), its security groups and the node groups, and,
// for an NLB that stays, its listeners, target groups, their attributes and targets; it plans
// the frame (nlbplan.PlanFrame: the NLB made or made again, its groups, the node rules) and the
// parts (nlbplan.Compute); it confirms the NLB's owner once when it decided on the listing's
// tags and something is to be written; then it writes the frame and the parts in their plans'
// order. A new NLB's parts are planned once it exists (it has none to read). The fingerprint
// tag says what was last applied: a difference while it still matches is drift, an Event.
func (l *loadBalancers) ensureNLB(ctx context.Context, svc *v1.Service, opts *annotations.Options, nodes []*v1.Node, mustExist bool) (_ *v1.LoadBalancerStatus, err error) {
	s, err := l.observeNLBFrame(ctx, svc, opts, nodes, mustExist)
	if err != nil {
		return nil, err
	}
	s.lbStale = true
	defer func() {
		if s.lbStale || err != nil { // after an error, whatever was written is unknown
			l.nsnap.Forget(s.name)
		}
	}()
	frame := nlbplan.PlanFrame(s.frameDesired(l.identity(svc)), s.have)
	var parts *nlbplan.Plan
	if !frame.Create {
		s.lbStale = false
		if parts, err = l.planNLBParts(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.listed && (frame.Writes() || parts.Writes()) {
		// Decided on the listing's tags, which may be its lifetime old: read them again once.
		if err := l.nlbOwnerCheck(svc, s.name, aws.ToString(s.cur.LoadBalancerArn))(ctx); err != nil {
			return nil, err
		}
	}
	if err := l.applyNLBFrame(ctx, s, frame); err != nil {
		return nil, err
	}
	if parts == nil {
		if parts, err = l.planNLBParts(ctx, s); err != nil {
			return nil, err
		}
	}
	repairs, pending, err := l.applyNLB(ctx, svc, s.target, s.parts, *parts)
	s.repairs = append(s.repairs, repairs...)
	if err != nil {
		return nil, err
	}
	return l.nlbOutcome(s, pending)
}

// planNLBParts reads the NLB's parts and plans them: its target groups (upstream's taken over
// only when their tags prove them this Service's, until ccm has completed a reconcile of it),
// listeners, attributes, targets and tags.
func (l *loadBalancers) planNLBParts(ctx context.Context, s *nlbSync) (*nlbplan.Plan, error) {
	arn, svc, want := aws.ToString(s.cur.LoadBalancerArn), s.svc, s.want
	var tgs []v2types.TargetGroup
	if s.tags != nil { // one just made has none
		var err error
		if tgs, err = l.targetGroupsOf(ctx, arn); err != nil {
			return nil, err
		}
	}
	s.target = nlbTarget{name: s.name, arn: arn, want: want, members: s.members, tags: s.tags,
		newTags: ownTags(l.identity(svc), s.opts.ExtraTags, map[string]string{fingerprintTag: fingerprint.Of(want), nodeGroupsTag: strings.Join(want.NodeGroups, " ")})}
	var err error
	if s.parts, err = l.observeNLB(ctx, svc, s.target, tgs, s.named, s.verify); err != nil {
		return nil, err
	}
	p := nlbplan.Compute(s.target.planInput(), s.parts)
	return &p, nil
}

// nlbOutcome reports the repairs of an NLB whose desired state was applied before, and its
// status once it is active and no listener waits.
func (l *loadBalancers) nlbOutcome(s *nlbSync, pending bool) (*v1.LoadBalancerStatus, error) {
	if s.applied {
		l.c.events.Repaired(s.svc, s.repairs)
	}
	if pending {
		// Not applied yet: the tags stay as they are, so the next pass goes on with it.
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s: a listener waits for a healthy target in its new target group", s.name), nlbPoll)
	}
	if s.cur.State == nil || s.cur.State.Code != v2types.LoadBalancerStateEnumActive {
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s is provisioning", s.name), nlbPoll)
	}
	return nlbStatus(s.cur), nil
}

func nlbStatus(lb *v2types.LoadBalancer) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: strings.ToLower(aws.ToString(lb.DNSName))}}}
}

// sameAddresses reports whether lb holds addrs (allocation IDs or private addresses) in its
// zones, in any order.
func sameAddresses(lb *v2types.LoadBalancer, addrs []string) bool {
	var have []string
	for _, az := range lb.AvailabilityZones {
		for _, a := range az.LoadBalancerAddresses {
			if v := aws.ToString(a.AllocationId) + aws.ToString(a.PrivateIPv4Address); v != "" {
				have = append(have, v)
			}
		}
	}
	return sameSet(have, addrs)
}

func (l *loadBalancers) nlbDesired(ctx context.Context, svc *v1.Service, opts *annotations.Options) (*nlbDesired, error) {
	d := &nlbDesired{Scheme: "internet-facing", HC: opts.HC, ExtraTags: opts.ExtraTags, TGAttributes: opts.TGAttributes,
		CrossZone: opts.CrossZone, AccessLog: opts.Attrs.AccessLog}
	if d.AccessLog {
		d.Bucket, d.Prefix = opts.Attrs.Bucket, opts.Attrs.Prefix
	}
	d.HC.Protocol, d.HC.Port, d.HC.Path = "", "", "" // in Health
	if opts.Internal {
		d.Scheme = "internal"
	}
	sn, err := l.subnets(ctx, svc, opts)
	if err != nil {
		return nil, err
	}
	d.Subnets, d.vpc = sn.IDs, sn.VPC
	for _, p := range svc.Spec.Ports {
		np := nlbPort{Protocol: string(p.Protocol), Port: p.Port, NodePort: p.NodePort}
		if opts.SSLPort(p) && p.Protocol == v1.ProtocolTCP {
			np.Protocol, np.Cert, np.SSLPolicy = "TLS", opts.SSLCert, opts.SSLPolicy
			if opts.TLSBackend {
				np.Backend = "TLS" // upstream: TLS to the nodes on every TLS listener
			}
		}
		// The protocol is in the name: a change makes a new target group (see nlbplan).
		np.TG = tgNames.Name(l.c.cfg.ClusterID(), svc.Namespace+"/"+svc.Name, fmt.Sprintf("%s%d", strings.ToLower(np.backend()), p.NodePort))
		d.Ports = append(d.Ports, np)
	}
	if d.Addresses = opts.EIPs; len(opts.PrivateIPs) > 0 {
		d.Addresses = opts.PrivateIPs
	}
	if len(d.Addresses) > 0 {
		ann, scheme := annotations.EIPAllocations, "internet-facing"
		if len(opts.PrivateIPs) > 0 {
			ann, scheme = annotations.PrivateAddresses, "internal"
		}
		if len(d.Addresses) != len(d.Subnets) {
			return nil, annotations.Error(ann, "names %d addresses for the NLB's %d subnets %v: one per subnet, in order", len(d.Addresses), len(d.Subnets), d.Subnets)
		}
		if d.Scheme != scheme {
			return nil, annotations.Error(ann, "needs an %s NLB (see %s%s)", scheme, annotations.Prefix, annotations.Internal)
		}
	}
	d.Health = l.nlbHealth(svc, opts)
	if _, port, _ := splitHealth(d.Health); port != annotations.TrafficPort {
		n, _ := strconv.Atoi(port)
		d.HCNodePort = int32(n) // admitted on the node groups as the health check NodePort is
	}
	d.SourceRanges = opts.SourceRanges
	if d.ManagedGroup = l.c.cfg.nlbGroupsManaged(); d.ManagedGroup {
		d.NamedGroups = opts.SecurityGroups
	}
	if len(d.uncoveredHealthPorts()) > 0 {
		for _, id := range d.Subnets {
			if c := sn.CIDRs[id]; c != "" && !slices.Contains(d.HealthCIDRs, c) {
				d.HealthCIDRs = append(d.HealthCIDRs, c)
			}
		}
		slices.Sort(d.HealthCIDRs)
	}
	return d, nil
}

// nlbHealth is the target groups' health check, "protocol:port:path", as upstream builds it:
// TCP on the traffic port (HTTP on the health check nodePort, path /healthz, with
// externalTrafficPolicy Local), then the healthcheck-protocol, -path and -port annotations,
// then, for a Service with externalTrafficPolicy Cluster, the shared kube-proxy probe of
// ClusterServiceLoadBalancerHealthProbeMode Shared, which wins over them.
func (l *loadBalancers) nlbHealth(svc *v1.Service, opts *annotations.Options) string {
	proto, port, path := "TCP", annotations.TrafficPort, ""
	local := svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0
	if local {
		proto, port, path = "HTTP", strconv.Itoa(int(svc.Spec.HealthCheckNodePort)), "/healthz"
	}
	if opts.HC.Protocol != "" {
		proto = opts.HC.Protocol
	}
	if proto == "TCP" {
		path = ""
	} else {
		if path == "" {
			path = "/"
		}
		if opts.HC.Path != "" {
			path = opts.HC.Path
		}
	}
	if opts.HC.Port != "" {
		port = opts.HC.Port
	}
	if p, sharedPath, ok := l.c.cfg.sharedProbe(); ok && svc.Spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyLocal {
		proto, port, path = "HTTP", strconv.Itoa(int(p)), sharedPath
	}
	return proto + ":" + port + ":" + path
}

func splitHealth(h string) (proto, port, path string) {
	f := strings.SplitN(h, ":", 3)
	return f[0], f[1], f[2]
}

// healthPorts are the nodePorts the NLB's health checks go to (TCP): the health check nodePort,
// else every traffic port.
func (d *nlbDesired) healthPorts() []int32 {
	if d.HCNodePort != 0 {
		return []int32{d.HCNodePort}
	}
	var out []int32
	for _, p := range d.Ports {
		out = append(out, p.NodePort)
	}
	return out
}

// uncoveredHealthPorts are the health ports no client rule admits from everywhere over TCP:
// the client rules do for a TCP (or TLS) traffic port when the source ranges hold 0.0.0.0/0.
// The health check nodePort is never a client port: it is admitted from the NLB's subnets
// only, as upstream admits it, so a Service's client ranges never open it (nor, through the
// healthcheck-port annotation, any other port) to its clients.
func (d *nlbDesired) uncoveredHealthPorts() []int32 {
	open := slices.Contains(d.SourceRanges, "0.0.0.0/0")
	var out []int32
	for _, port := range d.healthPorts() {
		covered := open && slices.ContainsFunc(d.Ports, func(p nlbPort) bool { return p.NodePort == port && p.Protocol != "UDP" })
		if !covered && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	return out
}

// frameDesired is what the frame is planned from.
func (s *nlbSync) frameDesired(id ownership.Identity) nlbplan.FrameDesired {
	nodes := nodeRuleOwners(id, upstream.Only(s.name, s.svc))
	nodes.Want, nodes.In = nlbNodeRules(id, s.want), s.want.NodeGroups
	return nlbplan.FrameDesired{Scheme: s.want.Scheme, Groups: s.groups, OwnRules: nlbGroupRules(id, s.want), Nodes: nodes}
}

// nodeRuleOwners says which node rules are the Service's: an NLB's rules are from CIDRs (the
// Service's classic ELB rules, from its group, are not these, during a type change either) and
// carry its description, or are upstream's for its NLB up, taken over. No rule is wanted.
func nodeRuleOwners(id ownership.Identity, up string) nlbplan.NodeRules {
	theirs := func(r rule) bool { return upstream.NLBRule(up, r) }
	return nlbplan.NodeRules{Cluster: id.Cluster, Upstream: theirs,
		Mine: func(r rule) bool { return r.CIDR != "" && (ownership.DescribedBy(id, r.Desc) || theirs(r)) }}
}

// planInput is want as the plan compares it.
func (t nlbTarget) planInput() nlbplan.Desired {
	d := nlbplan.Desired{Health: t.want.planHealth(), GroupAttributes: t.want.TGAttributes, Members: t.members, Tags: t.newTags}
	for _, p := range t.want.Ports {
		d.Ports = append(d.Ports, nlbplan.Port{Protocol: p.Protocol, Port: p.Port, Cert: p.Cert, SSLPolicy: p.SSLPolicy, Group: p.TG, Backend: p.backend(), NodePort: p.NodePort})
	}
	// Upstream's defaults are off; the bucket and prefix are compared only while logs are on
	// (ELBv2 refuses an empty bucket).
	d.Attributes = [][2]string{{"load_balancing.cross_zone.enabled", strconv.FormatBool(t.want.CrossZone)}, {"access_logs.s3.enabled", strconv.FormatBool(t.want.AccessLog)}}
	if t.want.AccessLog {
		d.Attributes = append(d.Attributes, [2]string{"access_logs.s3.bucket", t.want.Bucket}, [2]string{"access_logs.s3.prefix", t.want.Prefix})
	}
	return d
}

func (d *nlbDesired) planHealth() nlbplan.Health {
	proto, port, path := splitHealth(d.Health)
	return nlbplan.Health{Protocol: proto, Port: port, Path: path, Healthy: d.HC.Healthy, Unhealthy: d.HC.Unhealthy, Timeout: d.HC.Timeout, Interval: d.HC.Interval}
}

// groupIDs reads the node groups tag: security group IDs, space-separated.
func groupIDs(v string) []string {
	return slices.DeleteFunc(strings.Fields(v), func(g string) bool { return !annotations.SecurityGroupIDRE.MatchString(g) })
}

// nlbGroupModeManaged is the NLBSecurityGroupMode value that turns NLB groups on (upstream's
// only value, case-sensitive).
const nlbGroupModeManaged = "Managed"

func (c *Config) nlbGroupsManaged() bool {
	return c.Global.NLBSecurityGroupMode == nlbGroupModeManaged
}

// nlbGroupName is ccm's name for the group of the NLB lbName.
func nlbGroupName(lbName string) string { return "k8s-nlb-" + lbName }

// nlbGroupRules are the ingress rules of the NLB's own group: each listener port from each
// source range (TCP for TCP and TLS listeners, UDP for UDP), and ICMP 3-4 from the IPv4 ranges.
func nlbGroupRules(id ownership.Identity, want *nlbDesired) []rule {
	desc := ruleDescription(id, "client")
	var out []rule
	for _, cidr := range want.SourceRanges {
		for _, p := range want.Ports {
			proto := "tcp"
			if p.Protocol == "UDP" {
				proto = "udp"
			}
			r := rule{Proto: proto, From: p.Port, To: p.Port, CIDR: cidr, Desc: desc}
			if !slices.ContainsFunc(out, func(o rule) bool { return o.Key() == r.Key() }) {
				out = append(out, r)
			}
		}
		if !sgrules.IsIPv6(cidr) {
			out = append(out, rule{Proto: "icmp", From: 3, To: 4, CIDR: cidr, Desc: desc})
		}
	}
	return out
}

// nodeGroupsTag lists (space-separated) the node security groups an NLB's rules were added to,
// so that a later reconcile or a delete (which gets no Nodes) knows where to look. It decides
// nothing: only rules carrying this Service's description are removed (and no Service
// annotation can set a ccm.k8s.io/ tag).
const nodeGroupsTag = "ccm.k8s.io/node-groups"

// defaultRulesPerNamespace is NodeSecurityGroupRulesPerNamespace's default: two thirds of AWS's
// default quota of 60 rules per group, so one namespace cannot take every rule of a node group.
const defaultRulesPerNamespace = 40

// rulesPerNamespace is the bound on one namespace's NLB rules in a node group (0: none).
func (c *Config) rulesPerNamespace() int {
	switch n := c.Global.NodeSecurityGroupRulesPerNamespace; n {
	case 0:
		return defaultRulesPerNamespace
	case -1:
		return 0
	default:
		return n
	}
}

// nlbNodeRules are the node group rules want asks for: its source ranges on each nodePort, and
// the health check ports from the NLB's subnets where those do not admit everyone. Pure.
func nlbNodeRules(id ownership.Identity, want *nlbDesired) []rule {
	if want == nil {
		return nil
	}
	var need []rule
	for _, p := range want.Ports {
		proto := "tcp"
		if p.Protocol == "UDP" {
			proto = "udp"
		}
		for _, cidr := range want.SourceRanges {
			need = append(need, rule{Proto: proto, From: p.NodePort, To: p.NodePort, CIDR: cidr, Desc: ruleDescription(id, "client")})
		}
	}
	// The health checks come from the NLB's subnets: admitted where the rules above do not
	// admit everyone.
	if len(want.HealthCIDRs) > 0 {
		for _, port := range want.uncoveredHealthPorts() {
			for _, cidr := range want.HealthCIDRs {
				r := rule{Proto: "tcp", From: port, To: port, CIDR: cidr, Desc: ruleDescription(id, "health")}
				if !slices.ContainsFunc(need, func(n rule) bool { return n.Key() == r.Key() }) {
					need = append(need, r)
				}
			}
		}
	}
	return need
}
