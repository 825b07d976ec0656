package aws

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
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
	// ManagedGroup: NLBSecurityGroupMode Managed, the NLB has a group of its own (nlbgroup.go),
	// or, with NamedGroups (the security-groups annotation), those (nlbplan.PlanSecurityGroups).
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
	var err error
	if d.Subnets, d.vpc, err = l.subnets(ctx, svc, opts); err != nil {
		return nil, err
	}
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
		a, err := l.subnetAnswer(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, id := range d.Subnets {
			if c := a.cidrs[id]; c != "" && !slices.Contains(d.HealthCIDRs, c) {
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

func (l *loadBalancers) describeNLB(ctx context.Context, name string) (*v2types.LoadBalancer, error) {
	out, err := l.c.api.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if isCode(err, "LoadBalancerNotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeLoadBalancers (v2) %s: %w", name, err)
	}
	if len(out.LoadBalancers) == 0 {
		return nil, nil
	}
	return &out.LoadBalancers[0], nil
}

func (l *loadBalancers) tagsV2(ctx context.Context, arn string) (map[string]string, error) {
	out, err := l.c.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTags (v2): %w", err)
	}
	tags := map[string]string{}
	for _, td := range out.TagDescriptions {
		for _, t := range td.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return tags, nil
}

func v2Tags(m map[string]string) []v2types.Tag {
	var out []v2types.Tag
	for _, t := range elbTags(m) {
		out = append(out, v2types.Tag{Key: t.Key, Value: t.Value})
	}
	return out
}

func nlbStatus(lb *v2types.LoadBalancer) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: strings.ToLower(aws.ToString(lb.DNSName))}}}
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

// adviseKeptTLS reads cur's listeners when the Service's ssl-ports are some upstream reads as
// plain (rare: spaces or a "*" in a list), to say which TLS listeners are kept.
func (l *loadBalancers) adviseKeptTLS(ctx context.Context, svc *v1.Service, opts *annotations.Options, cur *v2types.LoadBalancer) error {
	if cur == nil || len(opts.PortsReadPlainOnlyByUpstream(svc)) == 0 {
		return nil
	}
	out, err := awsread.DescribeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: cur.LoadBalancerArn})
	if err != nil {
		return fmt.Errorf("aws: DescribeListeners: %w", err)
	}
	current := map[int32]string{}
	for _, ls := range out.Listeners {
		current[aws.ToInt32(ls.Port)] = string(ls.Protocol)
	}
	if msg := opts.KeepTLSListeners(svc, current); msg != "" {
		l.c.events.Advise(svc, reasonListenerKeptTLS, msg)
	}
	return nil
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

func (l *loadBalancers) attachedTGs(ctx context.Context, arn string) ([]v2types.TargetGroup, error) {
	out, err := awsread.DescribeTargetGroupsAll(ctx, l.c.api.elbv2, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetGroups: %w", err)
	}
	return out.TargetGroups, nil
}

// targetGroupsByName looks up want's target groups by their names (before an NLB is created):
// each one that exists must be this Service's by its tags (left by an interrupted try), else
// the creation is refused. It returns those found.
func (l *loadBalancers) targetGroupsByName(ctx context.Context, id ownership.Identity, want *nlbDesired) (map[string]v2types.TargetGroup, error) {
	found := map[string]v2types.TargetGroup{}
	for _, p := range want.Ports {
		tg, err := l.ownTargetGroup(ctx, id, p.TG)
		if err != nil {
			return nil, err
		}
		if tg != nil {
			found[p.TG] = *tg
		}
	}
	return found, nil
}

// ownTargetGroup finds the target group name; nil if there is none, an error if it is not
// this Service's (found by name alone, it may be anyone's).
func (l *loadBalancers) ownTargetGroup(ctx context.Context, id ownership.Identity, name string) (*v2types.TargetGroup, error) {
	out, err := l.c.api.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	if isCode(err, "TargetGroupNotFound") || (err == nil && len(out.TargetGroups) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetGroups %s: %w", name, err)
	}
	tg := out.TargetGroups[0]
	tags, err := l.tagsV2(ctx, aws.ToString(tg.TargetGroupArn))
	if err != nil {
		return nil, err
	}
	if err := ownership.Check(id, "target group", name, tags); err != nil {
		return nil, err
	}
	return &tg, nil
}

