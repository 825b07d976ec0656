package awsread

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// EC2 may answer a Describe in pages (NextToken), even without MaxResults and even with an
// empty page before the last; these read every page into one answer, so a call site reads
// the whole list by changing only the function it calls. The first failed page fails it all.

type SecurityGroupsAPI interface {
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
}

type SubnetsAPI interface {
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
}

// DescribeSecurityGroupsAll is DescribeSecurityGroups over every page of the answer.
func DescribeSecurityGroupsAll(ctx context.Context, api SecurityGroupsAPI, in *ec2.DescribeSecurityGroupsInput) (*ec2.DescribeSecurityGroupsOutput, error) {
	next := *in
	all := &ec2.DescribeSecurityGroupsOutput{}
	for {
		out, err := api.DescribeSecurityGroups(ctx, &next)
		if err != nil {
			return nil, err
		}
		all.SecurityGroups = append(all.SecurityGroups, out.SecurityGroups...)
		if aws.ToString(out.NextToken) == "" {
			return all, nil
		}
		next.NextToken = out.NextToken
	}
}

// DescribeSubnetsAll is DescribeSubnets over every page of the answer.
func DescribeSubnetsAll(ctx context.Context, api SubnetsAPI, in *ec2.DescribeSubnetsInput) (*ec2.DescribeSubnetsOutput, error) {
	next := *in
	all := &ec2.DescribeSubnetsOutput{}
	for {
		out, err := api.DescribeSubnets(ctx, &next)
		if err != nil {
			return nil, err
		}
		all.Subnets = append(all.Subnets, out.Subnets...)
		if aws.ToString(out.NextToken) == "" {
			return all, nil
		}
		next.NextToken = out.NextToken
	}
}
