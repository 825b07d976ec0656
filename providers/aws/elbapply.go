package aws

// The classic ELB reconcile as a plan: what differs between the desired ELB and the one the
// cloud holds (package elbplan, pure), then the writes for exactly that difference.

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// planDesired is want as the plan compares it.
func (d *desired) planDesired() elbplan.Desired {
	return elbplan.Desired{Scheme: d.Scheme, Listeners: d.Listeners, HealthCheck: d.HealthCheck,
		Interval: d.HC.Interval, Timeout: d.HC.Timeout, Healthy: d.HC.Healthy, Unhealthy: d.HC.Unhealthy,
		CrossZone: d.CrossZone, Attrs: elbplan.Attrs(d.attrs()), Subnets: d.Subnets, Groups: d.groupIDs,
		ProxyProtocol: d.ProxyProtocol, SSLPolicy: d.SSLPolicy}
}

// applyELB writes plan (which must not be a recreation) to the ELB name.
func (l *loadBalancers) applyELB(ctx context.Context, name string, want *desired, p elbplan.Plan) error {
	api := l.c.api.elb
	lbName := aws.String(name)
	if len(p.DeleteListeners) > 0 {
		if _, err := api.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: lbName, LoadBalancerPorts: p.DeleteListeners}); err != nil {
			return fmt.Errorf("aws: DeleteLoadBalancerListeners %s: %w", name, err)
		}
	}
	if len(p.AddListeners) > 0 {
		var ls []elbtypes.Listener
		for _, s := range p.AddListeners {
			ls = append(ls, elbplan.ListenerOf(s))
		}
		if _, err := api.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: lbName, Listeners: ls}); err != nil {
			return fmt.Errorf("aws: CreateLoadBalancerListeners %s: %w", name, err)
		}
	}
	if len(p.AttachSubnets) > 0 {
		if _, err := api.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: lbName, Subnets: p.AttachSubnets}); err != nil {
			return fmt.Errorf("aws: AttachLoadBalancerToSubnets %s: %w", name, err)
		}
	}
	if len(p.DetachSubnets) > 0 {
		if _, err := api.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: lbName, Subnets: p.DetachSubnets}); err != nil {
			return fmt.Errorf("aws: DetachLoadBalancerFromSubnets %s: %w", name, err)
		}
	}
	if p.Groups != nil {
		if _, err := api.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: lbName, SecurityGroups: p.Groups}); err != nil {
			return fmt.Errorf("aws: ApplySecurityGroupsToLoadBalancer %s: %w", name, err)
		}
	}
	if p.HealthCheck {
		if err := l.configureHealthCheck(ctx, name, want); err != nil {
			return err
		}
	}
	if p.CrossZone != nil || p.Attrs {
		if err := l.writeAttributes(ctx, name, want); err != nil {
			return err
		}
	}
	if p.ProxyPolicy {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: lbName, PolicyName: aws.String(elbplan.ProxyPolicyName), PolicyTypeName: aws.String("ProxyProtocolPolicyType"),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}})
		if err != nil && !isCode(err, "DuplicatePolicyName") {
			return fmt.Errorf("aws: CreateLoadBalancerPolicy %s: %w", name, err)
		}
	}
	if p.SSLPolicy != "" {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: lbName, PolicyName: aws.String(p.SSLPolicy), PolicyTypeName: aws.String("SSLNegotiationPolicyType"),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("Reference-Security-Policy"), AttributeValue: aws.String(want.SSLPolicy)}}})
		if err != nil && !isCode(err, "DuplicatePolicyName") {
			return annotations.Error(annotations.SSLPolicy, "CreateLoadBalancerPolicy %s: %v", name, err)
		}
	}
	for _, port := range p.SSLListeners {
		_, err := api.SetLoadBalancerPoliciesOfListener(ctx, &elb.SetLoadBalancerPoliciesOfListenerInput{
			LoadBalancerName: lbName, LoadBalancerPort: port, PolicyNames: []string{elbplan.SSLPolicyName(want.SSLPolicy)}})
		if err != nil {
			return fmt.Errorf("aws: SetLoadBalancerPoliciesOfListener %s port %d: %w", name, port, err)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(p.BackendPolicies)) {
		_, err := api.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: lbName, InstancePort: aws.Int32(port), PolicyNames: p.BackendPolicies[port]})
		if err != nil {
			return fmt.Errorf("aws: SetLoadBalancerPoliciesForBackendServer %s port %d: %w", name, port, err)
		}
	}
	if len(p.Register) > 0 {
		if _, err := api.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: lbName, Instances: elbInstances(p.Register)}); err != nil {
			return fmt.Errorf("aws: RegisterInstancesWithLoadBalancer %s: %w", name, err)
		}
	}
	if len(p.Deregister) > 0 {
		if _, err := api.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: lbName, Instances: elbInstances(p.Deregister)}); err != nil {
			return fmt.Errorf("aws: DeregisterInstancesFromLoadBalancer %s: %w", name, err)
		}
	}
	return nil
}

