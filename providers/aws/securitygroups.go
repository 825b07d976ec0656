package aws

// Security groups, for both load balancer types: reads (by name, by ID, the cluster's listing,
// the groups a Service owns by its tags), writes (a group made or taken over, its ingress rules,
// its deletion), and the rules' shape in EC2 (permissions, descriptions).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// groupName is the name of the security group made for one ELB.
func groupName(lbName string) string { return upstream.ELBGroupName(lbName) }

func groupTags(g *types.SecurityGroup) map[string]string {
	return awsread.TagMap(g.Tags, func(t types.Tag) (*string, *string) { return t.Key, t.Value })
}

func (l *loadBalancers) findGroup(ctx context.Context, lbName, vpc string) (*types.SecurityGroup, error) {
	fs := []types.Filter{filter("group-name", groupName(lbName))}
	if vpc != "" {
		fs = append(fs, filter("vpc-id", vpc))
	}
	out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: fs})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	if len(out.SecurityGroups) == 0 {
		return nil, nil
	}
	return &out.SecurityGroups[0], nil
}

// describeGroups reads groups by ID, skipping those that no longer exist (one missing ID fails
// the whole call in EC2, so then each is read alone).
func (l *loadBalancers) describeGroups(ctx context.Context, ids []string) ([]types.SecurityGroup, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{GroupIds: ids})
	if err == nil {
		return out.SecurityGroups, nil
	}
	if !isCode(err, "InvalidGroup.NotFound") || len(ids) == 1 {
		if isCode(err, "InvalidGroup.NotFound") {
			return nil, nil
		}
		return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	var gs []types.SecurityGroup
	for _, id := range ids {
		one, err := l.describeGroups(ctx, []string{id})
		if err != nil {
			return nil, err
		}
		gs = append(gs, one...)
	}
	return gs, nil
}

// rule is one ingress permission in a comparable form; its algebra (keys, claims, plans) is
// package sgrules, pure. This package converts it from and to the EC2 API's permissions.
type rule = sgrules.Rule

func rulesOf(g *types.SecurityGroup) []rule {
	var out []rule
	for _, p := range g.IpPermissions {
		r := rule{Proto: aws.ToString(p.IpProtocol), From: aws.ToInt32(p.FromPort), To: aws.ToInt32(p.ToPort)}
		if r.Proto == "-1" {
			r.From, r.To = 0, 0
		}
		for _, ip := range p.IpRanges {
			c := r
			c.CIDR, c.Desc = aws.ToString(ip.CidrIp), aws.ToString(ip.Description)
			out = append(out, c)
		}
		for _, ip := range p.Ipv6Ranges {
			c := r
			c.CIDR, c.Desc = aws.ToString(ip.CidrIpv6), aws.ToString(ip.Description)
			out = append(out, c)
		}
		for _, ug := range p.UserIdGroupPairs {
			c := r
			c.Group, c.Desc = aws.ToString(ug.GroupId), aws.ToString(ug.Description)
			out = append(out, c)
		}
	}
	return out
}

// permissions is rs in the API's shape: IPv6 ranges as Ipv6Ranges, descriptions only when
// authorizing (a revoke matches rules without them).
func permissions(rs []rule, withDesc bool) []types.IpPermission {
	var out []types.IpPermission
	for _, r := range rs {
		p := types.IpPermission{IpProtocol: aws.String(r.Proto)}
		if r.Proto != "-1" {
			p.FromPort, p.ToPort = aws.Int32(r.From), aws.Int32(r.To)
		}
		var desc *string
		if withDesc && r.Desc != "" {
			desc = aws.String(r.Desc)
		}
		switch {
		case r.CIDR == "":
			p.UserIdGroupPairs = []types.UserIdGroupPair{{GroupId: aws.String(r.Group), Description: desc}}
		case sgrules.IsIPv6(r.CIDR):
			p.Ipv6Ranges = []types.Ipv6Range{{CidrIpv6: aws.String(r.CIDR), Description: desc}}
		default:
			p.IpRanges = []types.IpRange{{CidrIp: aws.String(r.CIDR), Description: desc}}
		}
		out = append(out, p)
	}
	return out
}

