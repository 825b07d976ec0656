package aws

// Listings of the cluster's load balancers, security groups and target groups a resync compares,
// so that unchanged load balancers cost no read per load balancer for them.

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// The cluster's listings (awsread.Snapshot): classic ELBs, NLBs, security groups and target
// groups with their tags, shared by every Service's sync.
type (
	elbSnapshot = awsread.Snapshot[elbtypes.LoadBalancerDescription]
	nlbSnapshot = awsread.Snapshot[v2types.LoadBalancer]
)

// listELBs lists the cluster's classic ELBs (by name prefix, and the upstream CCM's names for the
// takeover) and their tags.
func (l *loadBalancers) listELBs(ctx context.Context) (map[string]*elbtypes.LoadBalancerDescription, map[string]map[string]string, error) {
	lbs := map[string]*elbtypes.LoadBalancerDescription{}
	var names []string
	in := &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elb.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for i := range out.LoadBalancerDescriptions {
			d := &out.LoadBalancerDescriptions[i]
			if n := aws.ToString(d.LoadBalancerName); strings.HasPrefix(n, lbname.AWSELB.Prefix) || upstream.IsLBName(n) {
				lbs[n] = d
				names = append(names, n)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	tags := map[string]map[string]string{}
	err := awsread.InChunks(names, func(chunk []string) error {
		out, err := l.c.api.elb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			tags[aws.ToString(td.LoadBalancerName)] = awsread.TagMap(td.Tags, func(t elbtypes.Tag) (*string, *string) { return t.Key, t.Value })
		}
		return nil
	})
	return lbs, tags, err
}

// listNLBs lists the cluster's NLBs (by type and name prefix) and their tags.
func (l *loadBalancers) listNLBs(ctx context.Context) (map[string]*v2types.LoadBalancer, map[string]map[string]string, error) {
	lbs := map[string]*v2types.LoadBalancer{}
	byARN := map[string]string{}
	var arns []string
	in := &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elbv2.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for i := range out.LoadBalancers {
			lb := &out.LoadBalancers[i]
			if n := aws.ToString(lb.LoadBalancerName); lb.Type == v2types.LoadBalancerTypeEnumNetwork && (strings.HasPrefix(n, lbname.AWSELB.Prefix) || upstream.IsLBName(n)) {
				lbs[n] = lb
				byARN[aws.ToString(lb.LoadBalancerArn)] = n
				arns = append(arns, aws.ToString(lb.LoadBalancerArn))
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	tags := map[string]map[string]string{}
	err := awsread.InChunks(arns, func(chunk []string) error {
		out, err := l.c.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			tags[byARN[aws.ToString(td.ResourceArn)]] = awsread.TagMap(td.Tags, func(t v2types.Tag) (*string, *string) { return t.Key, t.Value })
		}
		return nil
	})
	return lbs, tags, err
}

type (
	// groupSnapshot holds the groups tagged for this cluster (the ELBs' own groups and tagged
	// node groups), by ID and by "name:" + name. Any rule or group write forgets all of it.
	groupSnapshot = awsread.Snapshot[types.SecurityGroup]
	// tgSnapshot holds the cluster's target groups by the ARN of the NLB using them.
	tgSnapshot = awsread.Snapshot[[]v2types.TargetGroup]
)

func (l *loadBalancers) listGroups(ctx context.Context) (map[string]*types.SecurityGroup, map[string]map[string]string, error) {
	out := map[string]*types.SecurityGroup{}
	in := &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("tag-key", "kubernetes.io/cluster/"+l.c.cfg.ClusterID())}}
	for {
		page, err := l.c.api.ec2.DescribeSecurityGroups(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for i := range page.SecurityGroups {
			g := &page.SecurityGroups[i]
			out[aws.ToString(g.GroupId)] = g
			out["name:"+aws.ToString(g.VpcId)+"/"+aws.ToString(g.GroupName)] = g
		}
		if aws.ToString(page.NextToken) == "" {
			return out, map[string]map[string]string{}, nil
		}
		in.NextToken = page.NextToken
	}
}

func (l *loadBalancers) listTGs(ctx context.Context) (map[string]*[]v2types.TargetGroup, map[string]map[string]string, error) {
	byLB := map[string]*[]v2types.TargetGroup{}
	in := &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elbv2.DescribeTargetGroups(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for _, tg := range out.TargetGroups {
			if n := aws.ToString(tg.TargetGroupName); !strings.HasPrefix(n, tgNames.Prefix) && !upstream.IsTGName(n) {
				continue
			}
			for _, lb := range tg.LoadBalancerArns {
				if byLB[lb] == nil {
					byLB[lb] = &[]v2types.TargetGroup{}
				}
				*byLB[lb] = append(*byLB[lb], tg)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			return byLB, map[string]map[string]string{}, nil
		}
		in.Marker = out.NextMarker
	}
}