func elbInstances(ids []string) []elbtypes.Instance {
	out := make([]elbtypes.Instance, 0, len(ids))
	for _, id := range ids {
		out = append(out, elbtypes.Instance{InstanceId: aws.String(id)})
	}
	return out
}

// attributesOf reads the ELB's attributes, which DescribeLoadBalancers does not carry.
func (l *loadBalancers) attributesOf(ctx context.Context, name string) (crossZone bool, attrs elbplan.Attrs, err error) {
	out, err := l.c.api.elb.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: aws.String(name)})
	if err != nil {
		return false, attrs, fmt.Errorf("aws: DescribeLoadBalancerAttributes %s: %w", name, err)
	}
	a := out.LoadBalancerAttributes
	if a == nil {
		return false, attrs, nil
	}
	if a.ConnectionSettings != nil {
		attrs.IdleTimeout = aws.ToInt32(a.ConnectionSettings.IdleTimeout)
	}
	if a.ConnectionDraining != nil {
		attrs.Draining, attrs.DrainingTimeout = a.ConnectionDraining.Enabled, aws.ToInt32(a.ConnectionDraining.Timeout)
	}
	if a.AccessLog != nil {
		attrs.AccessLog, attrs.EmitInterval = a.AccessLog.Enabled, aws.ToInt32(a.AccessLog.EmitInterval)
		attrs.Bucket, attrs.Prefix = aws.ToString(a.AccessLog.S3BucketName), aws.ToString(a.AccessLog.S3BucketPrefix)
	}
	return a.CrossZoneLoadBalancing != nil && a.CrossZoneLoadBalancing.Enabled, attrs, nil
}

// writeAttributes writes every attribute ccm manages, as upstream does when one differs.
func (l *loadBalancers) writeAttributes(ctx context.Context, name string, want *desired) error {
	a := want.attrs()
	in := &elbtypes.LoadBalancerAttributes{CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: want.CrossZone},
		ConnectionSettings: &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(a.IdleTimeout)},
		ConnectionDraining: &elbtypes.ConnectionDraining{Enabled: a.Draining},
		AccessLog:          &elbtypes.AccessLog{Enabled: a.AccessLog}}
	if a.DrainingTimeout != 0 {
		in.ConnectionDraining.Timeout = aws.Int32(a.DrainingTimeout)
	}
	if a.AccessLog {
		in.AccessLog.S3BucketName = aws.String(a.Bucket)
		if a.Prefix != "" {
			in.AccessLog.S3BucketPrefix = aws.String(a.Prefix)
		}
		if a.EmitInterval != 0 {
			in.AccessLog.EmitInterval = aws.Int32(a.EmitInterval)
		}
	}
	_, err := l.c.api.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(name), LoadBalancerAttributes: in})
	if err != nil {
		return fmt.Errorf("aws: ModifyLoadBalancerAttributes %s: %w", name, err)
	}
	return nil
}

// Classic ELB writes: creation, listener, health check and attribute updates, members.

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
