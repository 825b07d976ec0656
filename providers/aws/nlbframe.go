package aws

// An NLB's frame: the NLB itself and its security groups, and the rules its clients need in the
// node groups. observeNLBFrame reads what nlbplan.PlanFrame decides on, writing nothing;
// applyNLBFrame writes the frame in the plan's order.

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

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
	group   *types.SecurityGroup           // the Service's own (nlbgroup.go), as read
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

// observeNLBFrame reads the members, the Service's NLB and its own group, checks what must
// hold before anything is written (the NLB is the Service's, the namespace's share of node
// rules, the Elastic IPs of an NLB to be made, the named groups, the target groups a new NLB's
// names would take), and reads the node groups whose rules the Service has or wants.
func (l *loadBalancers) observeNLBFrame(ctx context.Context, svc *v1.Service, opts *annotations.Options, nodes []*v1.Node, mustExist bool) (*nlbSync, error) {
	if opts.NLBGroupIDErr != nil && l.c.cfg.nlbGroupsManaged() {
		return nil, opts.NLBGroupIDErr
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
	s := &nlbSync{svc: svc, opts: opts, name: name, cur: cur, tags: tags, listed: listed, want: want, members: members}
	s.verify = cur != nil && name == upstream.LBName(svc) && tags[fingerprintTag] == ""
	s.applied = cur != nil && !fingerprint.Changed(tags[fingerprintTag], fingerprint.Of(want)) && !ownership.NeedsUID(l.identity(svc), tags)
	for _, step := range []func(context.Context, *nlbSync) error{l.observeNLBGroups, l.observeOwnNLBGroup, l.observeNodeGroups, l.observeNewNLB} {
		if err := step(ctx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// observeNLBGroups checks the NLB found is the Service's, finds its own group on it, and
// decides which groups it is to have (checking the named ones).
func (l *loadBalancers) observeNLBGroups(ctx context.Context, s *nlbSync) error {
	id, want := l.identity(s.svc), s.want
	if s.cur != nil {
		if err := upstream.CheckLB(id, s.svc, s.name, s.tags); err != nil {
			return err
		}
		if want.ManagedGroup {
			var err error
			if s.group, err = l.nlbGroupOf(ctx, s.svc, s.cur); err != nil {
				return err
			}
		}
		s.have = nlbplan.FrameObserved{Exists: true, Scheme: string(s.cur.Scheme), Groups: s.cur.SecurityGroups}
	}
	kept := s.cur != nil && string(s.cur.Scheme) == want.Scheme
	if len(s.opts.EIPs) > 0 && !kept {
		if err := l.checkEIPs(ctx, id, s.opts.EIPs); err != nil {
			return err
		}
	}
	var curGroups []string
	if kept {
		curGroups = s.cur.SecurityGroups
		if len(want.Addresses) > 0 && !sameAddresses(s.cur, want.Addresses) {
			l.c.events.Advise(s.svc, reasonUnusedAnnotation, fmt.Sprintf("%s%s / %s: the NLB's addresses are not the ones named; AWS sets them only when an NLB is created (as upstream, ccm does not recreate it): recreate the Service to apply them",
				annotations.Prefix, annotations.EIPAllocations, annotations.PrivateAddresses))
		}
	}
	s.groups = nlbplan.PlanSecurityGroups(annotations.Prefix+annotations.SecurityGroup, want.ManagedGroup, s.opts.SecurityGroups, kept, curGroups, groupIDOf(s.group))
	if s.groups.Advice != "" {
		l.c.events.Advise(s.svc, reasonUnusedAnnotation, s.groups.Advice)
	}
	if len(s.groups.Named) > 0 {
		return l.checkNamedGroups(ctx, id, annotations.SecurityGroup, s.groups.Named)
	}
	return nil
}

// observeOwnNLBGroup reads the Service's own group when the NLB is to have it and it is not
// on the NLB (left by an interrupted try, or kept from the NLB a scheme change replaces: found
// by its name, it must be the Service's by its tags), and the own group to drop when the NLB
// is to have the named groups instead.
func (l *loadBalancers) observeOwnNLBGroup(ctx context.Context, s *nlbSync) error {
	id := l.identity(s.svc)
	if s.groups.Own && s.group == nil {
		var err error
		if s.group, err = l.findOwnNLBGroup(ctx, id, s.name, s.want.vpc); err != nil {
			return err
		}
	}
	if s.groups.Own && s.group != nil {
		g := s.group
		seen := &sgrules.Group{ID: aws.ToString(g.GroupId), Rules: rulesOf(g)}
		if err := ownership.Check(id, "security group", seen.ID, groupTags(g)); err != nil {
			// Upstream's group for this Service is taken over in place: same group, its rules kept.
			if !l.isUpstreamNLBGroup(id, s.svc, g) {
				return err
			}
			seen.Upstream = true
		}
		s.have.Own = seen
	}
	if s.groups.DropOwn || (len(s.groups.Named) > 0 && s.group == nil) {
		if g := l.detachedOwnNLBGroup(ctx, s.svc, s.name, s.want, s.group); g != nil {
			s.have.Detached = aws.ToString(g.GroupId)
		}
	}
	return nil
}

// observeNodeGroups reads the node groups the Service's rules are wanted in, and those an
// earlier reconcile put them in (the NLB's tag says which; for upstream's NLB, which named
// none, the groups tagged for the cluster).
func (l *loadBalancers) observeNodeGroups(ctx context.Context, s *nlbSync) error {
	if l.c.cfg.Global.DisableSecurityGroupIngress {
		return nil
	}
	groups := append(slices.Clone(s.want.NodeGroups), groupIDs(s.tags[nodeGroupsTag])...)
	if s.verify {
		cluster, err := l.clusterGroups(ctx)
		if err != nil {
			return err
		}
		groups = append(groups, cluster...)
	}
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	if len(groups) == 0 {
		return nil
	}
	gs, err := l.groupsByID(ctx, groups)
	if err != nil {
		return err
	}
	for i := range gs {
		s.have.Nodes = append(s.have.Nodes, sgrules.Group{ID: aws.ToString(gs[i].GroupId), Rules: rulesOf(&gs[i])})
	}
	return nil
}

// observeNewNLB looks up, for an NLB to be made, the target groups its names would take: each
// one that exists must be this Service's (left by an interrupted try, or by the NLB a scheme
// change replaces).
func (l *loadBalancers) observeNewNLB(ctx context.Context, s *nlbSync) error {
	if s.cur != nil && string(s.cur.Scheme) == s.want.Scheme {
		return nil
	}
	var err error
	s.named, err = l.targetGroupsByName(ctx, l.identity(s.svc), s.want)
	return err
}

// frameDesired is what the frame is planned from.
func (s *nlbSync) frameDesired(id ownership.Identity) nlbplan.FrameDesired {
	nodes := nodeRuleOwners(id, upstream.Only(s.name, s.svc))
	nodes.Want, nodes.In = nlbNodeRules(id, s.want), s.want.NodeGroups
	return nlbplan.FrameDesired{Scheme: s.want.Scheme, Groups: s.groups, OwnRules: nlbGroupRules(id, s.want), Nodes: nodes}
}

// applyNLBFrame writes the frame in its order: the NLB deleted for a scheme change; for a new
// NLB the Service's ELB of the other type deleted, then its own group and rules (so it admits
// its clients from the start) and the NLB; for one that stays, its own group and its groups;
// the own group no longer used; the node rules and the shared path-MTU rules.
func (l *loadBalancers) applyNLBFrame(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	if f.Recreate {
		if err := l.deleteForScheme(ctx, s); err != nil {
			return err
		}
	}
	if f.Create {
		if err := l.replaceOtherType(ctx, s, f.Recreate); err != nil {
			return err
		}
	}
	if f.Own != nil {
		if err := l.applyOwnNLBGroup(ctx, s, f.Own); err != nil {
			return err
		}
	}
	if f.Create {
		if err := l.createNLB(ctx, s, f); err != nil {
			return err
		}
	} else if f.SetGroups {
		if err := l.setNLBGroups(ctx, s, f); err != nil {
			return err
		}
	}
	if f.Drop != "" {
		l.dropOwnNLBGroup(ctx, s.svc, f.Drop)
	}
	changes, err := l.applyNodeRules(ctx, s.svc, f.Nodes, f.MTU)
	s.repairs = append(s.repairs, changes...)
	return err
}

// deleteForScheme deletes the NLB, whose scheme changes: AWS cannot change it in place. It is
// made again, with new addresses and DNS name; its target groups stay and are attached to the
// new one.
func (l *loadBalancers) deleteForScheme(ctx context.Context, s *nlbSync) error {
	l.c.events.Event(s.svc, v1.EventTypeNormal, svcevents.ReasonRecreated,
		fmt.Sprintf("recreating load balancer %s: its scheme changes to %s, which an NLB cannot do in place; its addresses and DNS name change", s.name, s.want.Scheme))
	if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: s.cur.LoadBalancerArn}); err != nil {
		return fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", s.name, err)
	}
	klog.InfoS("Deleted NLB to change its scheme", "service", klog.KObj(s.svc), "name", s.name, "scheme", s.want.Scheme)
	l.tsnap.Forget(aws.ToString(s.cur.LoadBalancerArn)) // its target groups are listed by its ARN
	s.cur, s.tags, s.applied = nil, nil, false
	return nil
}

// replaceOtherType deletes the Service's classic ELB before its NLB is made (a type change).
// An NLB made when the Service had an address and neither it nor an ELB was there was deleted
// out of band: a repair.
func (l *loadBalancers) replaceOtherType(ctx context.Context, s *nlbSync, recreated bool) error {
	hadELB, err := l.deleteClassic(ctx, s.svc)
	if err != nil {
		return err
	}
	if !hadELB && !recreated && len(s.svc.Status.LoadBalancer.Ingress) > 0 {
		s.repairs = append(s.repairs, "the load balancer was deleted")
		s.applied = true
	}
	return nil
}

// applyOwnNLBGroup makes the NLB's own group (or takes upstream's over: ccm's tags added, its
// rules kept where wanted) and writes its rules' difference.
func (l *loadBalancers) applyOwnNLBGroup(ctx context.Context, s *nlbSync, own *sgrules.Own) error {
	gid := own.ID
	if own.Create {
		g, err := l.createNLBGroup(ctx, s.svc, s.name, s.want)
		if err != nil {
			return err
		}
		s.group, gid = g, aws.ToString(g.GroupId)
	}
	if own.TakeOver {
		if err := l.takeOverGroup(ctx, s.svc, gid, "NLB"); err != nil {
			return err
		}
	}
	changes, err := l.writeRules(ctx, gid, own.Add, own.Del)
	if !own.Create {
		s.repairs = append(s.repairs, changes...)
	}
	return err
}

// createNLB makes the NLB with the groups the frame gives it.
func (l *loadBalancers) createNLB(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	want := s.want
	in := &elbv2.CreateLoadBalancerInput{Name: aws.String(s.name), Type: v2types.LoadBalancerTypeEnumNetwork,
		Scheme: v2types.LoadBalancerSchemeEnum(want.Scheme), Subnets: want.Subnets, Tags: v2Tags(ownTags(l.identity(s.svc), s.opts.ExtraTags, nil))}
	switch {
	case f.Own != nil:
		in.SecurityGroups = []string{groupIDOf(s.group)}
	case len(f.Named) > 0:
		in.SecurityGroups = f.Named
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
	s.cur, s.tags, s.lbStale = &out.LoadBalancers[0], nil, true
	klog.InfoS("Created NLB", "service", klog.KObj(s.svc), "name", s.name)
	return nil
}

// applyNodeRules writes the node groups' rule changes, then settles the shared MTU rules of
// the groups in mtu. It returns what it changed.
func (l *loadBalancers) applyNodeRules(ctx context.Context, svc *v1.Service, changes []sgrules.Change, mtu map[string][]rule) ([]string, error) {
	var notes []string
	for _, c := range changes {
		if len(c.Redescribe) > 0 {
			l.gsnap.ForgetAll()
			if _, err := l.c.api.ec2.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
				GroupId: aws.String(c.Group), IpPermissions: permissions(c.Redescribe, true)}); err != nil {
				return nil, fmt.Errorf("aws: UpdateSecurityGroupRuleDescriptionsIngress %s: %w", c.Group, err)
			}
			notes = append(notes, c.Notes...)
		}
		changed, err := l.writeRules(ctx, c.Group, c.Add, c.Del)
		if err != nil {
			return nil, err
		}
		notes = append(notes, changed...)
	}
	changed, err := l.syncMTURules(ctx, svc, l.identity(svc).Cluster, mtu)
	if err != nil {
		return nil, err
	}
	return append(notes, changed...), nil
}
