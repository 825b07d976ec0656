package aws

import (
	"context"
	"fmt"
	"maps"
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
	// or, with NamedGroups (the security-groups annotation), those (nlbgroupplan.go).
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
		// The protocol is in the name: a change makes a new target group (see reconcileNLB).
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

// ensureNLB is EnsureLoadBalancer for type nlb: desired against observed (the cluster's
// listing, else one Describe; its listeners, target groups, their attributes and targets; the
// node rules), then only the difference is written. The fingerprint tag says what was last
// applied: a difference while it still matches is drift, reported as an Event.
func (l *loadBalancers) ensureNLB(ctx context.Context, svc *v1.Service, opts *lbOptions, nodes []*v1.Node, mustExist bool) (*v1.LoadBalancerStatus, error) {
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
	if cur != nil && len(opts.portsReadPlainOnlyByUpstream(svc)) > 0 {
		// Rare (ssl-ports with spaces or a "*" in a list): its listeners are read for this.
		out, err := describeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: cur.LoadBalancerArn})
		if err != nil {
			return nil, fmt.Errorf("aws: DescribeListeners: %w", err)
		}
		current := map[int32]string{}
		for _, ls := range out.Listeners {
			current[aws.ToInt32(ls.Port)] = string(ls.Protocol)
		}
		if msg := opts.keepTLSListeners(svc, current); msg != "" {
			l.c.events.Advise(svc, reasonListenerKeptTLS, msg)
		}
	}
	want, err := l.nlbDesired(ctx, svc, opts)
	if err != nil {
		return nil, err
	}
	want.NodeGroups = nodeGroups
	fp := fingerprint.Of(want)
	id := l.identity(svc)
	if err := l.checkNamespaceRulesBefore(ctx, id, want); err != nil {
		return nil, err
	}
	if cur == nil && mustExist {
		return nil, errNotCreatedYet
	}
	if listed {
		// Decided on the listing's tags: read them again before the first write, if any.
		ctx = confirmBeforeWrites(ctx, l.nlbOwnerCheck(svc, name, aws.ToString(cur.LoadBalancerArn)))
	}
	var repairs []string
	wrote := true // until proven otherwise (an error path leaves the listing unused for name)
	defer func() {
		if wrote {
			l.nsnap.forget(name)
		}
	}()
	applied := false        // the desired state is the one last applied (its fingerprint is on the NLB)
	var prevGroups []string // node groups of an earlier reconcile, from the NLB's tag: where to look
	var named map[string]v2types.TargetGroup
	recreated := false
	var group *types.SecurityGroup // the NLB's own (nlbgroup.go)
	if cur != nil {
		if err := checkLB(id, svc, name, tags); err != nil {
			return nil, err
		}
		if want.ManagedGroup {
			if group, err = l.nlbGroupOf(ctx, svc, cur); err != nil {
				return nil, err
			}
		}
	}
	// The Elastic IPs of an NLB about to be made, before anything is written.
	if len(opts.EIPs) > 0 && (cur == nil || string(cur.Scheme) != want.Scheme) {
		if err := l.checkEIPs(ctx, id, opts.EIPs); err != nil {
			return nil, err
		}
	}
	// The NLB's groups; named ones are checked before anything is written.
	kept := cur != nil && string(cur.Scheme) == want.Scheme
	var curGroups []string
	if kept {
		curGroups = cur.SecurityGroups
	}
	plan := planNLBGroups(want.ManagedGroup, opts.SecurityGroups, kept, curGroups, groupIDOf(group))
	if plan.Advice != "" {
		l.c.events.Advise(svc, reasonUnusedAnnotation, plan.Advice)
	}
	if len(plan.Named) > 0 {
		if err := l.checkNamedGroups(ctx, id, annSecurityGroup, plan.Named); err != nil {
			return nil, err
		}
	}
	if cur != nil {
		if string(cur.Scheme) != want.Scheme {
			// An NLB cannot change its scheme: it is deleted and made again below, with new
			// addresses and DNS name. Its target groups stay and are attached to the new one.
			// Owned: checkLB above, on tags read now or, when listed, read again before this
			// first write (confirmBeforeWrites).
			l.c.events.Event(svc, v1.EventTypeNormal, svcevents.ReasonRecreated,
				fmt.Sprintf("recreating load balancer %s: its scheme changes to %s, which an NLB cannot do in place; its addresses and DNS name change", name, want.Scheme))
			if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: cur.LoadBalancerArn}); err != nil {
				return nil, fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", name, err)
			}
			klog.InfoS("Deleted NLB to change its scheme", "service", klog.KObj(svc), "name", name, "scheme", want.Scheme)
			l.tsnap.forget(aws.ToString(cur.LoadBalancerArn))
			cur, tags, recreated = nil, nil, true
		}
	}
	if cur == nil {
		// The target groups have deterministic names: one made by someone else with such a
		// name must stop the creation before anything is written.
		if named, err = l.targetGroupsByName(ctx, id, want); err != nil {
			return nil, err
		}
		// Creating: this may be a type change, so the Service's classic ELB goes first.
		hadELB, err := l.deleteClassic(ctx, svc)
		if err != nil {
			return nil, err
		}
		if !hadELB && !recreated && len(svc.Status.LoadBalancer.Ingress) > 0 {
			repairs = append(repairs, "the load balancer was deleted")
			applied = true
		}
		in := &elbv2.CreateLoadBalancerInput{Name: aws.String(name), Type: v2types.LoadBalancerTypeEnumNetwork,
			Scheme: v2types.LoadBalancerSchemeEnum(want.Scheme), Subnets: want.Subnets, Tags: v2Tags(ownTags(id, opts.ExtraTags, nil))}
		switch {
		case plan.Own:
			// The group (kept from the NLB a scheme change replaced, else ccm's) and its rules
			// before the NLB: it admits its clients from the start.
			if group == nil {
				if group, err = l.newNLBGroup(ctx, svc, name, want); err != nil {
					return nil, err
				}
			}
			if _, err := l.syncNLBGroup(ctx, svc, group, want); err != nil {
				return nil, err
			}
			in.SecurityGroups = []string{aws.ToString(group.GroupId)}
		case len(plan.Named) > 0:
			in.SecurityGroups = plan.Named
		}
		if len(want.Addresses) > 0 {
			in.Subnets = nil
			for i, sn := range want.Subnets {
				m := v2types.SubnetMapping{SubnetId: aws.String(sn)}
				if len(opts.EIPs) > 0 {
					m.AllocationId = aws.String(want.Addresses[i])
				} else {
					m.PrivateIPv4Address = aws.String(want.Addresses[i])
				}
				in.SubnetMappings = append(in.SubnetMappings, m)
			}
		}
		out, err := l.c.api.elbv2.CreateLoadBalancer(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("aws: CreateLoadBalancer (v2) %s: %w", name, err)
		}
		if len(out.LoadBalancers) == 0 || aws.ToString(out.LoadBalancers[0].LoadBalancerArn) == "" {
			return nil, errEmptyAnswer("CreateLoadBalancer (v2)", name)
		}
		cur, tags = &out.LoadBalancers[0], nil
		klog.InfoS("Created NLB", "service", klog.KObj(svc), "name", name)
	} else {
		applied = !fingerprint.Changed(tags[fingerprintTag], fp) && !ownership.NeedsUID(id, tags)
		prevGroups = groupIDs(tags[nodeGroupsTag])
		if plan.Own {
			if group == nil {
				// Its groups are none of the Service's own (it named them until now): its own
				// replaces them, as upstream. They are the user's and stay as they are, where
				// upstream deletes a detached one tagged cluster-owned: a deliberate difference.
				if group, err = l.newNLBGroup(ctx, svc, name, want); err != nil {
					return nil, err
				}
			}
			changes, err := l.syncNLBGroup(ctx, svc, group, want)
			if err != nil {
				return nil, err
			}
			repairs = append(repairs, changes...)
		} else if want.ManagedGroup && len(cur.SecurityGroups) == 0 {
			klog.V(2).InfoS("NLB has no security group and AWS cannot add one; left as it is (as upstream)", "service", klog.KObj(svc), "name", name)
		}
		changes, err := l.setNLBGroups(ctx, svc, cur, plan, group)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, changes...)
	}
	if plan.DropOwn || (len(plan.Named) > 0 && group == nil) {
		// Detached (or on the NLB a scheme change replaced): the Service's own group goes.
		l.dropOwnNLBGroup(ctx, svc, name, want, group)
	}
	arn := aws.ToString(cur.LoadBalancerArn)
	defer func() {
		if wrote {
			l.tsnap.forget(arn)
		}
	}()
	tgs, err := l.targetGroupsOf(ctx, arn)
	if err != nil {
		return nil, err
	}
	// Until ccm has completed a reconcile of it (its fingerprint is on it), target groups the
	// upstream CCM attached are taken over only when their tags prove them this Service's.
	verify := name == upstreamName(svc) && tags[fingerprintTag] == ""
	tgs, pending, err := l.reconcileNLB(ctx, svc, arn, want, tgs, named, members, verify, &repairs)
	if err != nil {
		return nil, err
	}
	if tags != nil || want.CrossZone || want.AccessLog { // a new NLB has AWS's defaults: off, off
		if err := l.ensureNLBAttributes(ctx, svc, arn, want, &repairs); err != nil {
			return nil, err
		}
	}
	if tags != nil && len(want.Addresses) > 0 && !sameAddresses(cur, want.Addresses) {
		l.c.events.Advise(svc, reasonUnusedAnnotation, fmt.Sprintf("%s%s / %s: the NLB's addresses are not the ones named; AWS sets them only when an NLB is created (as upstream, ccm does not recreate it): recreate the Service to apply them",
			annotationPrefix, annEIPAllocations, annPrivateAddresses))
	}
	if verify {
		// Upstream's node rules for this NLB are in the node groups (it named none in a tag).
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return nil, err
		}
		prevGroups = append(prevGroups, groups...)
	}
	ruleChanges, err := l.nodeRulesNLB(ctx, svc, upstreamOnly(name, svc), append(slices.Clone(want.NodeGroups), prevGroups...), want)
	if err != nil {
		return nil, err
	}
	repairs = append(repairs, ruleChanges...)
	targetChanges, err := l.setTargets(ctx, tgs, members)
	if err != nil {
		return nil, err
	}
	repairs = append(repairs, targetChanges...)
	if applied {
		l.c.events.Repaired(svc, repairs)
	}
	if pending {
		// Not applied yet: the tags stay as they are, so the next pass goes on with it.
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s: a listener waits for a healthy target in its new target group", name), nlbPoll)
	}
	// The tags go last: a failure above leaves the old ones, so the next try reads and rewrites.
	newTags := ownTags(id, opts.ExtraTags, map[string]string{fingerprintTag: fp, nodeGroupsTag: strings.Join(want.NodeGroups, " ")})
	tagged := tags != nil && tagsHold(tags, newTags)
	if !tagged {
		if _, err := l.c.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{arn}, Tags: v2Tags(newTags)}); err != nil {
			return nil, fmt.Errorf("aws: AddTags (v2) %s: %w", name, err)
		}
	}
	wrote = len(repairs) > 0 || !tagged
	if cur.State == nil || cur.State.Code != v2types.LoadBalancerStateEnumActive {
		return nil, api.NewRetryError(fmt.Sprintf("NLB %s is provisioning", name), nlbPoll)
	}
	return nlbStatus(cur), nil
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

