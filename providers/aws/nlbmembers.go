package aws

// NLB members (registered targets) without a tag write per Node change.
//
// Target groups have no cheap "list my targets" in a listing, and proving members unchanged
// from a tag means rewriting that tag on every Node change (a second write per NLB). Instead
// this process remembers, per NLB, the target groups and members it last wrote or read: a
// Node change is then one Register/DeregisterTargets per target group and no read, and after
// a restart (nothing remembered) each target group's targets are read once
// (DescribeTargetHealth) and written only if they differ. A remembered answer is dropped
// before any write to that NLB, so an interrupted write is read again, never trusted.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// nlbMembers remembers, by NLB name, the target groups and members last synced.
type nlbMembers struct {
	mu sync.Mutex
	m  map[string]synced
}

type synced struct {
	tgs     []string // target group ARNs
	members []string // instance IDs in every one of them, sorted
}

func (n *nlbMembers) get(name string) (synced, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.m[name]
	return s, ok
}

func (n *nlbMembers) set(name string, s synced) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]synced{}
	}
	n.m[name] = s
}

func (n *nlbMembers) forget(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.m, name)
}

// tgSnapshot is a listing of the cluster's target groups by the ARN of the NLB using them, so
// that a restart finds each NLB's groups without one DescribeTargetGroups per NLB.
type tgSnapshot = snapshot[[]string]

// listTGs lists the cluster's target groups (by name prefix), paged, by load balancer ARN.
func (l *loadBalancers) listTGs(ctx context.Context) (map[string]*[]string, map[string]map[string]string, error) {
	byLB := map[string]*[]string{}
	in := &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elbv2.DescribeTargetGroups(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for _, tg := range out.TargetGroups {
			if !strings.HasPrefix(aws.ToString(tg.TargetGroupName), tgNames.Prefix) {
				continue
			}
			for _, lb := range tg.LoadBalancerArns {
				if byLB[lb] == nil {
					byLB[lb] = &[]string{}
				}
				*byLB[lb] = append(*byLB[lb], aws.ToString(tg.TargetGroupArn))
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			return byLB, nil, nil
		}
		in.Marker = out.NextMarker
	}
}

// syncNLBMembers makes members the targets of every target group of the NLB name (arn) whose
// configuration is otherwise as wanted. With the members remembered as they are, it costs nothing.
func (l *loadBalancers) syncNLBMembers(ctx context.Context, name, arn string, members []string) error {
	prev, ok := l.targets.get(name)
	if ok && slices.Equal(prev.members, sorted(members)) {
		return nil
	}
	var tgs []string
	switch {
	case ok:
		tgs = prev.tgs
	default:
		if listed, _ := l.tsnap.get(ctx, arn, l.listTGs); listed != nil {
			tgs = *listed
		} else {
			attached, err := l.attachedTGs(ctx, arn)
			if err != nil {
				return err
			}
			for _, tg := range attached {
				tgs = append(tgs, aws.ToString(tg.TargetGroupArn))
			}
		}
	}
	return l.setTargets(ctx, name, tgs, members)
}

// setTargets registers and deregisters instances so that each of tgs holds exactly members,
// diffing against the remembered members where it has them and reading the targets otherwise.
func (l *loadBalancers) setTargets(ctx context.Context, name string, tgs, members []string) error {
	prev, known := l.targets.get(name)
	l.targets.forget(name)
	for _, tg := range tgs {
		var have []string
		if known && slices.Contains(prev.tgs, tg) {
			have = prev.members
		} else {
			var err error
			if have, err = l.readTargets(ctx, tg); err != nil {
				return err
			}
		}
		if err := l.changeTargets(ctx, tg, have, members); err != nil {
			return err
		}
	}
	l.targets.set(name, synced{tgs: slices.Clone(tgs), members: sorted(members)})
	return nil
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

// changeTargets writes the difference between have and want: at most one Register and one
// Deregister.
func (l *loadBalancers) changeTargets(ctx context.Context, tgArn string, have, want []string) error {
	var add, del []v2types.TargetDescription
	for _, id := range want {
		if !slices.Contains(have, id) {
			add = append(add, v2types.TargetDescription{Id: aws.String(id)})
		}
	}
	for _, id := range have {
		if !slices.Contains(want, id) {
			del = append(del, v2types.TargetDescription{Id: aws.String(id)})
		}
	}
	if len(add) > 0 {
		if _, err := l.c.api.elbv2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(tgArn), Targets: add}); err != nil {
			return fmt.Errorf("aws: RegisterTargets: %w", err)
		}
	}
	if len(del) > 0 {
		if _, err := l.c.api.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgArn), Targets: del}); err != nil {
			return fmt.Errorf("aws: DeregisterTargets: %w", err)
		}
	}
	return nil
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
