package aws

// What an NLB reconcile reads, writing nothing: the Service's NLB (ccm's name, else upstream's
// proven by its tags), its security groups and the node groups' rules (observeNLBFrame, for
// nlbplan.PlanFrame), then its target groups, listeners and attributes (observeNLB, for
// nlbplan.Compute). Listings come from the cluster's snapshots where one holds the object.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

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

// findNLB is findClassic for NLBs. A listed NLB that is not active yet is read again.
func (l *loadBalancers) findNLB(ctx context.Context, svc *v1.Service) (name string, cur *v2types.LoadBalancer, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstream.LBName(svc)
	id := l.identity(svc)
	active := func(lb *v2types.LoadBalancer) bool {
		return lb != nil && lb.State != nil && lb.State.Code == v2types.LoadBalancerStateEnumActive
	}
	if cur, tags := l.nsnap.Get(ctx, own, l.listNLBs); active(cur) && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.nsnap.Get(ctx, up, l.listNLBs); active(cur) && tags != nil && upstream.CheckLB(id, svc, up, tags) == nil {
			return up, cur, tags, true, nil
		}
	}
	if cur, err = l.describeNLB(ctx, own); err != nil || cur != nil {
		if cur != nil {
			tags, err = l.tagsV2(ctx, aws.ToString(cur.LoadBalancerArn))
		}
		return own, cur, tags, false, err
	}
	if up != "" {
		if cur, err = l.describeNLB(ctx, up); err != nil {
			return "", nil, nil, false, err
		}
		if cur != nil {
			if tags, err = l.tagsV2(ctx, aws.ToString(cur.LoadBalancerArn)); err != nil {
				return "", nil, nil, false, err
			}
			if upstream.CheckLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("An NLB has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
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

// checkNamespaceRulesBefore reads the node groups (from the cluster's listing) and checks the
// namespace's share before the NLB's first write.
func (l *loadBalancers) checkNamespaceRulesBefore(ctx context.Context, id ownership.Identity, want *nlbDesired) error {
	if len(want.NodeGroups) == 0 || l.c.cfg.Global.DisableSecurityGroupIngress || l.c.cfg.rulesPerNamespace() == 0 {
		return nil
	}
	gs, err := l.groupsByID(ctx, want.NodeGroups)
	if err != nil {
		return err
	}
	return l.checkNamespaceRules(id, gs, want.NodeGroups, nlbNodeRules(id, want))
}

// checkNamespaceRules refuses, before the first rule is written, a Service that would add rules
// taking its namespace's rules in a node group past NodeSecurityGroupRulesPerNamespace: each
// Service's rules carry its description, so the namespace's share is counted from the group. A
// Service whose rules are all there already is not refused (a namespace over the limit after an
// upgrade keeps being served; it only cannot grow).
func (l *loadBalancers) checkNamespaceRules(id ownership.Identity, gs []types.SecurityGroup, groups []string, need []rule) error {
	limit := l.c.cfg.rulesPerNamespace()
	for i := range gs {
		if !slices.Contains(groups, aws.ToString(gs[i].GroupId)) {
			continue
		}
		have := rulesOf(&gs[i])
		adds := 0
		for _, r := range need {
			if !slices.ContainsFunc(have, func(h rule) bool { return h.Key() == r.Key() && ownership.DescribedBy(id, h.Desc) }) {
				adds++
			}
		}
		if adds == 0 {
			continue
		}
		var descs []string
		for _, r := range have {
			descs = append(descs, r.Desc)
		}
		if err := reach.NamespaceShare(id, descs, len(need), limit, "rules in node security group "+aws.ToString(gs[i].GroupId),
			"[Global] NodeSecurityGroupRulesPerNamespace"); err != nil {
			return err
		}
	}
	return nil
}

// isUpstreamNLBGroup says whether g is the group upstream's Managed mode made for svc in this
// cluster (upstream.IsNLBGroup).
func (l *loadBalancers) isUpstreamNLBGroup(id ownership.Identity, svc *v1.Service, g *types.SecurityGroup) bool {
	clusterName, _ := l.clusterName.Load().(string)
	return upstream.IsNLBGroup(id, clusterName, svc, g)
}

// nlbGroupOf finds, among the groups attached to svc's NLB lb, the one managed for it: ccm's
// (its name for the NLB and the Service's ownership tags) or upstream's (isUpstreamNLBGroup).
// The groups the security-groups annotation names are the user's, whatever their tags, and
// not even read here. nil: none (an NLB without groups, or with groups someone else manages).
func (l *loadBalancers) nlbGroupOf(ctx context.Context, svc *v1.Service, lb *v2types.LoadBalancer) (*types.SecurityGroup, error) {
	named := annotations.SplitList(svc.Annotations[annotations.Prefix+annotations.SecurityGroup])
	ids := slices.DeleteFunc(slices.Clone(lb.SecurityGroups), func(g string) bool { return slices.Contains(named, g) })
	if len(ids) == 0 {
		return nil, nil
	}
	groups, err := l.groupsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range groups {
		if g := &groups[i]; l.isOwnNLBGroup(svc, aws.ToString(lb.LoadBalancerName), g) {
			return g, nil
		}
	}
	return nil, nil
}

// isOwnNLBGroup says whether g is svc's own group for its NLB lbName: ccm's name for it and
// the Service's ownership tags, or upstream's (isUpstreamNLBGroup).
func (l *loadBalancers) isOwnNLBGroup(svc *v1.Service, lbName string, g *types.SecurityGroup) bool {
	id := l.identity(svc)
	return (aws.ToString(g.GroupName) == nlbGroupName(lbName) && ownership.Is(id, groupTags(g))) || l.isUpstreamNLBGroup(id, svc, g)
}

// findOwnNLBGroup finds the group ccm names for the NLB name by that name: left by an
// interrupted try, it must be the Service's by its tags. nil: none.
func (l *loadBalancers) findOwnNLBGroup(ctx context.Context, id ownership.Identity, name, vpc string) (*types.SecurityGroup, error) {
	gname := nlbGroupName(name)
	g, _ := l.gsnap.Get(ctx, "name:"+vpc+"/"+gname, l.listGroups)
	if g == nil {
		out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
			filter("group-name", gname), filter("vpc-id", vpc)}})

		if err != nil {
			return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
		}
		if len(out.SecurityGroups) == 0 {
			return nil, nil
		}
		g = &out.SecurityGroups[0]
	}
	if err := ownership.Check(id, "security group", gname, groupTags(g)); err != nil {
		return nil, err
	}
	return g, nil
}

