package aws

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// legacySigningStep is the SDK clients' Finalize step that copies a signing name and region
// set on the context into the resolved auth scheme, just before "Signing". Setting them on the
// context right before it is the one hook all four clients (EC2, ELB, ELBv2, STS) share.
const legacySigningStep = "setLegacyContextSigningOptions"

// signingOverride makes a client sign for a [ServiceOverride]'s SigningName and SigningRegion
// instead of the service's own name and the client's region (for AWS-compatible clouds and
// endpoints behind a proxy that expect another credential scope). Nil when neither is set.
func signingOverride(o *ServiceOverride) func(*middleware.Stack) error {
	if o == nil || (o.SigningName == "" && o.SigningRegion == "") {
		return nil
	}
	name, region := o.SigningName, o.SigningRegion
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("ccmSigningOverride",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if name != "" {
					ctx = awsmiddleware.SetSigningName(ctx, name)
				}
				if region != "" {
					ctx = awsmiddleware.SetSigningRegion(ctx, region)
				}
				return next.HandleFinalize(ctx, in)
			}), legacySigningStep, middleware.Before)
	}
}
