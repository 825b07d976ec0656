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
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
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
	HC        hcOptions
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

func (l *loadBalancers) nlbDesired(ctx context.Context, svc *v1.Service, opts *lbOptions) (*nlbDesired, error) {
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
		if opts.sslPort(p) && p.Protocol == v1.ProtocolTCP {
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
		ann, scheme := annEIPAllocations, "internet-facing"
		if len(opts.PrivateIPs) > 0 {
			ann, scheme = annPrivateAddresses, "internal"
		}
		if len(d.Addresses) != len(d.Subnets) {
			return nil, annotationError(ann, "names %d addresses for the NLB's %d subnets %v: one per subnet, in order", len(d.Addresses), len(d.Subnets), d.Subnets)
		}
		if d.Scheme != scheme {
			return nil, annotationError(ann, "needs an %s NLB (see %s%s)", scheme, annotationPrefix, annInternal)
		}
	}
	d.Health = l.nlbHealth(svc, opts)
	if _, port, _ := splitHealth(d.Health); port != trafficPort {
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
func (l *loadBalancers) nlbHealth(svc *v1.Service, opts *lbOptions) string {
	proto, port, path := "TCP", trafficPort, ""
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

// nlbSync is one reconcile of an NLB: what it found and decided before the plan.
type nlbSync struct {
	svc       *v1.Service
	opts      *lbOptions
	name      string
	cur       *v2types.LoadBalancer
	tags      map[string]string // nil: made by this reconcile
	want      *nlbDesired
	groups    nlbplan.SecurityGroups
	group     *types.SecurityGroup           // the NLB's own (nlbgroup.go)
	named     map[string]v2types.TargetGroup // target groups looked up by name before a creation
	recreated bool
	repairs   []string
	// applied: the desired state is the one last applied (its fingerprint is on the NLB), so
	// a difference is drift.
	applied bool
	// lbStale: the NLB's entry in the listing is no longer what the cloud holds (it was made
	// or its groups changed here; or an error left that unknown).
	lbStale bool
}

// ensureNLB is EnsureLoadBalancer for type nlb: desired against observed (the cluster's
// listing, else one Describe; its listeners, target groups, their attributes and targets; the
// node rules), then only the difference is written. The NLB itself (made, or made again for a
// scheme change) and its security groups come first; then its parts as observe → plan → apply
// (nlbapply.go). The fingerprint tag says what was last applied: a difference while it still
// matches is drift, reported as an Event.
func (l *loadBalancers) ensureNLB(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node, mustExist bool) (_ *v1.LoadBalancerStatus, err error) {
	if opts.nlbGroupIDErr != nil && l.c.cfg.nlbGroupsManaged() {
		return nil, opts.nlbGroupIDErr
	}
	members, nodeGroups, err := l.members(ctx, opts, nodes)
	if err != nil {
		return nil, err
	}
	// ccm's NLB, or the one the upstream CCM made for this Service (taken over in place); from
	// the listing when it holds it active, else read.
	name, cur, tags, listed, err := l.findNLB(ctx, svc)
	if err != nil {
		return nil, err
	}
	if err := l.adviseKeptTLS(ctx, svc, opts, cur); err != nil {
		return nil, err
	}
	want, err := l.nlbDesired(ctx, svc, opts)
	if err != nil {
		return nil, err
	}
	want.NodeGroups = nodeGroups
	if err := l.checkNamespaceRulesBefore(ctx, l.identity(svc), want); err != nil {
		return nil, err
	}
	if cur == nil && mustExist {
		return nil, errNotCreatedYet
	}
	if listed {
		// Decided on the listing's tags: read them again before the first write, if any.
		ctx = confirmBeforeWrites(ctx, l.nlbOwnerCheck(svc, name, aws.ToString(cur.LoadBalancerArn)))
	}
	s := &nlbSync{svc: svc, opts: opts, name: name, cur: cur, tags: tags, want: want, lbStale: true}
	defer func() {
		if s.lbStale || err != nil { // after an error, whatever was written is unknown
			l.nsnap.forget(name)
		}
	}()
	if err := l.prepareNLB(ctx, s); err != nil {
		return nil, err
	}
	if s.cur == nil {
		err = l.createNLB(ctx, s)
	} else {
		err = l.existingNLBGroups(ctx, s)
	}
	if err != nil {
		return nil, err
	}
	if s.groups.DropOwn || (len(s.groups.Named) > 0 && s.group == nil) {
		// Detached (or on the NLB a scheme change replaced): the Service's own group goes.
		l.dropOwnNLBGroup(ctx, svc, name, want, s.group)
	}
	pending, err := l.syncNLBParts(ctx, s, members)
	if err != nil {
		return nil, err
	}
	if s.applied {
		l.c.events.Repaired(svc, s.repairs)
	}
	if pending {
		// Not applied yet: the tags stay as they are, so the next pass goes on with it.
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s: a listener waits for a healthy target in its new target group", name), nlbPoll)
	}
	if s.cur.State == nil || s.cur.State.Code != v2types.LoadBalancerStateEnumActive {
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s is provisioning", name), nlbPoll)
	}
	return nlbStatus(s.cur), nil
}

// adviseKeptTLS reads cur's listeners when the Service's ssl-ports are some upstream reads as
// plain (rare: spaces or a "*" in a list), to say which TLS listeners are kept.
func (l *loadBalancers) adviseKeptTLS(ctx context.Context, svc *v1.Service, opts *lbOptions, cur *v2types.LoadBalancer) error {
	if cur == nil || len(opts.portsReadPlainOnlyByUpstream(svc)) == 0 {
		return nil
	}
	out, err := describeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: cur.LoadBalancerArn})
	if err != nil {
		return fmt.Errorf("aws: DescribeListeners: %w", err)
	}
	current := map[int32]string{}
	for _, ls := range out.Listeners {
		current[aws.ToInt32(ls.Port)] = string(ls.Protocol)
	}
	if msg := opts.keepTLSListeners(svc, current); msg != "" {
		l.c.events.Advise(svc, reasonListenerKeptTLS, msg)
	}
	return nil
}

// prepareNLB checks what must hold before anything is written (the NLB is the Service's, the
// Elastic IPs of an NLB about to be made, the named groups), plans the NLB's security groups,
// and deletes an NLB whose scheme changes.
func (l *loadBalancers) prepareNLB(ctx context.Context, s *nlbSync) error {
	id, want := l.identity(s.svc), s.want
	if s.cur != nil {
		if err := checkLB(id, s.svc, s.name, s.tags); err != nil {
			return err
		}
		if want.ManagedGroup {
			var err error
			if s.group, err = l.nlbGroupOf(ctx, s.svc, s.cur); err != nil {
				return err
			}
		}
	}
	if len(s.opts.EIPs) > 0 && (s.cur == nil || string(s.cur.Scheme) != want.Scheme) {
		if err := l.checkEIPs(ctx, id, s.opts.EIPs); err != nil {
			return err
		}
	}
	kept := s.cur != nil && string(s.cur.Scheme) == want.Scheme
	var curGroups []string
	if kept {
		curGroups = s.cur.SecurityGroups
	}
	s.groups = nlbplan.PlanSecurityGroups(annotationPrefix+annSecurityGroup, want.ManagedGroup, s.opts.SecurityGroups, kept, curGroups, groupIDOf(s.group))
	if s.groups.Advice != "" {
		l.c.events.Advise(s.svc, reasonUnusedAnnotation, s.groups.Advice)
	}
	if len(s.groups.Named) > 0 {
		if err := l.checkNamedGroups(ctx, id, annSecurityGroup, s.groups.Named); err != nil {
			return err
		}
	}
	if s.cur == nil || kept {
		return nil
	}
	// An NLB cannot change its scheme: it is deleted and made again, with new addresses and DNS
	// name. Its target groups stay and are attached to the new one. Owned: checkLB above, on
	// tags read now or, when listed, read again before this first write (confirmBeforeWrites).
	l.c.events.Event(s.svc, v1.EventTypeNormal, svcevents.ReasonRecreated,
		fmt.Sprintf("recreating load balancer %s: its scheme changes to %s, which an NLB cannot do in place; its addresses and DNS name change", s.name, want.Scheme))
	if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: s.cur.LoadBalancerArn}); err != nil {
		return fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", s.name, err)
	}
	klog.InfoS("Deleted NLB to change its scheme", "service", klog.KObj(s.svc), "name", s.name, "scheme", want.Scheme)
	l.tsnap.forget(aws.ToString(s.cur.LoadBalancerArn)) // its target groups are listed by its ARN
	s.cur, s.tags, s.recreated = nil, nil, true
	return nil
}

