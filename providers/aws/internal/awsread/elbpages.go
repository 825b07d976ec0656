package awsread

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// ELBv2 Describe calls answer in pages (NextMarker); these read every page into one answer,
// as ec2pages.go does for EC2. The first failed page fails it all.

type TargetGroupsAPI interface {
	DescribeTargetGroups(context.Context, *elbv2.DescribeTargetGroupsInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
}

type ListenersAPI interface {
	DescribeListeners(context.Context, *elbv2.DescribeListenersInput, ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error)
}

// DescribeTargetGroupsAll is DescribeTargetGroups over every page of the answer.
func DescribeTargetGroupsAll(ctx context.Context, api TargetGroupsAPI, in *elbv2.DescribeTargetGroupsInput) (*elbv2.DescribeTargetGroupsOutput, error) {
	next := *in
	all := &elbv2.DescribeTargetGroupsOutput{}
	for {
		out, err := api.DescribeTargetGroups(ctx, &next)
		if err != nil {
			return nil, err
		}
		all.TargetGroups = append(all.TargetGroups, out.TargetGroups...)
		if aws.ToString(out.NextMarker) == "" {
			return all, nil
		}
		next.Marker = out.NextMarker
	}
}

// DescribeListenersAll is DescribeListeners over every page of the answer.
func DescribeListenersAll(ctx context.Context, api ListenersAPI, in *elbv2.DescribeListenersInput) (*elbv2.DescribeListenersOutput, error) {
	next := *in
	all := &elbv2.DescribeListenersOutput{}
	for {
		out, err := api.DescribeListeners(ctx, &next)
		if err != nil {
			return nil, err
		}
		all.Listeners = append(all.Listeners, out.Listeners...)
		if aws.ToString(out.NextMarker) == "" {
			return all, nil
		}
		next.Marker = out.NextMarker
	}
}