// groupIDs reads the node groups tag: security group IDs, space-separated.
func groupIDs(v string) []string {
	return slices.DeleteFunc(strings.Fields(v), func(g string) bool { return !annotations.SecurityGroupIDRE.MatchString(g) })
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

func splitHealth(h string) (proto, port, path string) {
	f := strings.SplitN(h, ":", 3)
	return f[0], f[1], f[2]
}

func (l *loadBalancers) deleteTG(ctx context.Context, svc *v1.Service, tg v2types.TargetGroup) error {
	tags, err := l.tagsV2(ctx, aws.ToString(tg.TargetGroupArn))
	if err != nil {
		return err
	}
	if !upstream.OwnsTG(l.identity(svc), tg, tags) {
		return nil
	}
	_, err = l.c.api.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: tg.TargetGroupArn})
	if isCode(err, "ResourceInUse") {
		return api.NewRetryError(fmt.Sprintf("target group %s is still in use; retrying", aws.ToString(tg.TargetGroupName)), nlbPoll)
	}
	if err != nil && !isCode(err, "TargetGroupNotFound") {
		return fmt.Errorf("aws: DeleteTargetGroup: %w", err)
	}
	return nil
}

// deleteNLB deletes svc's NLB and its target groups if this cluster owns them. Groups left by
// an interrupted delete are found again by their names.
func (l *loadBalancers) deleteNLB(ctx context.Context, svc *v1.Service) (existed bool, err error) {
	l.nsnap.Forget(l.name(svc))
	l.nsnap.Forget(upstream.LBName(svc))
	// ccm's NLB or upstream's for this Service (both names read: they were just forgotten).
	name, cur, tags, _, err := l.findNLB(ctx, svc) // read, not listed: both names were forgotten
	if err != nil {
		return false, err
	}
	defer l.nsnap.Forget(name)
	var tgs []v2types.TargetGroup
	var group *types.SecurityGroup
	if cur != nil {
		arn := aws.ToString(cur.LoadBalancerArn)
		defer l.tsnap.Forget(arn)
		if upstream.CheckLB(l.identity(svc), svc, name, tags) != nil {
			klog.InfoS("Not deleting an NLB this Service does not own", "service", klog.KObj(svc), "name", name)
			return true, nil
		}
		if tgs, err = l.attachedTGs(ctx, arn); err != nil {
			return false, err
		}
		// The NLB's own group (any mode: upstream deletes it so too), deleted after the NLB.
		if group, err = l.nlbGroupOf(ctx, svc, cur); err != nil {
			return false, err
		}
		// The tag only says where to look (it is written last, so an interrupted reconcile may
		// have added rules it does not name: the groups tagged for the cluster are looked at
		// too); what goes is decided by the rules' descriptions.
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return false, err
		}
		if err := l.removeNodeRulesNLB(ctx, svc, upstream.Only(name, svc), append(groups, groupIDs(tags[nodeGroupsTag])...)); err != nil {
			return false, err
		}
		if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: cur.LoadBalancerArn}); err != nil {
			return false, fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", name, err)
		}
		klog.InfoS("Deleted NLB", "service", klog.KObj(svc), "name", name)
	} else if svc.Annotations[annotations.Prefix+annotations.Type] == "nlb" {
		// No NLB (deleted by an interrupted delete, or never created): its node rules, in the
		// groups tagged for the cluster, carry this Service's description.
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return false, err
		}
		if err := l.removeNodeRulesNLB(ctx, svc, "", groups); err != nil {
			return false, err
		}
	}
	// Target groups by their tags: also those an interrupted reconcile left unattached, or
	// made for ports the Service has changed since.
	owned, err := l.ownedTargetGroups(ctx, l.identity(svc))
	if err != nil {
		return false, err
	}
	for _, tg := range owned {
		if !slices.ContainsFunc(tgs, func(a v2types.TargetGroup) bool {
			return aws.ToString(a.TargetGroupArn) == aws.ToString(tg.TargetGroupArn)
		}) {
			tgs = append(tgs, tg)
		}
	}
	for _, tg := range tgs {
		if err := l.deleteTG(ctx, svc, tg); err != nil {
			return false, err
		}
	}
	// Without its group on the NLB (deleted by an interrupted delete, or detached when the
	// Service named groups), the Service's own is looked for by its tags.
	if group != nil || ((cur == nil || len(cur.SecurityGroups) > 0) && l.c.cfg.nlbGroupsManaged() && svc.Annotations[annotations.Prefix+annotations.Type] == "nlb") {
		if err := l.deleteNLBGroup(ctx, svc, name, group); err != nil {
			return false, err
		}
	}
	return cur != nil, nil
}