// createNLB makes the NLB, after its own group and rules (so it admits its clients from the
// start), once the target groups its names would take are proven none of anyone else's.
func (l *loadBalancers) createNLB(ctx context.Context, s *nlbSync) error {
	id, want, svc := l.identity(s.svc), s.want, s.svc
	var err error
	if s.named, err = l.targetGroupsByName(ctx, id, want); err != nil {
		return err
	}
	// Creating: this may be a type change, so the Service's classic ELB goes first.
	hadELB, err := l.deleteClassic(ctx, svc)
	if err != nil {
		return err
	}
	if !hadELB && !s.recreated && len(svc.Status.LoadBalancer.Ingress) > 0 {
		s.repairs = append(s.repairs, "the load balancer was deleted")
		s.applied = true
	}
	in := &elbv2.CreateLoadBalancerInput{Name: aws.String(s.name), Type: v2types.LoadBalancerTypeEnumNetwork,
		Scheme: v2types.LoadBalancerSchemeEnum(want.Scheme), Subnets: want.Subnets, Tags: v2Tags(ownTags(id, s.opts.ExtraTags, nil))}
	switch {
	case s.groups.Own:
		// The group kept from the NLB a scheme change replaced, else ccm's.
		if s.group == nil {
			if s.group, err = l.newNLBGroup(ctx, svc, s.name, want); err != nil {
				return err
			}
		}
		if _, err := l.syncNLBGroup(ctx, svc, s.group, want); err != nil {
			return err
		}
		in.SecurityGroups = []string{aws.ToString(s.group.GroupId)}
	case len(s.groups.Named) > 0:
		in.SecurityGroups = s.groups.Named
	}
	if len(want.Addresses) > 0 {
		in.Subnets = nil
		for i, sn := range want.Subnets {
			m := v2types.SubnetMapping{SubnetId: aws.String(sn)}
			if len(s.opts.EIPs) > 0 {
				m.AllocationId = aws.String(want.Addresses[i])
			} else {
				m.PrivateIPv4Address = aws.String(want.Addresses[i])
			}
			in.SubnetMappings = append(in.SubnetMappings, m)
		}
	}
	out, err := l.c.api.elbv2.CreateLoadBalancer(ctx, in)
	if err != nil {
		return fmt.Errorf("aws: CreateLoadBalancer (v2) %s: %w", s.name, err)
	}
	if len(out.LoadBalancers) == 0 || aws.ToString(out.LoadBalancers[0].LoadBalancerArn) == "" {
		return errEmptyAnswer("CreateLoadBalancer (v2)", s.name)
	}
	s.cur, s.tags = &out.LoadBalancers[0], nil
	klog.InfoS("Created NLB", "service", klog.KObj(svc), "name", s.name)
	return nil
}

