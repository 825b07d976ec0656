package aws

// Classic ELB writes: creation, listener, health check and attribute updates, members.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

func listenerOf(s string) elbtypes.Listener {
	f := strings.SplitN(s, ":", 5)
	port, _ := strconv.Atoi(f[1])
	iport, _ := strconv.Atoi(f[3])
	l := elbtypes.Listener{Protocol: aws.String(f[0]), LoadBalancerPort: int32(port), InstanceProtocol: aws.String(f[2]), InstancePort: aws.Int32(int32(iport))}
	if f[4] != "" {
		l.SSLCertificateId = aws.String(f[4])
	}
	return l
}

func listenerKey(l elbtypes.Listener) string {
	return fmt.Sprintf("%s:%d:%s:%d:%s", strings.ToUpper(aws.ToString(l.Protocol)), l.LoadBalancerPort,
		strings.ToUpper(aws.ToString(l.InstanceProtocol)), aws.ToInt32(l.InstancePort), aws.ToString(l.SSLCertificateId))
}

func (l *loadBalancers) create(ctx context.Context, svc *v1.Service, opts *lbOptions, name string, want *desired) (*elbtypes.LoadBalancerDescription, error) {
	var ls []elbtypes.Listener
	for _, s := range want.Listeners {
		ls = append(ls, listenerOf(s))
	}
	tags := ownTags(l.identity(svc), opts.ExtraTags, nil)
	out, err := l.c.api.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name), Listeners: ls, Subnets: want.Subnets,
		SecurityGroups: want.groupIDs, Scheme: aws.String(want.Scheme), Tags: elbTags(tags),
	})
	var cur *elbtypes.LoadBalancerDescription
	switch {
	case isCode(err, "DuplicateLoadBalancerName"):
		// An earlier attempt created it and its answer was lost (a timeout, a killed ccm):
		// carry on with it if it is this Service's, else leave it alone.
		if cur, err = l.adoptOwn(ctx, svc, name); err != nil {
			return nil, err
		}
		if err := l.update(ctx, name, cur, want); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("aws: CreateLoadBalancer %s: %w", name, err)
	case aws.ToString(out.DNSName) == "":
		return nil, errEmptyAnswer("CreateLoadBalancer", name)
	default:
		cur = &elbtypes.LoadBalancerDescription{LoadBalancerName: aws.String(name), DNSName: out.DNSName, Scheme: aws.String(want.Scheme), Subnets: want.Subnets}
	}
	if err := l.configureHealthCheck(ctx, name, want); err != nil {
		return nil, err
	}
	if want.CrossZone {
		if err := l.crossZone(ctx, name, true); err != nil {
			return nil, err
		}
	}
	if err := l.syncProxyProtocol(ctx, name, cur, want); err != nil {
		return nil, err
	}
	return cur, nil
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

func (l *loadBalancers) update(ctx context.Context, name string, cur *elbtypes.LoadBalancerDescription, want *desired) error {
	have := map[string]bool{}
	var stale []int32
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener == nil {
			continue
		}
		k := listenerKey(*ld.Listener)
		have[k] = true
		if !slices.Contains(want.Listeners, k) {
			stale = append(stale, ld.Listener.LoadBalancerPort)
		}
	}
	if len(stale) > 0 {
		if _, err := l.c.api.elb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String(name), LoadBalancerPorts: stale}); err != nil {
			return fmt.Errorf("aws: DeleteLoadBalancerListeners %s: %w", name, err)
		}
	}
	var add []elbtypes.Listener
	for _, s := range want.Listeners {
		if !have[s] {
			add = append(add, listenerOf(s))
		}
	}
	if len(add) > 0 {
		if _, err := l.c.api.elb.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String(name), Listeners: add}); err != nil {
			return fmt.Errorf("aws: CreateLoadBalancerListeners %s: %w", name, err)
		}
	}
	hc := cur.HealthCheck
	if hc == nil || aws.ToString(hc.Target) != want.HealthCheck || aws.ToInt32(hc.Interval) != want.HC.Interval ||
		aws.ToInt32(hc.Timeout) != want.HC.Timeout || aws.ToInt32(hc.HealthyThreshold) != want.HC.Healthy || aws.ToInt32(hc.UnhealthyThreshold) != want.HC.Unhealthy {
		if err := l.configureHealthCheck(ctx, name, want); err != nil {
			return err
		}
	}
	if err := l.syncProxyProtocol(ctx, name, cur, want); err != nil {
		return err
	}
	return l.crossZone(ctx, name, want.CrossZone)
}

