package aws

// Classic ELB writes: creation, listener, health check and attribute updates, members.

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
)

// create makes the ELB with its listeners, subnets, groups and tags, and returns it as created
// (ELB's defaults for the rest), for the plan to write the remaining settings.
func (l *loadBalancers) create(ctx context.Context, svc *v1.Service, opts *annotations.Options, name string, want *desired) (elbplan.Observed, error) {
	var ls []elbtypes.Listener
	var lds []elbtypes.ListenerDescription
	for _, s := range want.Listeners {
		ls = append(ls, elbplan.ListenerOf(s))
		lds = append(lds, elbtypes.ListenerDescription{Listener: &ls[len(ls)-1]})
	}
	tags := ownTags(l.identity(svc), opts.ExtraTags, nil)
	out, err := l.c.api.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name), Listeners: ls, Subnets: want.Subnets,
		SecurityGroups: want.groupIDs, Scheme: aws.String(want.Scheme), Tags: elbTags(tags),
	})
	switch {
	case isCode(err, "DuplicateLoadBalancerName"):
		// An earlier attempt created it and its answer was lost (a timeout, a killed ccm):
		// carry on with it if it is this Service's, else leave it alone.
		cur, err := l.adoptOwn(ctx, svc, name)
		if err != nil {
			return elbplan.Observed{}, err
		}
		crossZone, attrs, err := l.attributesOf(ctx, name)
		return elbplan.Observed{Desc: cur, CrossZone: crossZone, Attrs: attrs}, err
	case err != nil:
		return elbplan.Observed{}, fmt.Errorf("aws: CreateLoadBalancer %s: %w", name, err)
	case aws.ToString(out.DNSName) == "":
		return elbplan.Observed{}, errEmptyAnswer("CreateLoadBalancer", name)
	}
	klog.InfoS("Created ELB", "service", klog.KObj(svc), "name", name)
	return elbplan.Observed{Desc: &elbtypes.LoadBalancerDescription{LoadBalancerName: aws.String(name), DNSName: out.DNSName, Scheme: aws.String(want.Scheme),
		Subnets: want.Subnets, SecurityGroups: want.groupIDs, ListenerDescriptions: lds}, Attrs: elbplan.NewAttrs}, nil
}

// adoptOwn reads the existing ELB name and returns it if its tags say it is svc's.
func (l *loadBalancers) adoptOwn(ctx context.Context, svc *v1.Service, name string) (*elbtypes.LoadBalancerDescription, error) {
	cur, err := l.describe(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("aws: CreateLoadBalancer %s: the name is taken, yet no such load balancer is listed; retrying later", name)
	}
	tags, err := l.tags(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := ownership.Check(l.identity(svc), "load balancer", name, tags); err != nil {
		return nil, err
	}
	klog.InfoS("Load balancer already created by an earlier attempt; continuing with it", "service", klog.KObj(svc), "name", name)
	return cur, nil
}

func (l *loadBalancers) configureHealthCheck(ctx context.Context, name string, want *desired) error {
	_, err := l.c.api.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(name), HealthCheck: &elbtypes.HealthCheck{
		Target: aws.String(want.HealthCheck), Interval: aws.Int32(want.HC.Interval), Timeout: aws.Int32(want.HC.Timeout),
		HealthyThreshold: aws.Int32(want.HC.Healthy), UnhealthyThreshold: aws.Int32(want.HC.Unhealthy)}})
	if err != nil {
		return fmt.Errorf("aws: ConfigureHealthCheck %s: %w", name, err)
	}
	return nil
}

func elbTags(m map[string]string) []elbtypes.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]elbtypes.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}