// ec2Tags are m as EC2 tags, in key order.
func ec2Tags(m map[string]string) []types.Tag {
	var ts []types.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ts = append(ts, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return ts
}

// createGroup makes the security group gname in vpc, tagged with tags; it returns its ID.
func (l *loadBalancers) createGroup(ctx context.Context, gname, vpc, desc string, tags map[string]string) (string, error) {
	out, err := l.c.api.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(gname), VpcId: aws.String(vpc), Description: aws.String(desc),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroup, Tags: ec2Tags(tags)}},
	})
	if err != nil {
		return "", fmt.Errorf("aws: CreateSecurityGroup %s: %w", gname, err)
	}
	if aws.ToString(out.GroupId) == "" {
		return "", errEmptyAnswer("CreateSecurityGroup", gname)
	}
	l.gsnap.ForgetAll()
	return aws.ToString(out.GroupId), nil
}

// takeOverGroup adds svc's ownership tags to the upstream CCM's group gid (of a load balancer
// of kind ELB or NLB), which the plan proved the Service's.
func (l *loadBalancers) takeOverGroup(ctx context.Context, svc *v1.Service, gid, kind string) error {
	if _, err := l.c.api.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{gid}, Tags: ec2Tags(l.identity(svc).Tags())}); err != nil {
		return fmt.Errorf("aws: CreateTags %s: %w", gid, err)
	}
	l.gsnap.ForgetAll()
	klog.InfoS("Took over the upstream CCM's "+kind+" security group", "service", klog.KObj(svc), "group", gid)
	return nil
}

// syncRules authorizes the missing wanted rules and revokes those of ours (mine) that are not
// wanted. Rules that are not ours are never revoked, whatever their ports or sources. It
// returns what it changed, one phrase per rule.
func (l *loadBalancers) syncRules(ctx context.Context, groupID string, have, want []rule, mine func(rule) bool) ([]string, error) {
	add, del := sgrules.Plan(have, want, mine)
	return l.writeRules(ctx, groupID, add, del)
}

// writeRules authorizes add and revokes del in the group; it returns what it changed.
func (l *loadBalancers) writeRules(ctx context.Context, groupID string, add, del []rule) ([]string, error) {
	var changed []string
	if len(add)+len(del) > 0 {
		l.gsnap.ForgetAll() // the listing no longer holds this group as it is
	}
	if len(add) > 0 {
		if _, err := l.c.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(groupID), IpPermissions: permissions(add, true)}); err != nil {
			return nil, fmt.Errorf("aws: AuthorizeSecurityGroupIngress %s: %w", groupID, err)
		}
		for _, r := range add {
			changed = append(changed, fmt.Sprintf("ingress rule %s of security group %s was missing", r.Text(), groupID))
		}
	}
	if len(del) > 0 {
		if _, err := l.c.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(groupID), IpPermissions: permissions(del, false)}); err != nil && !isCode(err, "InvalidPermission.NotFound") {
			return nil, fmt.Errorf("aws: RevokeSecurityGroupIngress %s: %w", groupID, err)
		}
		for _, r := range del {
			changed = append(changed, fmt.Sprintf("ingress rule %s of security group %s was not wanted", r.Text(), groupID))
		}
	}
	return changed, nil
}

// checkNamedGroups checks the security groups a Service names by annotation: each must exist
// and be the Service's own by its tags, or be allowed by the operator.
func (l *loadBalancers) checkNamedGroups(ctx context.Context, id ownership.Identity, suffix string, ids []string) error {
	ann := annotations.Prefix + suffix
	out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{GroupIds: ids})
	if isCode(err, "InvalidGroup.NotFound", "InvalidGroupId.Malformed") {
		// EC2 refuses the whole list: which one is missing is read one by one (this path only).
		for _, g := range ids {
			if _, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{g}}); isCode(err, "InvalidGroup.NotFound", "InvalidGroupId.Malformed") {
				return annotations.Error(suffix, "security group %q does not exist", g)
			}
		}
		return annotations.Error(suffix, "names a security group that does not exist")
	}
	if err != nil {
		return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	allow := l.c.cfg.allow()
	for _, want := range ids {
		i := slices.IndexFunc(out.SecurityGroups, func(g types.SecurityGroup) bool { return aws.ToString(g.GroupId) == want })
		if i < 0 {
			return annotations.Error(suffix, "security group %q does not exist", want)
		}
		a, _ := annotations.Table.Lookup(ann)
		if err := reach.Named(id, allow, a, want, reach.Evidence{Tags: groupTags(&out.SecurityGroups[i])}); err != nil {
			return err
		}
	}
	return nil
}