// proxyPolicyName is the ELB policy (type ProxyProtocolPolicyType) this provider creates once
// per ELB for the proxy-protocol annotation; upstream's name, so ELBs it made keep working.
const proxyPolicyName = "k8s-proxyprotocol-enabled"

// syncProxyProtocol puts the PROXY protocol policy on every backend (instance) port of the
// listeners when wanted, and takes it off every port that has it when not. cur is what
// DescribeLoadBalancers returned (its Policies and BackendServerDescriptions): a port already
// as wanted costs no write.
func (l *loadBalancers) syncProxyProtocol(ctx context.Context, name string, cur *elbtypes.LoadBalancerDescription, want *desired) error {
	backends := map[int32][]string{}
	for _, b := range cur.BackendServerDescriptions {
		backends[aws.ToInt32(b.InstancePort)] = b.PolicyNames
	}
	set := func(port int32, policies []string) error {
		_, err := l.c.api.elb.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: aws.String(name), InstancePort: aws.Int32(port), PolicyNames: policies})
		if err != nil {
			return fmt.Errorf("aws: SetLoadBalancerPoliciesForBackendServer %s port %d: %w", name, port, err)
		}
		return nil
	}
	if !want.ProxyProtocol {
		var ports []int32
		for p, names := range backends {
			if slices.Contains(names, proxyPolicyName) {
				ports = append(ports, p)
			}
		}
		slices.Sort(ports)
		for _, p := range ports {
			// The ELB's other policies on the port stay; an empty list removes them all.
			keep := slices.DeleteFunc(append([]string{}, backends[p]...), func(n string) bool { return n == proxyPolicyName })
			if err := set(p, keep); err != nil {
				return err
			}
		}
		return nil
	}
	if cur.Policies == nil || !slices.Contains(cur.Policies.OtherPolicies, proxyPolicyName) {
		_, err := l.c.api.elb.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: aws.String(name), PolicyName: aws.String(proxyPolicyName), PolicyTypeName: aws.String("ProxyProtocolPolicyType"),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}})
		if err != nil && !isCode(err, "DuplicatePolicyName") {
			return fmt.Errorf("aws: CreateLoadBalancerPolicy %s: %w", name, err)
		}
	}
	var ports []int32
	for _, s := range want.Listeners {
		if p := aws.ToInt32(listenerOf(s).InstancePort); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	for _, p := range ports {
		if !slices.Contains(backends[p], proxyPolicyName) {
			if err := set(p, append(slices.Clone(backends[p]), proxyPolicyName)); err != nil {
				return err
			}
		}
	}
	return nil
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

func (l *loadBalancers) crossZone(ctx context.Context, name string, on bool) error {
	_, err := l.c.api.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(name),
		LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: on}}})
	if err != nil {
		return fmt.Errorf("aws: ModifyLoadBalancerAttributes %s: %w", name, err)
	}
	return nil
}

// syncMembers registers and deregisters instances: one write per direction, none when equal.
func (l *loadBalancers) syncMembers(ctx context.Context, name string, cur *elbtypes.LoadBalancerDescription, members []string) error {
	have := instanceIDs(cur)
	var add, del []elbtypes.Instance
	for _, id := range members {
		if !slices.Contains(have, id) {
			add = append(add, elbtypes.Instance{InstanceId: aws.String(id)})
		}
	}
	for _, id := range have {
		if !slices.Contains(members, id) {
			del = append(del, elbtypes.Instance{InstanceId: aws.String(id)})
		}
	}
	if len(add) > 0 {
		if _, err := l.c.api.elb.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(name), Instances: add}); err != nil {
			return fmt.Errorf("aws: RegisterInstancesWithLoadBalancer %s: %w", name, err)
		}
	}
	if len(del) > 0 {
		if _, err := l.c.api.elb.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String(name), Instances: del}); err != nil {
			return fmt.Errorf("aws: DeregisterInstancesFromLoadBalancer %s: %w", name, err)
		}
	}
	return nil
}

func instanceIDs(d *elbtypes.LoadBalancerDescription) []string {
	var out []string
	for _, in := range d.Instances {
		out = append(out, aws.ToString(in.InstanceId))
	}
	return out
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
