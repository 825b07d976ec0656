package aws

// [Global] NLBSecurityGroupMode = Managed (upstream since v1.35.0): each new NLB gets a security
// group of its own, admitting the Service's loadBalancerSourceRanges (default 0.0.0.0/0) on the
// listener ports, and ICMP types 3-4 (MTU discovery) from the IPv4 ranges, as upstream does.
// AWS attaches groups to an NLB only when it is created with some: an NLB made without (before
// the mode, or by upstream's default mode) stays without, as upstream leaves it. The node rules
// are those of every NLB (from the source ranges and the NLB's subnets, nlbrules.go): upstream
// keeps them in this mode too.
//
// The group: ccm names its own k8s-nlb-<NLB name> and gives it the Service's ownership tags.
// Upstream's (k8s-<ns:8>-<name:8>-<sha256:10>, its fixed description, only the cluster tag) is
// recognized on the Service's own NLB (proven the Service's by its tags) and taken over in place
// by adding ccm's tags. The group is deleted with the NLB, after it (in AWS, a group stays in
// use for a while after its NLB is gone: the delete is retried), whatever the mode: upstream
// deletes it so too. With the security-groups annotation the NLB has the named groups instead
// (nlbplan.PlanSecurityGroups): the Service's own group is then detached and deleted.

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

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// nlbGroupModeManaged is the NLBSecurityGroupMode value that turns NLB groups on (upstream's
// only value, case-sensitive).
const nlbGroupModeManaged = "Managed"

// nlbGroupName is ccm's name for the group of the NLB lbName.
func nlbGroupName(lbName string) string { return "k8s-nlb-" + lbName }

func (c *Config) nlbGroupsManaged() bool {
	return c.Global.NLBSecurityGroupMode == nlbGroupModeManaged
}

// isUpstreamNLBGroup says whether g is the group upstream's Managed mode made for svc in this
// cluster (upstream.IsNLBGroup).
func (l *loadBalancers) isUpstreamNLBGroup(id ownership.Identity, svc *v1.Service, g *types.SecurityGroup) bool {
	clusterName, _ := l.clusterName.Load().(string)
	return upstream.IsNLBGroup(id, clusterName, svc, g)
}

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

func groupIDOf(g *types.SecurityGroup) string {
	if g == nil {
		return ""
	}
	return aws.ToString(g.GroupId)
}

// setNLBGroups gives the existing NLB the groups the frame wants (its own group, or the named
// ones), with SetSecurityGroups, as upstream.
func (l *loadBalancers) setNLBGroups(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	want, cur, name := f.Named, s.cur.SecurityGroups, aws.ToString(s.cur.LoadBalancerName)
	if f.Own != nil {
		want = []string{groupIDOf(s.group)}
	}
	if _, err := l.c.api.elbv2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: s.cur.LoadBalancerArn, SecurityGroups: want}); err != nil {
		return setNLBGroupsError(name, len(f.Named) > 0, err)
	}
	s.lbStale = true // the NLB's groups, as the listing holds them
	klog.InfoS("Set the NLB's security groups", "service", klog.KObj(s.svc), "name", name, "was", cur, "groups", want)
	// Said on the Service: after an upgrade from a ccm that ignored the annotation on an NLB,
	// this first sync is where its clients' traffic starts to depend on the named groups' rules.
	l.c.events.Event(s.svc, v1.EventTypeNormal, reasonNLBGroupsReplaced, nlbGroupsReplacedMessage(name, cur, want, len(f.Named) > 0))
	s.repairs = append(s.repairs, fmt.Sprintf("security groups were %v, not %v", cur, want))
	return nil
}

// setNLBGroupsError names the security-groups annotation when AWS refuses a group it named
// (InvalidSecurityGroup); refusing the Service's own group is not the annotation's fault.
func setNLBGroupsError(lbName string, named bool, err error) error {
	if named && isCode(err, "InvalidSecurityGroup") {
		return annotations.Error(annotations.SecurityGroup, "SetSecurityGroups: %v", err)
	}
	return fmt.Errorf("aws: SetSecurityGroups %s: %w", lbName, err)
}