// reconcileNLB makes the target groups and listeners match want and removes stale ones.
// It returns the target groups now attached, and pending when a listener still waits for its
// new target group's targets to be healthy. named holds target groups already looked up by
// name (nil: look them up). A target group it makes gets members at once, before any listener
// forwards to it.
func (l *loadBalancers) reconcileNLB(ctx context.Context, svc *v1.Service, arn string, want *nlbDesired, attached []v2types.TargetGroup, named map[string]v2types.TargetGroup, members []string, verify bool, notes *[]string) (result []v2types.TargetGroup, pending bool, err error) {
	note := func(format string, args ...any) { *notes = append(*notes, fmt.Sprintf(format, args...)) }
	id := l.identity(svc)
	byName := map[string]v2types.TargetGroup{}
	for _, tg := range attached {
		byName[aws.ToString(tg.TargetGroupName)] = tg
	}
	hcProto, hcPort, hcPath := splitHealth(want.Health)
	for _, p := range want.Ports {
		tg, ok := byName[p.TG]
		if !ok {
			// Not attached: maybe the upstream CCM's for this port (taken over, so its listener
			// stays), or made by an earlier, interrupted try (then it is ours).
			found, err := l.adoptTargetGroup(ctx, svc, p, attached, verify)
			if err != nil {
				return nil, false, err
			}
			if found != nil {
				tg = *found
			} else if t, known := named[p.TG]; known {
				found = &t
			} else if named == nil {
				var err error
				if found, err = l.ownTargetGroup(ctx, id, p.TG); err != nil {
					return nil, false, err
				}
			}
			switch {
			case found != nil:
				tg = *found
			default:
				in := &elbv2.CreateTargetGroupInput{Name: aws.String(p.TG), Protocol: v2types.ProtocolEnum(p.backend()), Port: aws.Int32(p.NodePort),
					VpcId: aws.String(want.vpc), TargetType: v2types.TargetTypeEnumInstance,
					HealthCheckProtocol: v2types.ProtocolEnum(hcProto), HealthCheckPort: aws.String(hcPort),
					HealthyThresholdCount: aws.Int32(want.HC.Healthy), UnhealthyThresholdCount: aws.Int32(want.HC.Unhealthy),
					HealthCheckIntervalSeconds: aws.Int32(want.HC.Interval), HealthCheckTimeoutSeconds: aws.Int32(want.HC.Timeout),
					Tags: v2Tags(ownTags(id, want.ExtraTags, nil))}
				if hcPath != "" {
					in.HealthCheckPath = aws.String(hcPath)
				}
				created, err := l.c.api.elbv2.CreateTargetGroup(ctx, in)
				if err != nil {
					return nil, false, fmt.Errorf("aws: CreateTargetGroup %s: %w", p.TG, err)
				}
				if len(created.TargetGroups) == 0 || aws.ToString(created.TargetGroups[0].TargetGroupArn) == "" {
					return nil, false, errEmptyAnswer("CreateTargetGroup", p.TG)
				}
				tg = created.TargetGroups[0]
				note("target group %s was missing", p.TG)
				if err := l.changeTargets(ctx, aws.ToString(tg.TargetGroupArn), members, nil); err != nil {
					return nil, false, err
				}
				if err := l.ensureTGAttributes(ctx, svc, tg, want, nil); err != nil {
					return nil, false, err
				}
				result = append(result, tg)
				continue
			}
		}
		if d := healthDiff(tg, want); d != "" {
			in := &elbv2.ModifyTargetGroupInput{TargetGroupArn: tg.TargetGroupArn, HealthCheckProtocol: v2types.ProtocolEnum(hcProto), HealthCheckPort: aws.String(hcPort),
				HealthyThresholdCount: aws.Int32(want.HC.Healthy), UnhealthyThresholdCount: aws.Int32(want.HC.Unhealthy),
				HealthCheckIntervalSeconds: aws.Int32(want.HC.Interval), HealthCheckTimeoutSeconds: aws.Int32(want.HC.Timeout)}
			if hcPath != "" {
				in.HealthCheckPath = aws.String(hcPath)
			}
			if _, err := l.c.api.elbv2.ModifyTargetGroup(ctx, in); err != nil {
				return nil, false, fmt.Errorf("aws: ModifyTargetGroup %s: %w", p.TG, err)
			}
			note("health check of target group %s was %s", p.TG, d)
		}
		if err := l.ensureTGAttributes(ctx, svc, tg, want, notes); err != nil {
			return nil, false, err
		}
		result = append(result, tg)
	}
	// Listeners: one per port. One that differs (protocol, certificate, target group) is changed
	// in place, so its port keeps serving: a target group that replaces another (its protocol
	// or nodePort changed, which ELBv2 cannot do in place) was made and filled above, and the
	// old one is deleted below, once no listener forwards to it.
	out, err := describeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return nil, false, fmt.Errorf("aws: DescribeListeners: %w", err)
	}
	have := map[int32]bool{}
	inUse := map[string]bool{} // target groups a listener still forwards to
	for _, ls := range out.Listeners {
		i := slices.IndexFunc(want.Ports, func(p nlbPort) bool { return p.Port == aws.ToInt32(ls.Port) })
		if i < 0 {
			if _, err := l.c.api.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: ls.ListenerArn}); err != nil {
				return nil, false, fmt.Errorf("aws: DeleteListener: %w", err)
			}
			note("listener %s/%d was not wanted", ls.Protocol, aws.ToInt32(ls.Port))
			continue
		}
		p, tg := want.Ports[i], result[i]
		have[p.Port] = true
		if listenerMatches(ls, p, tg) {
			inUse[aws.ToString(tg.TargetGroupArn)] = true
			if p.SSLPolicy != "" && aws.ToString(ls.SslPolicy) != p.SSLPolicy {
				// Changed in place, as upstream does: the listener keeps serving.
				if _, err := l.c.api.elbv2.ModifyListener(ctx, &elbv2.ModifyListenerInput{ListenerArn: ls.ListenerArn, SslPolicy: aws.String(p.SSLPolicy)}); err != nil {
					return nil, false, annotationError(annSSLPolicy, "listener TLS/%d: ModifyListener: %v", p.Port, err)
				}
				note("listener TLS/%d had SSL policy %s", p.Port, aws.ToString(ls.SslPolicy))
			}
			continue
		}
		old := ""
		if len(ls.DefaultActions) == 1 {
			old = aws.ToString(ls.DefaultActions[0].TargetGroupArn)
		}
		if old != aws.ToString(tg.TargetGroupArn) && len(members) > 0 {
			// A new target group takes the port only once a target passes its health check.
			ready, err := l.anyHealthy(ctx, tg)
			if err != nil {
				return nil, false, err
			}
			if !ready {
				klog.InfoS("Waiting for a healthy target before switching a listener to its new target group", "service", klog.KObj(svc), "port", p.Port, "targetGroup", p.TG)
				inUse[old], pending = true, true
				continue
			}
		}
		in := &elbv2.ModifyListenerInput{ListenerArn: ls.ListenerArn, Protocol: v2types.ProtocolEnum(p.Protocol),
			DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}}}
		if p.Cert != "" {
			in.Certificates = []v2types.Certificate{{CertificateArn: aws.String(p.Cert)}}
		}
		if p.SSLPolicy != "" {
			in.SslPolicy = aws.String(p.SSLPolicy)
		}
		if _, err := l.c.api.elbv2.ModifyListener(ctx, in); isCode(err, "SSLPolicyNotFound") {
			return nil, false, annotationError(annSSLPolicy, "listener TLS/%d: %v", p.Port, err)
		} else if err != nil {
			return nil, false, fmt.Errorf("aws: ModifyListener %d: %w", p.Port, err)
		}
		inUse[aws.ToString(tg.TargetGroupArn)] = true
		note("listener %s/%d differed", ls.Protocol, aws.ToInt32(ls.Port))
	}
	for i, p := range want.Ports {
		if have[p.Port] {
			continue
		}
		in := &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(arn), Port: aws.Int32(p.Port), Protocol: v2types.ProtocolEnum(p.Protocol),
			DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: result[i].TargetGroupArn}}}
		if p.Cert != "" {
			in.Certificates = []v2types.Certificate{{CertificateArn: aws.String(p.Cert)}}
		}
		if p.SSLPolicy != "" {
			in.SslPolicy = aws.String(p.SSLPolicy)
		}
		if _, err := l.c.api.elbv2.CreateListener(ctx, in); isCode(err, "SSLPolicyNotFound") {
			return nil, false, annotationError(annSSLPolicy, "listener TLS/%d: %v", p.Port, err)
		} else if err != nil {
			return nil, false, fmt.Errorf("aws: CreateListener %d: %w", p.Port, err)
		}
		inUse[aws.ToString(result[i].TargetGroupArn)] = true
		note("listener %s/%d was missing", p.Protocol, p.Port)
	}
	// Groups no listener uses any more (a port, nodePort or protocol changed) are deleted if
	// ours; one a listener still forwards to (waiting for its successor) stays, and keeps its
	// targets meanwhile.
	for _, tg := range attached {
		if slices.ContainsFunc(result, func(r v2types.TargetGroup) bool {
			return aws.ToString(r.TargetGroupArn) == aws.ToString(tg.TargetGroupArn)
		}) {
			continue
		}
		if inUse[aws.ToString(tg.TargetGroupArn)] {
			result = append(result, tg)
			continue
		}
		if err := l.deleteTG(ctx, svc, tg); err != nil {
			return nil, false, err
		}
		note("target group %s was not wanted", aws.ToString(tg.TargetGroupName))
	}
	return result, pending, nil
}

