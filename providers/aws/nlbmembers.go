package aws

// NLB members (registered targets). Every sync reads each target group's targets
// (DescribeTargetHealth; no listing carries them) and writes only the difference, so a target
// deregistered by hand is registered again by the next sync, and a sync with nothing changed
// writes nothing.

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// setTargets makes each of tgs (target group ARNs, names for the Event) hold exactly members;
// it returns what it changed.
func (l *loadBalancers) setTargets(ctx context.Context, tgs []v2types.TargetGroup, members []string) ([]string, error) {
	var changes []string
	for _, tg := range tgs {
		arn := aws.ToString(tg.TargetGroupArn)
		have, err := l.readTargets(ctx, arn)
		if err != nil {
			return nil, err
		}
		add, del := diffIDs(have, members)
		if err := l.changeTargets(ctx, arn, add, del); err != nil {
			return nil, err
		}
		for _, id := range add {
			changes = append(changes, fmt.Sprintf("target %s was not registered in target group %s", id, aws.ToString(tg.TargetGroupName)))
		}
		for _, id := range del {
			changes = append(changes, fmt.Sprintf("target %s was registered in target group %s but is no member", id, aws.ToString(tg.TargetGroupName)))
		}
	}
	return changes, nil
}

// diffIDs is what to add to have and remove from it to make it want.
func diffIDs(have, want []string) (add, del []string) {
	for _, id := range want {
		if !slices.Contains(have, id) {
			add = append(add, id)
		}
	}
	for _, id := range have {
		if !slices.Contains(want, id) {
			del = append(del, id)
		}
	}
	return add, del
}

func (l *loadBalancers) readTargets(ctx context.Context, tgArn string) ([]string, error) {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tgArn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetHealth: %w", err)
	}
	var have []string
	for _, d := range out.TargetHealthDescriptions {
		if d.Target != nil {
			have = append(have, aws.ToString(d.Target.Id))
		}
	}
	return have, nil
}

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
