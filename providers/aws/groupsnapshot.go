package aws

// Listings of the security groups and target groups a resync compares, so that unchanged load
// balancers cost no read per load balancer for them (see snapshot).

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

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

// targetGroupsOf returns the NLB's target groups from the listing, else reads them.
func (l *loadBalancers) targetGroupsOf(ctx context.Context, arn string) ([]v2types.TargetGroup, error) {
	if tgs, _ := l.tsnap.Get(ctx, arn, l.listTGs); tgs != nil {
		return *tgs, nil
	}
	return l.attachedTGs(ctx, arn)
}
