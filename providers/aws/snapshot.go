package aws

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
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
