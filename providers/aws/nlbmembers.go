package aws

// NLB members (registered targets). Every sync reads each target group's targets
// (DescribeTargetHealth; no listing carries them: observeNLB) and writes only the difference
// (nlbplan), so a target deregistered by hand is registered again by the next sync, and a sync
// with nothing changed writes nothing.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// changeTargets writes add and del: at most one Register and one Deregister.
func (l *loadBalancers) changeTargets(ctx context.Context, tgArn string, add, del []string) error {
	targets := func(ids []string) []v2types.TargetDescription {
		out := make([]v2types.TargetDescription, 0, len(ids))
		for _, id := range ids {
			out = append(out, v2types.TargetDescription{Id: aws.String(id)})
		}
		return out
	}
	if len(add) > 0 {
		if _, err := l.c.api.elbv2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgArn), Targets: targets(add)}); err != nil {
			return fmt.Errorf("aws: RegisterTargets: %w", err)
		}
	}
	if len(del) > 0 {
		if _, err := l.c.api.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgArn), Targets: targets(del)}); err != nil {
			return fmt.Errorf("aws: DeregisterTargets: %w", err)
		}
	}
	return nil
}
