package awsread

import (
	"errors"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// IsCode says whether err is an AWS API error with one of codes.
func IsCode(err error, codes ...string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && slices.Contains(codes, ae.ErrorCode())
}

// Filter is an EC2 Describe filter.
func Filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}