// anyHealthy says whether a target of tg passes its health check.
func (l *loadBalancers) anyHealthy(ctx context.Context, tg v2types.TargetGroup) (bool, error) {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
	if err != nil {
		return false, fmt.Errorf("aws: DescribeTargetHealth %s: %w", aws.ToString(tg.TargetGroupName), err)
	}
	return slices.ContainsFunc(out.TargetHealthDescriptions, func(d v2types.TargetHealthDescription) bool {
		return d.TargetHealth != nil && d.TargetHealth.State == v2types.TargetHealthStateEnumHealthy
	}), nil
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

// ensureNLBAttributes makes the NLB's cross-zone and access log attributes what the Service
// asks (upstream's defaults: off), writing only those that differ; the bucket and prefix are
// compared only while logs are on (ELBv2 refuses an empty bucket).
func (l *loadBalancers) ensureNLBAttributes(ctx context.Context, svc *v1.Service, arn string, want *nlbDesired, notes *[]string) error {
	out, err := l.c.api.elbv2.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return fmt.Errorf("aws: DescribeLoadBalancerAttributes (v2): %w", err)
	}
	have := map[string]string{}
	for _, a := range out.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	wantAttrs := [][2]string{{"load_balancing.cross_zone.enabled", strconv.FormatBool(want.CrossZone)}, {"access_logs.s3.enabled", strconv.FormatBool(want.AccessLog)}}
	if want.AccessLog {
		wantAttrs = append(wantAttrs, [2]string{"access_logs.s3.bucket", want.Bucket}, [2]string{"access_logs.s3.prefix", want.Prefix})
	}
	var change []v2types.LoadBalancerAttribute
	for _, kv := range wantAttrs {
		if have[kv[0]] != kv[1] {
			change = append(change, v2types.LoadBalancerAttribute{Key: aws.String(kv[0]), Value: aws.String(kv[1])})
			*notes = append(*notes, fmt.Sprintf("attribute %s was %q", kv[0], have[kv[0]]))
		}
	}
	if len(change) == 0 {
		return nil
	}
	if _, err := l.c.api.elbv2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn), Attributes: change}); err != nil {
		return fmt.Errorf("aws: ModifyLoadBalancerAttributes (v2): %w", err)
	}
	return nil
}

