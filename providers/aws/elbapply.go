package aws

// The classic ELB reconcile as a plan: what differs between the desired ELB and the one the
// cloud holds (package elbplan, pure), then the writes for exactly that difference.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

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
