package aws

// A classic ELB's reconcile as observe → plan → apply. desired is what the Service asks for;
// elbobserve.go reads the ELB, its attributes and its security groups, writing nothing;
// package elbplan (pure) says what differs on the ELB, and planELBGroups (with sgrules) what
// differs on its groups: its own group (made, or taken over from upstream, its rules from the
// source ranges on the listener ports) or the groups the Service or the config names, the
// extra groups, and the node groups' rules that let the ELB's first group reach the nodePorts.
// elbapply.go checks ownership once, then writes exactly the difference.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

// desired is what the fingerprint covers: everything but the member instances, which are
// compared with the ELB's own list so a node change is exactly one write.
type desired struct {
	Scheme         string
	Subnets        []string
	SecurityGroups []string
	Listeners      []string
	HealthCheck    string
	HC             annotations.HCOptions
	CrossZone      bool
	ExtraTags      map[string]string
	SourceRanges   []string
	NodeGroups     []string
	OwnGroup       bool // a security group made for this ELB (no annotation, no ElbSecurityGroup)
	// ProxyProtocol is omitted when off so the fingerprints of ELBs made before it existed hold
	// (TestGoldenNamesAndFingerprints pins them).
	ProxyProtocol bool `json:",omitempty"`
	// Attrs are the idle timeout, draining and access log attributes; nil when they are
	// upstream's defaults (60s, off, off), so the fingerprints of ELBs made before hold.
	Attrs *annotations.ELBAttrs `json:",omitempty"`
	// SSLPolicy and ExtraGroups likewise.
	SSLPolicy   string   `json:",omitempty"`
	ExtraGroups []string `json:",omitempty"`

	groupIDs []string // the groups to attach; not fingerprinted (an ID is known only after creation)
	named    bool     // SecurityGroups come from the annotation (checked before use), not the config
	vpc      string
}

// attrs are the ELB's attributes, upstream's defaults when the Service sets none.
func (d *desired) attrs() annotations.ELBAttrs {
	if d.Attrs == nil {
		return annotations.ELBAttrs{IdleTimeout: 60}
	}
	return *d.Attrs
}