// healthDiff says how tg's health check differs from want's ("" when it does not).
func healthDiff(tg v2types.TargetGroup, want *nlbDesired) string {
	proto, port, path := splitHealth(want.Health)
	have := fmt.Sprintf("%s:%s:%s %d/%d/%ds/%ds", tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort), aws.ToString(tg.HealthCheckPath),
		aws.ToInt32(tg.HealthyThresholdCount), aws.ToInt32(tg.UnhealthyThresholdCount), aws.ToInt32(tg.HealthCheckTimeoutSeconds), aws.ToInt32(tg.HealthCheckIntervalSeconds))
	if string(tg.HealthCheckProtocol) == proto && aws.ToString(tg.HealthCheckPort) == port && (proto == "TCP" || aws.ToString(tg.HealthCheckPath) == path) &&
		aws.ToInt32(tg.HealthyThresholdCount) == want.HC.Healthy && aws.ToInt32(tg.UnhealthyThresholdCount) == want.HC.Unhealthy &&
		aws.ToInt32(tg.HealthCheckTimeoutSeconds) == want.HC.Timeout && aws.ToInt32(tg.HealthCheckIntervalSeconds) == want.HC.Interval {
		return ""
	}
	return have
}

// ensureTGAttributes writes the target-group-attributes the target group does not hold, as
// upstream does: only the keys the annotation names, and only keys the target group has (an
// unknown key is reported, not sent). notes nil: a new target group (no repair to report).
func (l *loadBalancers) ensureTGAttributes(ctx context.Context, svc *v1.Service, tg v2types.TargetGroup, want *nlbDesired, notes *[]string) error {
	if len(want.TGAttributes) == 0 {
		return nil // nothing asked: not even read
	}
	name := aws.ToString(tg.TargetGroupName)
	attrs, err := l.c.api.elbv2.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn})
	if err != nil {
		return fmt.Errorf("aws: DescribeTargetGroupAttributes %s: %w", name, err)
	}
	have := map[string]string{}
	for _, a := range attrs.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	var change []v2types.TargetGroupAttribute
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(want.TGAttributes)) {
		v, known := have[k]
		switch {
		case !known:
			unknown = append(unknown, k)
		case v != want.TGAttributes[k]:
			change = append(change, v2types.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(want.TGAttributes[k])})
			if notes != nil {
				*notes = append(*notes, fmt.Sprintf("target group %s attribute %s was %q", name, k, v))
			}
		}
	}
	if len(unknown) > 0 {
		l.c.events.Advise(svc, reasonUnusedAnnotation, fmt.Sprintf("%s%s: target groups have no attribute %s; not set (as upstream)",
			annotationPrefix, annTGAttributes, strings.Join(unknown, ", ")))
	}
	if len(change) == 0 {
		return nil
	}
	if _, err := l.c.api.elbv2.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn, Attributes: change}); err != nil {
		return annotationError(annTGAttributes, "target group %s: ModifyTargetGroupAttributes: %v", name, err)
	}
	return nil
}

func listenerMatches(ls v2types.Listener, p nlbPort, tg v2types.TargetGroup) bool {
	if string(ls.Protocol) != p.Protocol || len(ls.DefaultActions) != 1 || aws.ToString(ls.DefaultActions[0].TargetGroupArn) != aws.ToString(tg.TargetGroupArn) {
		return false
	}
	cert := ""
	if len(ls.Certificates) > 0 {
		cert = aws.ToString(ls.Certificates[0].CertificateArn)
	}
	return cert == p.Cert
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