// detachedOwnNLBGroup is the Service's own group once its NLB is to use the named groups
// instead: g, on the NLB now, or else one left detached by an earlier try (found in the
// cluster's group listing by ccm's or upstream's name); nil when none is proven the Service's
// own or the annotation names it.
func (l *loadBalancers) detachedOwnNLBGroup(ctx context.Context, svc *v1.Service, name string, want *nlbDesired, g *types.SecurityGroup) *types.SecurityGroup {
	if g == nil {
		clusterName, _ := l.clusterName.Load().(string)
		for _, gname := range []string{nlbGroupName(name), upstream.NLBGroupName(clusterName, svc)} {
			if c, _ := l.gsnap.Get(ctx, "name:"+want.vpc+"/"+gname, l.listGroups); c != nil && l.isOwnNLBGroup(svc, name, c) {
				g = c
				break
			}
		}
	}
	if g == nil || slices.Contains(want.NamedGroups, aws.ToString(g.GroupId)) || !l.isOwnNLBGroup(svc, name, g) {
		return nil
	}
	return g
}

func (l *loadBalancers) attachedTGs(ctx context.Context, arn string) ([]v2types.TargetGroup, error) {
	out, err := awsread.DescribeTargetGroupsAll(ctx, l.c.api.elbv2, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetGroups: %w", err)
	}
	return out.TargetGroups, nil
}