// revokeRulesFrom removes, from every group with a rule whose source is one of sources, the
// rules this Service added (its description), and any rule from ownID, the ELB's own group.
func (l *loadBalancers) revokeRulesFrom(ctx context.Context, id ownership.Identity, sources []string, ownID string) error {
	sources = slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(sources))), func(s string) bool { return s == "" })
	if len(sources) == 0 {
		return nil
	}
	refs, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("ip-permission.group-id", sources...)}})
	if err != nil {
		return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	mine := func(r rule) bool {
		return (ownership.DescribedBy(id, r.Desc) && slices.Contains(sources, r.Group)) || (ownID != "" && r.Group == ownID)
	}
	for i := range refs.SecurityGroups {
		ref := &refs.SecurityGroups[i]
		if _, err := l.syncRules(ctx, aws.ToString(ref.GroupId), rulesOf(ref), nil, mine); err != nil {
			return err
		}
	}
	return nil
}

// deleteGroup removes the ELB's own security group, if this Service owns it, after the rules
// that refer to it.
func (l *loadBalancers) deleteGroup(ctx context.Context, svc *v1.Service, g *types.SecurityGroup) error {
	id := aws.ToString(g.GroupId)
	l.gsnap.ForgetAll()
	if _, err := l.c.api.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: g.GroupId}); err != nil {
		if isCode(err, "DependencyViolation") {
			// The ELB's network interfaces linger for a while after it is deleted.
			return api.NewRetryError(fmt.Sprintf("security group %s is still in use; retrying", id), 15*time.Second)
		}
		if !isCode(err, "InvalidGroup.NotFound") {
			return fmt.Errorf("aws: DeleteSecurityGroup %s: %w", id, err)
		}
	}
	klog.InfoS("Deleted ELB security group", "service", klog.KObj(svc), "group", id)
	return nil
}

// nodeGroupsOf returns the groups ids from the listing when it holds every one, else reads them.
func (l *loadBalancers) groupsByID(ctx context.Context, ids []string) ([]types.SecurityGroup, error) {
	var out []types.SecurityGroup
	for _, id := range ids {
		g, _ := l.gsnap.Get(ctx, id, l.listGroups)
		if g == nil {
			return l.describeGroups(ctx, ids)
		}
		out = append(out, *g)
	}
	return out, nil
}

// ownGroup finds the ELB's own group in the listing, else by its name.
func (l *loadBalancers) ownGroup(ctx context.Context, lbName, vpc string) (*types.SecurityGroup, error) {
	if vpc != "" {
		if g, _ := l.gsnap.Get(ctx, "name:"+vpc+"/"+groupName(lbName), l.listGroups); g != nil {
			return g, nil
		}
	}
	return l.findGroup(ctx, lbName, vpc)
}

// ownedELBGroups returns the ELB security groups (named k8s-elb-*) whose tags say they are
// id's, UID included, in any VPC. One tagged without the UID is found by its name only
// (deleteClassic): tags alone, without the UID, can be another cluster's copy of a tenant's.
func (l *loadBalancers) ownedELBGroups(ctx context.Context, id ownership.Identity) ([]types.SecurityGroup, error) {
	out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		filter("tag:"+ownership.ServiceTag, id.Service()), filter("tag-key", ownership.ClusterTagPrefix+id.Cluster)}})

	if err != nil {
		return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	var gs []types.SecurityGroup
	for _, g := range out.SecurityGroups {
		if strings.HasPrefix(aws.ToString(g.GroupName), groupName("")) && ownership.IsExactly(id, groupTags(&g)) {
			gs = append(gs, g)
		}
	}
	return gs, nil
}

// clusterGroups returns the security groups tagged for this cluster: where an NLB's node
// rules are when the NLB (and its tag naming the node groups) is gone.
func (l *loadBalancers) clusterGroups(ctx context.Context) ([]string, error) {
	out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		filter("tag-key", ownership.ClusterTagPrefix+l.c.cfg.ClusterID())}})

	if err != nil {
		return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	var ids []string
	for _, g := range out.SecurityGroups {
		ids = append(ids, aws.ToString(g.GroupId))
	}
	return ids, nil
}