// existingNLBGroups makes an existing NLB's security groups the planned ones: its own group's
// rules, and the groups it has.
func (l *loadBalancers) existingNLBGroups(ctx context.Context, s *nlbSync) error {
	s.applied = !fingerprint.Changed(s.tags[fingerprintTag], fingerprint.Of(s.want)) && !ownership.NeedsUID(l.identity(s.svc), s.tags)
	if s.groups.Own {
		if s.group == nil {
			// Its groups are none of the Service's own (it named them until now): its own
			// replaces them, as upstream. They are the user's and stay as they are, where
			// upstream deletes a detached one tagged cluster-owned: a deliberate difference.
			var err error
			if s.group, err = l.newNLBGroup(ctx, s.svc, s.name, s.want); err != nil {
				return err
			}
		}
		changes, err := l.syncNLBGroup(ctx, s.svc, s.group, s.want)
		if err != nil {
			return err
		}
		s.repairs = append(s.repairs, changes...)
	} else if s.want.ManagedGroup && len(s.cur.SecurityGroups) == 0 {
		klog.V(2).InfoS("NLB has no security group and AWS cannot add one; left as it is (as upstream)", "service", klog.KObj(s.svc), "name", s.name)
	}
	changes, err := l.setNLBGroups(ctx, s.svc, s.cur, s.groups, s.group)
	if err != nil {
		return err
	}
	s.repairs = append(s.repairs, changes...)
	s.lbStale = len(changes) > 0 // the NLB's groups, as the listing holds them
	return nil
}