// targetGroupsOf returns the NLB's target groups from the listing, else reads them.
func (l *loadBalancers) targetGroupsOf(ctx context.Context, arn string) ([]v2types.TargetGroup, error) {
	if tgs, _ := l.tsnap.Get(ctx, arn, l.listTGs); tgs != nil {
		return *tgs, nil
	}
	return l.attachedTGs(ctx, arn)
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

// ownedTargetGroups lists the cluster's target groups (by name prefix, paged) and returns
// those whose tags say they are id's, UID included: tags without a UID are what an upstream
// cluster copies from a tenant's additional-resource-tags verbatim (onto groups whose names can
// even carry ccm's prefix, for a namespace named "tg"), so such a group is the Service's only
// when found attached to its load balancer (upstream.OwnsTG). ccm has written the UID on every
// target group it reconciled since UIDs were recorded.
func (l *loadBalancers) ownedTargetGroups(ctx context.Context, id ownership.Identity) ([]v2types.TargetGroup, error) {
	byARN := map[string]v2types.TargetGroup{}
	var arns []string
	in := &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elbv2.DescribeTargetGroups(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("aws: DescribeTargetGroups: %w", err)
		}
		for _, tg := range out.TargetGroups {
			if n := aws.ToString(tg.TargetGroupName); strings.HasPrefix(n, tgNames.Prefix) || upstream.IsTGName(n) {
				byARN[aws.ToString(tg.TargetGroupArn)] = tg
				arns = append(arns, aws.ToString(tg.TargetGroupArn))
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	var owned []v2types.TargetGroup
	err := awsread.InChunks(arns, func(chunk []string) error {
		out, err := l.c.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return fmt.Errorf("aws: DescribeTags (v2): %w", err)
		}
		for _, td := range out.TagDescriptions {
			tg := byARN[aws.ToString(td.ResourceArn)]
			if ownership.IsExactly(id, awsread.TagMap(td.Tags, func(t v2types.Tag) (*string, *string) { return t.Key, t.Value })) {
				owned = append(owned, tg)
			}
		}
		return nil
	})

	return owned, err
}

// observeNLB reads what the plan compares: the wanted target groups no listener forwards to
// (upstream's taken over, verified by their tags when verify; those named already looked up;
// else found by name, proven this Service's), the listeners, the targets of each group that may
// serve after the plan (wanted, or a wanted port's listener forwards to it), the asked target
// group attributes, and the NLB's attributes unless it is new and asks none (AWS's defaults).
func (l *loadBalancers) observeNLB(ctx context.Context, svc *v1.Service, t nlbTarget, attached []v2types.TargetGroup, named map[string]v2types.TargetGroup, verify bool) (nlbplan.Observed, error) {
	have := nlbplan.Observed{Found: map[string]nlbplan.Group{}, Tags: t.tags}
	groups := map[string]*nlbplan.Group{} // by name: those whose targets and attributes are read
	for _, tg := range attached {
		have.Attached = append(have.Attached, planGroup(tg))
	}
	for _, p := range t.want.Ports {
		if slices.ContainsFunc(attached, func(tg v2types.TargetGroup) bool { return aws.ToString(tg.TargetGroupName) == p.TG }) {
			continue
		}
		found, untagged, err := l.findTargetGroup(ctx, svc, p, attached, named, verify)
		if err != nil {
			return have, err
		}
		if found != nil {
			g := planGroup(*found)
			g.Untagged = untagged
			have.Found[p.TG] = g
		}
	}
	out, err := awsread.DescribeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(t.arn)})
	if err != nil {
		return have, fmt.Errorf("aws: DescribeListeners: %w", err)
	}
	var forwarded []string // groups a wanted port's listener forwards to
	for _, ls := range out.Listeners {
		pl := planListener(ls)
		have.Listeners = append(have.Listeners, pl)
		if slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.Port == pl.Port }) {
			forwarded = append(forwarded, pl.Forward)
		}
	}
	for i := range have.Attached {
		g := &have.Attached[i]
		if isFound(have.Found, g.ARN) {
			continue // read below
		}
		if slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.TG == g.Name }) || slices.Contains(forwarded, g.ARN) {
			groups[g.Name] = g
		}
	}
	for name, g := range have.Found {
		if err := l.observeGroup(ctx, &g, t.want, true); err != nil {
			return have, err
		}
		have.Found[name] = g
	}
	for _, g := range groups {
		wanted := slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.TG == g.Name })
		if err := l.observeGroup(ctx, g, t.want, wanted); err != nil {
			return have, err
		}
	}
	if t.tags != nil || t.want.CrossZone || t.want.AccessLog {
		if have.Attributes, err = l.nlbAttributes(ctx, t.arn); err != nil {
			return have, err
		}
	}
	return have, nil
}

func planGroup(tg v2types.TargetGroup) nlbplan.Group {
	return nlbplan.Group{ARN: aws.ToString(tg.TargetGroupArn), Name: aws.ToString(tg.TargetGroupName), Health: nlbplan.Health{
		Protocol: string(tg.HealthCheckProtocol), Port: aws.ToString(tg.HealthCheckPort), Path: aws.ToString(tg.HealthCheckPath),
		Healthy: aws.ToInt32(tg.HealthyThresholdCount), Unhealthy: aws.ToInt32(tg.UnhealthyThresholdCount),
		Timeout: aws.ToInt32(tg.HealthCheckTimeoutSeconds), Interval: aws.ToInt32(tg.HealthCheckIntervalSeconds)}}
}

// findTargetGroup is p's target group when no listener forwards to it: maybe the upstream CCM's
// for this port (taken over, so its listener stays), or made by an earlier, interrupted try.
// untagged: upstream's, proven this Service's, without ccm's tags yet.
func (l *loadBalancers) findTargetGroup(ctx context.Context, svc *v1.Service, p nlbPort, attached []v2types.TargetGroup, named map[string]v2types.TargetGroup, verify bool) (_ *v2types.TargetGroup, untagged bool, _ error) {
	found, untagged, err := l.adoptTargetGroup(ctx, svc, p, attached, verify)
	if err != nil || found != nil {
		return found, untagged, err
	}
	if t, known := named[p.TG]; known {
		return &t, false, nil
	}
	if named != nil {
		return nil, false, nil
	}
	tg, err := l.ownTargetGroup(ctx, l.identity(svc), p.TG)
	return tg, false, err
}

