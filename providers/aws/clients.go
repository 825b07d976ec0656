package aws

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// clients are the SDK clients the provider uses, built once and shared by every call.
type clients struct {
	ec2   *ec2.Client
	elb   *elb.Client
	elbv2 *elbv2.Client
}

// newClients builds the SDK clients: region and endpoints from the config, credentials from
// the SDK's default chain (or CredentialsFile), optionally through RoleARN. Every attempt is
// counted by operation in ccm_cloud_api_requests_total (see countCalls). Credentials are never logged: the
// SDK's request logging stays off.
func newClients(ctx context.Context, cfg *Config, policy retryPolicy) (*clients, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(cfg.region()),
		awsconfig.WithClientLogMode(0),
		awsconfig.WithRetryer(policy.retryer),
		awsconfig.WithAPIOptions([]func(*middleware.Stack) error{countCalls}),
	}
	if f := cfg.Global.CredentialsFile; f != "" {
		opts = append(opts,
			awsconfig.WithSharedCredentialsFiles([]string{f}),
			awsconfig.WithSharedConfigFiles([]string{}),
			awsconfig.WithSharedConfigProfile("default"),
			awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	base, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws: loading SDK configuration: %w", err)
	}
	if cfg.Global.RoleARN != "" {
		// The base credentials sign only AssumeRole; every other call is signed with the
		// role's temporary credentials, refreshed by the cache before they expire.
		stsClient := sts.NewFromConfig(base, func(o *sts.Options) {
			applyOverride(&o.BaseEndpoint, &o.APIOptions, cfg.override(serviceSTS))
			o.APIOptions = append(slices.Clip(o.APIOptions), sourceHeaders(cfg.Global.RoleARN, cfg.Global.SourceARN))
		})
		base.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, cfg.Global.RoleARN,
			func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = "ccm-aws" }))
	}
	// ELB and ELBv2 share one endpoint in AWS, so one override serves both.
	c := &clients{
		ec2: ec2.NewFromConfig(base, func(o *ec2.Options) { applyOverride(&o.BaseEndpoint, &o.APIOptions, cfg.override(serviceEC2)) }),
		elb: elb.NewFromConfig(base, func(o *elb.Options) {
			applyOverride(&o.BaseEndpoint, &o.APIOptions, cfg.override(serviceELB))
		}),
		elbv2: elbv2.NewFromConfig(base, func(o *elbv2.Options) {
			applyOverride(&o.BaseEndpoint, &o.APIOptions, cfg.override(serviceELBv2, serviceELB))
		}),
	}
	return c, nil
}

// sourceHeaders adds the confused-deputy headers to AssumeRole, as the upstream CCM sends them:
// x-amz-source-account (the role's account) always, x-amz-source-arn when SourceARN is set. A
// role whose trust policy has aws:SourceAccount / aws:SourceArn conditions needs them.
func sourceHeaders(roleARN, sourceARN string) func(*middleware.Stack) error {
	headers := map[string]string{}
	if a, err := arn.Parse(roleARN); err == nil && a.AccountID != "" {
		headers["x-amz-source-account"] = a.AccountID
	}
	if sourceARN != "" {
		headers["x-amz-source-arn"] = sourceARN
	}
	return func(st *middleware.Stack) error {
		return st.Build.Add(middleware.BuildMiddlewareFunc("ccmSourceHeaders",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					for k, v := range headers {
						req.Header.Set(k, v)
					}
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
}

// applyOverride points a client at a [ServiceOverride]'s URL and signing scope.
func applyOverride(endpoint **string, apiOptions *[]func(*middleware.Stack) error, o *ServiceOverride) {
	if o == nil {
		return
	}
	if o.URL != "" {
		*endpoint = aws.String(o.URL)
	}
	if f := signingOverride(o); f != nil {
		// Clip: the slice comes from the shared aws.Config; appending in place could let one
		// client overwrite another's option.
		*apiOptions = append(slices.Clip(*apiOptions), f)
	}
}
