package aws

// Deletes find what a Service owns by its ownership tags, not by the names or the load balancer
// a reconcile would derive now: a ccm killed between two steps of a creation (a security group
// made, its ELB not yet; target groups made for ports the Service no longer has) or of a delete
// (the load balancer gone, its group not yet) leaves objects only their tags lead back to.

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

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

// ownedTargetGroups lists the cluster's target groups (by name prefix, paged) and returns
// those whose tags say they are id's, UID included: tags without a UID are what an upstream
// cluster copies from a tenant's additional-resource-tags verbatim (onto groups whose names can
// even carry ccm's prefix, for a namespace named "tg"), so such a group is the Service's only
// when found attached to its load balancer (ownsTG). ccm has written the UID on every target
// group it reconciled since UIDs were recorded.
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

// unusedOwnGroup is the ELB's own group when the ELB uses named groups instead (nil: none, or
// not proven the Service's).
func (l *loadBalancers) unusedOwnGroup(ctx context.Context, svc *v1.Service, lbName, vpc string) *types.SecurityGroup {
	if vpc == "" {
		return nil
	}
	g, _ := l.gsnap.Get(ctx, "name:"+vpc+"/"+groupName(lbName), l.listGroups)
	id := l.identity(svc)
	if g == nil || (!ownership.Is(id, groupTags(g)) && !upstream.IsELBGroup(id, svc, lbName, g)) {
		return nil
	}
	return g
}

// dropUnusedOwnGroup deletes the ELB's own group g, no longer used, after the rules from it.
func (l *loadBalancers) dropUnusedOwnGroup(ctx context.Context, svc *v1.Service, g *types.SecurityGroup) error {
	own := *g
	ownID := aws.ToString(own.GroupId)
	if err := l.revokeRulesFrom(ctx, l.identity(svc), []string{ownID}, ownID); err != nil {
		return err
	}
	return l.deleteGroup(ctx, svc, &own)
}