// adoptTargetGroup finds, among the target groups attached to svc's NLB, one upstream made
// for port p (its name shape, the port's target protocol and nodePort). With verify (the NLB
// has not been reconciled by ccm yet), its tags must prove it svc's (ccm's or upstream's), and
// untagged says ccm's ownership tags are to be added; after that, being attached to the
// Service's own NLB under upstream's name shape is what identifies it.
func (l *loadBalancers) adoptTargetGroup(ctx context.Context, svc *v1.Service, p nlbPort, attached []v2types.TargetGroup, verify bool) (_ *v2types.TargetGroup, untagged bool, _ error) {
	i := slices.IndexFunc(attached, func(tg v2types.TargetGroup) bool {
		return upstream.IsTGName(aws.ToString(tg.TargetGroupName)) && string(tg.Protocol) == p.backend() && aws.ToInt32(tg.Port) == p.NodePort
	})
	if i < 0 {
		return nil, false, nil
	}
	tg := attached[i]
	if !verify {
		return &tg, false, nil
	}
	id := l.identity(svc)
	tags, err := l.tagsV2(ctx, aws.ToString(tg.TargetGroupArn))
	if err != nil {
		return nil, false, err
	}
	if !ownership.Is(id, tags) && !upstream.Owned(id, tags) {
		return nil, false, nil // not provably this Service's: leave it, make ccm's own
	}
	return &tg, !tagsHold(tags, id.Tags()), nil
}

func planListener(ls v2types.Listener) nlbplan.Listener {
	pl := nlbplan.Listener{ARN: aws.ToString(ls.ListenerArn), Protocol: string(ls.Protocol), Port: aws.ToInt32(ls.Port), SSLPolicy: aws.ToString(ls.SslPolicy)}
	if len(ls.DefaultActions) == 1 {
		pl.Forward = aws.ToString(ls.DefaultActions[0].TargetGroupArn)
	}
	if len(ls.Certificates) > 0 {
		pl.Cert = aws.ToString(ls.Certificates[0].CertificateArn)
	}
	return pl
}

func isFound(found map[string]nlbplan.Group, arn string) bool {
	for _, g := range found {
		if g.ARN == arn {
			return true
		}
	}
	return false
}

// observeGroup reads g's targets and their health, and, when g is wanted and attributes are
// asked, its attributes.
func (l *loadBalancers) observeGroup(ctx context.Context, g *nlbplan.Group, want *nlbDesired, wanted bool) error {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(g.ARN)})
	if err != nil {
		return fmt.Errorf("aws: DescribeTargetHealth %s: %w", g.Name, err)
	}
	for _, d := range out.TargetHealthDescriptions {
		if d.Target != nil {
			g.Targets = append(g.Targets, aws.ToString(d.Target.Id))
		}
		g.Healthy = g.Healthy || (d.TargetHealth != nil && d.TargetHealth.State == v2types.TargetHealthStateEnumHealthy)
	}
	if !wanted || len(want.TGAttributes) == 0 {
		return nil // nothing asked: not even read
	}
	g.Attributes, err = l.groupAttributes(ctx, g.ARN, g.Name)
	return err
}

func (l *loadBalancers) groupAttributes(ctx context.Context, arn, name string) (map[string]string, error) {
	out, err := l.c.api.elbv2.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetGroupAttributes %s: %w", name, err)
	}
	have := map[string]string{}
	for _, a := range out.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	return have, nil
}

func (l *loadBalancers) nlbAttributes(ctx context.Context, arn string) (map[string]string, error) {
	out, err := l.c.api.elbv2.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeLoadBalancerAttributes (v2): %w", err)
	}
	have := map[string]string{}
	for _, a := range out.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	return have, nil
}

// anyHealthy says whether a target of the target group arn passes its health check.
func (l *loadBalancers) anyHealthy(ctx context.Context, arn, name string) (bool, error) {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		return false, fmt.Errorf("aws: DescribeTargetHealth %s: %w", name, err)
	}
	return slices.ContainsFunc(out.TargetHealthDescriptions, func(d v2types.TargetHealthDescription) bool {
		return d.TargetHealth != nil && d.TargetHealth.State == v2types.TargetHealthStateEnumHealthy
	}), nil
}