// nodePorts are the ports the ELB reaches the nodes on: its listeners' instance ports and an
// HTTP health check's port.
func (d *desired) nodePorts() []int32 {
	var out []int32
	for _, s := range d.Listeners {
		out = append(out, aws.ToInt32(elbplan.ListenerOf(s).InstancePort))
	}
	if _, rest, ok := strings.Cut(d.HealthCheck, ":"); ok {
		digits, _, _ := strings.Cut(rest, "/")
		if hc, err := strconv.Atoi(digits); err == nil && hc > 0 {
			out = append(out, int32(hc))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ensureClassic reconciles svc's classic ELB as observe → plan → apply: it reads the ELB (the
// cluster's listing, else one Describe; the cross-zone attribute), its groups and the node
// groups; plans the groups' writes (planELBGroups) and the ELB's (elbplan.Compute); confirms
// the ELB's owner once when it decided on the listing's tags and something is to be written;
// then writes the groups, the ELB (made, or made again for a scheme change), the plan, the
// unused own group's delete and the tags. Nothing differs: no write. The fingerprint tag says
// what was last applied: a difference while it still matches is drift, reported as an Event.
func (l *loadBalancers) ensureClassic(ctx context.Context, svc *v1.Service, opts *annotations.Options, nodes []*v1.Node, mustExist bool) (_ *v1.LoadBalancerStatus, err error) {
	r, err := l.observeClassic(ctx, svc, opts, nodes, mustExist)
	if err != nil {
		return nil, err
	}
	planELBGroups(r.id, r.want, r.groups)
	r.planExisting()
	defer func() {
		if r.stale || err != nil { // the next look reads the ELB as written
			l.snap.Forget(r.name)
		}
	}()
	if r.listed && r.writes() {
		// Decided on the listing's tags, which may be its lifetime old: read them again once.
		if err := l.elbOwnerCheck(svc, r.name)(ctx); err != nil {
			return nil, err
		}
	}
	groupRepairs, err := l.applyELBGroups(ctx, svc, r.name, r.want, r.groups)
	if err != nil {
		return nil, err
	}
	repairs, err := l.applyClassic(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	if r.applied {
		l.c.events.Repaired(svc, append(groupRepairs, repairs...))
	}
	if err := l.tagClassic(ctx, r); err != nil {
		return nil, err
	}
	return status(r.cur), nil
}

// classicRun is one reconcile of an ELB: the members, the ELB found (cur nil: none; tags its
// tags; listed: both from the listing), the desired state with its fingerprint, its groups,
// and its plan.
type classicRun struct {
	svc     *v1.Service
	name    string
	cur     *elbtypes.LoadBalancerDescription
	tags    map[string]string
	listed  bool
	members []string
	want    *desired
	fp      string
	id      ownership.Identity
	groups  *elbGroups
	have    elbplan.Observed // cur's attributes, read
	plan    elbplan.Plan
	planned bool // plan is computed (an existing ELB whose groups are known)
	// applied: the desired state is the one last applied, so a difference is drift.
	applied bool
	stale   bool // the ELB's entry in the listing is no longer what the cloud holds
}

// planExisting plans the existing ELB's changes once the groups it is to have are known.
func (r *classicRun) planExisting() {
	if r.cur != nil && r.groups.planned {
		r.plan, r.planned = elbplan.Compute(r.want.planDesired(), r.members, r.have), true
	}
}

// tagsDue says whether the ELB's tags are to be written: its fingerprint or ownership tags
// (after the user's) are not what they should be.
func (r *classicRun) tagsDue() bool {
	return r.tags == nil || fingerprint.Changed(r.tags[fingerprintTag], r.fp) || ownership.NeedsUID(r.id, r.tags) || !tagsHold(r.tags, ownTags(r.id, r.want.ExtraTags, nil))
}

// writes says whether the reconcile writes anything: a plan not computed yet (a group to
// make first) does.
func (r *classicRun) writes() bool {
	return r.cur == nil || r.groups.writes() || !r.planned || !r.plan.Empty() || r.tagsDue()
}

func (l *loadBalancers) desired(ctx context.Context, svc *v1.Service, opts *annotations.Options, name string, nodeGroups []string) (*desired, error) {
	d := &desired{Scheme: "internet-facing", HC: opts.HC, CrossZone: opts.CrossZone, ExtraTags: opts.ExtraTags, NodeGroups: nodeGroups, ProxyProtocol: opts.ProxyProtocol,
		SSLPolicy: opts.SSLPolicy, ExtraGroups: opts.ExtraGroups}
	d.HC.Protocol, d.HC.Port, d.HC.Path = "", "", "" // in HealthCheck
	if opts.Attrs != (annotations.ELBAttrs{IdleTimeout: 60}) {
		a := opts.Attrs
		d.Attrs = &a
	}
	if opts.Internal {
		d.Scheme = "internal"
	}
	sn, err := l.subnets(ctx, svc, opts)
	if err != nil {
		return nil, err
	}
	d.Subnets, d.vpc = sn.IDs, sn.VPC
	d.SecurityGroups = opts.SecurityGroups
	d.named = len(d.SecurityGroups) > 0
	if len(d.SecurityGroups) == 0 && l.c.cfg.Global.ElbSecurityGroup != "" {
		d.SecurityGroups = []string{l.c.cfg.Global.ElbSecurityGroup}
	}
	d.OwnGroup = len(d.SecurityGroups) == 0
	d.SourceRanges = opts.SourceRanges
	for _, p := range svc.Spec.Ports {
		// Upstream's listeners: on a TLS port the backend protocol picks HTTPS or SSL in front;
		// elsewhere only "http" makes an HTTP listener, and https or ssl are plain TCP (their
		// health check is SSL, below).
		proto, iproto := strings.ToUpper(opts.Backend), strings.ToUpper(opts.Backend)
		if opts.SSLPort(p) {
			proto = map[string]string{"HTTP": "HTTPS", "HTTPS": "HTTPS", "TCP": "SSL", "SSL": "SSL"}[iproto]
		} else if iproto == "HTTPS" || iproto == "SSL" {
			proto, iproto = "TCP", "TCP"
		}
		cert := ""
		if opts.SSLPort(p) {
			cert = opts.SSLCert
		}
		d.Listeners = append(d.Listeners, fmt.Sprintf("%s:%d:%s:%d:%s", proto, p.Port, iproto, p.NodePort, cert))
	}
	d.HealthCheck = l.classicHealth(svc, opts)
	return d, nil
}

// classicHealth is the ELB's health check target as upstream builds it: with
// externalTrafficPolicy Local HTTP on the health check nodePort at /healthz; else TCP (SSL with
// backend-protocol https or ssl) on the first nodePort, or the shared kube-proxy probe of
// ClusterServiceLoadBalancerHealthProbeMode Shared; then the healthcheck-protocol, -port
// ("traffic-port": the first nodePort) and -path annotations (path default /).
func (l *loadBalancers) classicHealth(svc *v1.Service, opts *annotations.Options) string {
	first := firstNodePort(svc)
	var proto, path string
	var port int32
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		proto, port, path = "HTTP", svc.Spec.HealthCheckNodePort, "/healthz"
	} else if p, sharedPath, ok := l.c.cfg.sharedProbe(); ok {
		proto, port, path = "HTTP", int32(p), sharedPath // nodePorts() admits it from the ELB's group
	} else {
		proto, port = "TCP", first
		if opts.Backend == "https" || opts.Backend == "ssl" {
			proto = "SSL"
		}
	}
	if opts.HC.Protocol != "" {
		proto = opts.HC.Protocol
	}
	switch opts.HC.Port {
	case "":
	case annotations.TrafficPort:
		port = first
	default:
		n, _ := strconv.Atoi(opts.HC.Port)
		port = int32(n)
	}
	if proto != "HTTP" && proto != "HTTPS" {
		return fmt.Sprintf("%s:%d", proto, port)
	}
	if path == "" {
		path = "/"
	}
	if opts.HC.Path != "" {
		path = opts.HC.Path
	}
	return fmt.Sprintf("%s:%d%s", proto, port, path)
}

func firstNodePort(svc *v1.Service) int32 {
	if len(svc.Spec.Ports) == 0 {
		return 0
	}
	return svc.Spec.Ports[0].NodePort
}

// planDesired is want as the plan compares it.
func (d *desired) planDesired() elbplan.Desired {
	return elbplan.Desired{Scheme: d.Scheme, Listeners: d.Listeners, HealthCheck: d.HealthCheck,
		Interval: d.HC.Interval, Timeout: d.HC.Timeout, Healthy: d.HC.Healthy, Unhealthy: d.HC.Unhealthy,
		CrossZone: d.CrossZone, Attrs: elbplan.Attrs(d.attrs()), Subnets: d.Subnets, Groups: d.groupIDs,
		ProxyProtocol: d.ProxyProtocol, SSLPolicy: d.SSLPolicy}
}

// elbGroups is what was read of an ELB's groups, and what is planned for them.
type elbGroups struct {
	own *types.SecurityGroup // the ELB's own group as read, when it is to have one (nil: none yet)
	// seen is own as the plan compares it (Upstream: upstream's, to be taken over).
	seen  *sgrules.Group
	nodes []sgrules.Group // the node groups, as read
	// unused is the ELB's own group once the ELB uses named groups instead (deleted, with the
	// rules from it).
	unused *types.SecurityGroup
	plan   *sgrules.Own // the own group's writes (nil: the ELB has none)
	// changes are the node groups' writes, known once the ELB's first group is (planned with
	// the own group's ID, or after the group is made).
	changes []sgrules.Change
	planned bool
}

// writes says whether the groups' plan writes anything; a group still to be made does.
func (g *elbGroups) writes() bool {
	return g.plan.Writes() || len(g.changes) > 0 || g.unused != nil
}

// planELBGroups plans the own group's writes and, once the ELB's groups are known, the node
// groups'. The groups the ELB is to have are set in want.groupIDs.
func planELBGroups(id ownership.Identity, want *desired, g *elbGroups) {
	if want.OwnGroup {
		var rs []rule
		for _, ls := range want.Listeners {
			port := elbplan.ListenerOf(ls).LoadBalancerPort
			for _, cidr := range want.SourceRanges {
				rs = append(rs, rule{Proto: "tcp", From: port, To: port, CIDR: cidr, Desc: ruleDescription(id, "client")})
			}
		}
		g.plan = sgrules.PlanOwn(g.seen, rs)
		if g.plan.Create {
			return // the node rules name the group: planned once it is made
		}
	}
	want.groupIDs = elbGroupIDs(want)
	g.planNodeRules(id, want)
}

// elbGroupIDs are the groups the ELB is to have: its own or the named ones, then the extra
// groups (attached besides them, as upstream; the node rules stay from the first).
func elbGroupIDs(want *desired) []string {
	ids := slices.Clone(want.groupIDs)
	for _, g := range want.ExtraGroups {
		if !slices.Contains(ids, g) {
			ids = append(ids, g)
		}
	}
	return ids
}

// planNodeRules plans the node groups' rules from the ELB's first group on its nodePorts. The
// ELB's rules in node groups are from a group (the Service's NLB rules, from CIDRs, are not
// these); rules from the ELB's own group are its own, described or not (earlier versions
// admitted all traffic from it without a description).
func (g *elbGroups) planNodeRules(id ownership.Identity, want *desired) {
	g.planned = true
	if len(want.groupIDs) == 0 || len(g.nodes) == 0 {
		return
	}
	from, ownID := want.groupIDs[0], ""
	if g.plan != nil {
		ownID = from
	}
	var need []rule
	for _, p := range want.nodePorts() {
		need = append(need, rule{Proto: "tcp", From: p, To: p, Group: from, Desc: ruleDescription(id, "elb")})
	}
	wanted := map[string][]rule{}
	for _, n := range g.nodes {
		wanted[n.ID] = need
	}
	g.changes = sgrules.PlanGroups(g.nodes, wanted, func(r rule) bool {
		return r.Group != "" && (ownership.DescribedBy(id, r.Desc) || r.Group == ownID)
	})
}

// status is the ELB's DNS name, lower-cased: ELB keeps the case of the load balancer name in
// it (hashed names carry an upper-case marker) and Kubernetes accepts only lower-case hostnames.
func status(d *elbtypes.LoadBalancerDescription) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: strings.ToLower(aws.ToString(d.DNSName))}}}
}