// syncNLBParts makes the node rules, then the NLB's target groups, listeners, attributes,
// targets and tags, as observe → plan → apply. It says whether a listener still waits for a
// healthy target in its new target group.
func (l *loadBalancers) syncNLBParts(ctx context.Context, s *nlbSync, members []string) (bool, error) {
	arn, svc, want := aws.ToString(s.cur.LoadBalancerArn), s.svc, s.want
	if s.tags != nil && len(want.Addresses) > 0 && !sameAddresses(s.cur, want.Addresses) {
		l.c.events.Advise(svc, reasonUnusedAnnotation, fmt.Sprintf("%s%s / %s: the NLB's addresses are not the ones named; AWS sets them only when an NLB is created (as upstream, ccm does not recreate it): recreate the Service to apply them",
			annotationPrefix, annEIPAllocations, annPrivateAddresses))
	}
	// Until ccm has completed a reconcile of it (its fingerprint is on it), target groups the
	// upstream CCM attached are taken over only when their tags prove them this Service's.
	verify := s.name == upstreamName(svc) && s.tags[fingerprintTag] == ""
	if err := l.syncNLBRules(ctx, s, verify); err != nil {
		return false, err
	}
	tgs, err := l.targetGroupsOf(ctx, arn)
	if err != nil {
		return false, err
	}
	t := nlbTarget{name: s.name, arn: arn, want: want, members: members, tags: s.tags,
		newTags: ownTags(l.identity(svc), s.opts.ExtraTags, map[string]string{fingerprintTag: fingerprint.Of(want), nodeGroupsTag: strings.Join(want.NodeGroups, " ")})}
	have, err := l.observeNLB(ctx, svc, t, tgs, s.named, verify)
	if err != nil {
		return false, err
	}
	repairs, pending, err := l.applyNLB(ctx, svc, t, have, nlbplan.Compute(t.planInput(), have))
	s.repairs = append(s.repairs, repairs...)
	return pending, err
}

// syncNLBRules makes the node groups admit the NLB's clients and health checks, and revokes the
// Service's rules from the groups of an earlier reconcile (the NLB's tag says which).
func (l *loadBalancers) syncNLBRules(ctx context.Context, s *nlbSync, verify bool) error {
	prevGroups := groupIDs(s.tags[nodeGroupsTag])
	if verify {
		// Upstream's node rules for this NLB are in the node groups (it named none in a tag).
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return err
		}
		prevGroups = append(prevGroups, groups...)
	}
	changes, err := l.nodeRulesNLB(ctx, s.svc, upstreamOnly(s.name, s.svc), append(slices.Clone(s.want.NodeGroups), prevGroups...), s.want)
	s.repairs = append(s.repairs, changes...)
	return err
}

func (l *loadBalancers) attachedTGs(ctx context.Context, arn string) ([]v2types.TargetGroup, error) {
	out, err := describeTargetGroupsAll(ctx, l.c.api.elbv2, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(arn)})
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
	return slices.DeleteFunc(strings.Fields(v), func(g string) bool { return !sgIDRE.MatchString(g) })
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
	if !ownsTG(l.identity(svc), tg, tags) {
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
	l.nsnap.forget(l.name(svc))
	l.nsnap.forget(upstreamName(svc))
	// ccm's NLB or upstream's for this Service (both names read: they were just forgotten).
	name, cur, tags, _, err := l.findNLB(ctx, svc) // read, not listed: both names were forgotten
	if err != nil {
		return false, err
	}
	defer l.nsnap.forget(name)
	var tgs []v2types.TargetGroup
	var group *types.SecurityGroup
	if cur != nil {
		arn := aws.ToString(cur.LoadBalancerArn)
		defer l.tsnap.forget(arn)
		if checkLB(l.identity(svc), svc, name, tags) != nil {
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
		if _, err := l.nodeRulesNLB(ctx, svc, upstreamOnly(name, svc), append(groups, groupIDs(tags[nodeGroupsTag])...), nil); err != nil {
			return false, err
		}
		if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: cur.LoadBalancerArn}); err != nil {
			return false, fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", name, err)
		}
		klog.InfoS("Deleted NLB", "service", klog.KObj(svc), "name", name)
	} else if svc.Annotations[annotationPrefix+annType] == "nlb" {
		// No NLB (deleted by an interrupted delete, or never created): its node rules, in the
		// groups tagged for the cluster, carry this Service's description.
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return false, err
		}
		if _, err := l.nodeRulesNLB(ctx, svc, "", groups, nil); err != nil {
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
	if group != nil || ((cur == nil || len(cur.SecurityGroups) > 0) && l.c.cfg.nlbGroupsManaged() && svc.Annotations[annotationPrefix+annType] == "nlb") {
		if err := l.deleteNLBGroup(ctx, svc, name, group); err != nil {
			return false, err
		}
	}
	return cur != nil, nil
}