// reasonNLBGroupsReplaced is the Normal Event's reason when an NLB's security groups are replaced.
const reasonNLBGroupsReplaced = "LoadBalancerSecurityGroupsReplaced"

// nlbGroupsReplacedMessage says which groups the NLB had and has, and why (named: the
// security-groups annotation names them; else the Service's own group, the annotation unset).
func nlbGroupsReplacedMessage(lbName string, was, now []string, named bool) string {
	ann := annotations.Prefix + annotations.SecurityGroup
	why := fmt.Sprintf("%s names them; ccm writes no rule into them: their rules must admit the clients on the listener ports", ann)
	if !named {
		why = fmt.Sprintf("%s is not set: the Service's own group, whose rules ccm keeps, replaces them; the groups detached are left as they are", ann)
	}
	return fmt.Sprintf("security groups of NLB %s replaced: were %s, now %s (%s)", lbName, strings.Join(was, ","), strings.Join(now, ","), why)
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

// dropOwnNLBGroup deletes the Service's own group gid, detached from its NLB. A failure (AWS
// may hold a detached group in use for a while) is logged: the next sync finds it again, and
// the Service's delete deletes it too.
func (l *loadBalancers) dropOwnNLBGroup(ctx context.Context, svc *v1.Service, gid string) {
	if err := l.deleteGroup(ctx, svc, &types.SecurityGroup{GroupId: aws.String(gid)}); err != nil {
		klog.InfoS("The Service's own NLB security group is not deleted yet", "service", klog.KObj(svc), "group", gid, "err", err)
	}
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

// createNLBGroup makes the group of the NLB name, tagged for the Service.
func (l *loadBalancers) createNLBGroup(ctx context.Context, svc *v1.Service, name string, want *nlbDesired) (*types.SecurityGroup, error) {
	gname := nlbGroupName(name)
	tags := ownTags(l.identity(svc), want.ExtraTags, nil)
	gid, err := l.createGroup(ctx, gname, want.vpc, fmt.Sprintf("Kubernetes NLB %s for %s/%s", name, svc.Namespace, svc.Name), tags)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Created NLB security group", "service", klog.KObj(svc), "group", gid)
	return &types.SecurityGroup{GroupId: aws.String(gid), GroupName: aws.String(gname), Tags: ec2Tags(tags)}, nil
}

// deleteNLBGroup deletes the NLB's own group once the NLB is gone. g was found attached to the
// Service's NLB (nlbGroupOf); without it (the NLB was deleted by an interrupted delete, or the
// Service names its groups) ccm's group is found by its name, upstream's (taken over) by the
// Service's ownership tags. A group the security-groups annotation names is the user's, even
// the Service's own one: never deleted, as dropOwnNLBGroup never drops it.
func (l *loadBalancers) deleteNLBGroup(ctx context.Context, svc *v1.Service, name string, g *types.SecurityGroup) error {
	id := l.identity(svc)
	named := annotations.SplitList(svc.Annotations[annotations.Prefix+annotations.SecurityGroup])
	if g == nil {
		out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
			filter("tag:"+ownership.ServiceTag, id.Service()), filter("tag-key", ownership.ClusterTagPrefix+id.Cluster)}})

		if err != nil {
			return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
		}
		for i := range out.SecurityGroups {
			c := &out.SecurityGroups[i]
			if slices.Contains(named, aws.ToString(c.GroupId)) {
				continue
			}
			if ownership.Is(id, groupTags(c)) && (aws.ToString(c.GroupName) == nlbGroupName(name) || l.isUpstreamNLBGroup(id, svc, c)) {
				g = c
				break
			}
		}
		if g == nil {
			return nil
		}
	}
	// Owned: ccm's tags, or upstream's group, proven the Service's by the UID hash in its name,
	// its description and the cluster's "owned" tag (isUpstreamNLBGroup), wherever it is attached.
	if slices.Contains(named, aws.ToString(g.GroupId)) || (!ownership.Is(id, groupTags(g)) && !l.isUpstreamNLBGroup(id, svc, g)) {
		return nil
	}
	return l.deleteGroup(ctx, svc, g)
}
