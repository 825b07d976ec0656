package aws

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/lbname"
)

// groupName is the name of the security group made for one ELB.
func groupName(lbName string) string { return "k8s-elb-" + lbName }

// nodeGroup is the security group of a node that ELB rules are added to: its first one, as
// the upstream provider does when an instance has a single group.
func nodeGroup(in *types.Instance, _ string) string {
	if len(in.SecurityGroups) == 0 {
		return ""
	}
	return aws.ToString(in.SecurityGroups[0].GroupId)
}

func (l *loadBalancers) findGroup(ctx context.Context, lbName, vpc string) (*types.SecurityGroup, error) {
	fs := []types.Filter{filter("group-name", groupName(lbName))}
	if vpc != "" {
		fs = append(fs, filter("vpc-id", vpc))
	}
	out, err := l.c.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: fs})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	if len(out.SecurityGroups) == 0 {
		return nil, nil
	}
	return &out.SecurityGroups[0], nil
}

// rule is one ingress permission in a comparable form.
type rule struct {
	proto    string
	from, to int32
	cidr     string
	group    string
}

func rulesOf(g *types.SecurityGroup) []rule {
	var out []rule
	for _, p := range g.IpPermissions {
		r := rule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
		if r.proto == "-1" {
			r.from, r.to = 0, 0
		}
		for _, ip := range p.IpRanges {
			c := r
			c.cidr = aws.ToString(ip.CidrIp)
			out = append(out, c)
		}
		for _, ug := range p.UserIdGroupPairs {
			c := r
			c.group = aws.ToString(ug.GroupId)
			out = append(out, c)
		}
	}
	return out
}

func permissions(rs []rule) []types.IpPermission {
	var out []types.IpPermission
	for _, r := range rs {
		p := types.IpPermission{IpProtocol: aws.String(r.proto)}
		if r.proto != "-1" {
			p.FromPort, p.ToPort = aws.Int32(r.from), aws.Int32(r.to)
		}
		if r.cidr != "" {
			p.IpRanges = []types.IpRange{{CidrIp: aws.String(r.cidr)}}
		} else {
			p.UserIdGroupPairs = []types.UserIdGroupPair{{GroupId: aws.String(r.group)}}
		}
		out = append(out, p)
	}
	return out
}

// ensureGroupRules makes the ELB's own security group (when it has one) with ingress on its
// listener ports from the source ranges, and lets the ELB's group reach the node groups.
// It sets want.groupIDs.
func (l *loadBalancers) ensureGroupRules(ctx context.Context, svc *v1.Service, name string, want *desired) error {
	if !want.OwnGroup {
		want.groupIDs = want.SecurityGroups
	} else {
		g, err := l.findGroup(ctx, name, want.vpc)
		if err != nil {
			return err
		}
		if g == nil {
			tags := lbname.Tags(l.c.cfg.ClusterID(), svc.Namespace, svc.Name)
			var ts []types.Tag
			for k, v := range tags {
				ts = append(ts, types.Tag{Key: aws.String(k), Value: aws.String(v)})
			}
			out, err := l.c.api.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
				GroupName: aws.String(groupName(name)), VpcId: aws.String(want.vpc),
				Description:       aws.String(fmt.Sprintf("Kubernetes ELB %s for %s/%s", name, svc.Namespace, svc.Name)),
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroup, Tags: ts}},
			})
			if err != nil {
				return fmt.Errorf("aws: CreateSecurityGroup %s: %w", groupName(name), err)
			}
			g = &types.SecurityGroup{GroupId: out.GroupId}
		}
		var rs []rule
		for _, ls := range want.Listeners {
			port, _ := strconv.Atoi(strings.Split(ls, ":")[1])
			for _, cidr := range want.SourceRanges {
				rs = append(rs, rule{proto: "tcp", from: int32(port), to: int32(port), cidr: cidr})
			}
		}
		if err := l.syncRules(ctx, aws.ToString(g.GroupId), rulesOf(g), rs, func(rule) bool { return true }); err != nil {
			return err
		}
		want.groupIDs = []string{aws.ToString(g.GroupId)}
	}
	if l.c.cfg.Global.DisableSecurityGroupIngress || len(want.NodeGroups) == 0 || len(want.groupIDs) == 0 {
		return nil
	}
	out, err := l.c.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: want.NodeGroups})
	if err != nil {
		return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	from := want.groupIDs[0]
	for i := range out.SecurityGroups {
		g := &out.SecurityGroups[i]
		need := []rule{{proto: "-1", group: from}}
		// Only the rule for this ELB's group is ours to manage on a node group.
		if err := l.syncRules(ctx, aws.ToString(g.GroupId), rulesOf(g), need, func(r rule) bool { return r.group == from }); err != nil {
			return err
		}
	}
	return nil
}

// syncRules authorizes missing rules and revokes those of ours (mine) that are not wanted.
func (l *loadBalancers) syncRules(ctx context.Context, groupID string, have, want []rule, mine func(rule) bool) error {
	var add, del []rule
	for _, r := range want {
		if !slices.Contains(have, r) {
			add = append(add, r)
		}
	}
	for _, r := range have {
		if mine(r) && !slices.Contains(want, r) {
			del = append(del, r)
		}
	}
	if len(add) > 0 {
		if _, err := l.c.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(groupID), IpPermissions: permissions(add)}); err != nil && !isCode(err, "InvalidPermission.Duplicate") {
			return fmt.Errorf("aws: AuthorizeSecurityGroupIngress %s: %w", groupID, err)
		}
	}
	if len(del) > 0 {
		if _, err := l.c.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(groupID), IpPermissions: permissions(del)}); err != nil && !isCode(err, "InvalidPermission.NotFound") {
			return fmt.Errorf("aws: RevokeSecurityGroupIngress %s: %w", groupID, err)
		}
	}
	return nil
}

// deleteGroup removes the ELB's own security group and the rules in other groups that refer to
// it, if this cluster owns it for svc.
func (l *loadBalancers) deleteGroup(ctx context.Context, svc *v1.Service, name string) error {
	g, err := l.findGroup(ctx, name, l.c.cfg.Global.VPC)
	if err != nil || g == nil {
		return err
	}
	tags := map[string]string{}
	for _, t := range g.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	if ns, n, ok := lbname.Owner(l.c.cfg.ClusterID(), tags); !ok || ns != svc.Namespace || n != svc.Name {
		klog.InfoS("Not deleting a security group this cluster does not own", "group", aws.ToString(g.GroupId))
		return nil
	}
	id := aws.ToString(g.GroupId)
	refs, err := l.c.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("ip-permission.group-id", id)}})
	if err != nil {
		return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	for i := range refs.SecurityGroups {
		ref := &refs.SecurityGroups[i]
		if err := l.syncRules(ctx, aws.ToString(ref.GroupId), rulesOf(ref), nil, func(r rule) bool { return r.group == id }); err != nil {
			return err
		}
	}
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
