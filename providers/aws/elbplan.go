package aws

// The classic ELB reconcile as a plan: what differs between the desired ELB and the one the
// cloud holds (pure, see elbplan_test.go), then the writes for exactly that difference.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// observedELB is a classic ELB as read: its description (from a listing or a Describe) and the
// attribute the description does not carry.
type observedELB struct {
	desc      *elbtypes.LoadBalancerDescription
	crossZone bool
	attrs     elbAttrs
}

// newELBAttrs are the attributes of a new ELB made through the API.
var newELBAttrs = elbAttrs{IdleTimeout: 60, DrainingTimeout: 300, EmitInterval: 60}

// elbPlan is the difference between a desired and an observed ELB. Its zero value is "nothing
// to do". repairs names each difference, for the drift Event.
type elbPlan struct {
	recreate        bool // the scheme differs: ELB cannot change it in place
	deleteListeners []int32
	addListeners    []string // listener keys (see listenerKey)
	healthCheck     bool
	crossZone       *bool
	attrs           bool // write the idle timeout, draining and access log attributes
	attachSubnets   []string
	detachSubnets   []string
	groups          []string // the groups to apply; nil when they are as wanted
	proxyPolicy     bool     // create the PROXY protocol policy
	sslPolicy       string   // create this SSL negotiation policy (ssl-negotiation-policy)
	sslListeners    []int32  // listener ports to set the SSL negotiation policy on
	backendPolicies map[int32][]string
	register        []string
	deregister      []string
	repairs         []string
}

func (p *elbPlan) empty() bool {
	return !p.recreate && len(p.deleteListeners)+len(p.addListeners)+len(p.attachSubnets)+len(p.detachSubnets)+len(p.backendPolicies)+len(p.register)+len(p.deregister) == 0 &&
		!p.healthCheck && p.crossZone == nil && !p.attrs && p.groups == nil && !p.proxyPolicy && p.sslPolicy == "" && len(p.sslListeners) == 0
}

func (p *elbPlan) note(format string, args ...any) {
	p.repairs = append(p.repairs, fmt.Sprintf(format, args...))
}

// planELB compares want (and the member instances) with what the cloud holds.
func planELB(want *desired, members []string, have observedELB) elbPlan {
	var p elbPlan
	cur := have.desc
	if want.Scheme != aws.ToString(cur.Scheme) {
		p.recreate = true
		p.note("scheme was %s, not %s", aws.ToString(cur.Scheme), want.Scheme)
		return p
	}
	held := map[string]bool{}
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener == nil {
			continue
		}
		k := listenerKey(*ld.Listener)
		held[k] = true
		if !slices.Contains(want.Listeners, k) {
			p.deleteListeners = append(p.deleteListeners, ld.Listener.LoadBalancerPort)
			p.note("listener %s/%d was not wanted", aws.ToString(ld.Listener.Protocol), ld.Listener.LoadBalancerPort)
		}
	}
	for _, s := range want.Listeners {
		if !held[s] {
			p.addListeners = append(p.addListeners, s)
			l := listenerOf(s)
			p.note("listener %s/%d was missing", aws.ToString(l.Protocol), l.LoadBalancerPort)
		}
	}
	if hc := cur.HealthCheck; hc == nil || aws.ToString(hc.Target) != want.HealthCheck || aws.ToInt32(hc.Interval) != want.HC.Interval ||
		aws.ToInt32(hc.Timeout) != want.HC.Timeout || aws.ToInt32(hc.HealthyThreshold) != want.HC.Healthy || aws.ToInt32(hc.UnhealthyThreshold) != want.HC.Unhealthy {
		p.healthCheck = true
		p.note("health check differed")
	}
	if have.crossZone != want.CrossZone {
		p.crossZone = aws.Bool(want.CrossZone)
		p.note("cross-zone load balancing was %s", onOff(have.crossZone))
	}
	if d := attrsDiff(want.attrs(), have.attrs); d != "" {
		p.attrs = true
		p.note("%s", d)
	}
	for _, s := range want.Subnets {
		if !slices.Contains(cur.Subnets, s) {
			p.attachSubnets = append(p.attachSubnets, s)
			p.note("subnet %s was not attached", s)
		}
	}
	for _, s := range cur.Subnets {
		if !slices.Contains(want.Subnets, s) {
			p.detachSubnets = append(p.detachSubnets, s)
			p.note("subnet %s was not wanted", s)
		}
	}
	if !sameSet(want.groupIDs, cur.SecurityGroups) {
		p.groups = slices.Clone(want.groupIDs)
		p.note("security groups were %v, not %v", cur.SecurityGroups, want.groupIDs)
	}
	planProxyProtocol(&p, want, cur)
	planSSLPolicy(&p, want, cur)
	for _, id := range members {
		if !slices.Contains(instanceIDs(cur), id) {
			p.register = append(p.register, id)
			p.note("instance %s was not registered", id)
		}
	}
	for _, id := range instanceIDs(cur) {
		if !slices.Contains(members, id) {
			p.deregister = append(p.deregister, id)
			p.note("instance %s was registered but is no member", id)
		}
	}
	return p
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// planProxyProtocol: with the annotation, the policy exists and every backend port of the
// listeners has it; without, no port has it (the port's other policies stay).
func planProxyProtocol(p *elbPlan, want *desired, cur *elbtypes.LoadBalancerDescription) {
	backends := map[int32][]string{}
	for _, b := range cur.BackendServerDescriptions {
		backends[aws.ToInt32(b.InstancePort)] = b.PolicyNames
	}
	set := func(port int32, names []string) {
		if p.backendPolicies == nil {
			p.backendPolicies = map[int32][]string{}
		}
		p.backendPolicies[port] = names
	}
	if !want.ProxyProtocol {
		for port, names := range backends {
			if slices.Contains(names, proxyPolicyName) {
				set(port, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == proxyPolicyName }))
				p.note("PROXY protocol was on for port %d", port)
			}
		}
		return
	}
	if cur.Policies == nil || !slices.Contains(cur.Policies.OtherPolicies, proxyPolicyName) {
		p.proxyPolicy = true
	}
	for _, s := range want.Listeners {
		port := aws.ToInt32(listenerOf(s).InstancePort)
		if _, planned := p.backendPolicies[port]; !planned && !slices.Contains(backends[port], proxyPolicyName) {
			set(port, append(slices.Clone(backends[port]), proxyPolicyName))
			p.note("PROXY protocol was off for port %d", port)
		}
	}
}

// sslPolicyName is upstream's name of the ELB policy that refers to the security policy the
// ssl-negotiation-policy annotation names (type SSLNegotiationPolicyType).
func sslPolicyName(ref string) string { return "k8s-SSLNegotiationPolicy-" + ref }

// planSSLPolicy: with ssl-negotiation-policy, the policy exists and every SSL or HTTPS
// listener has it (as upstream, it replaces the listener's policies). Without, nothing changes
// (upstream leaves the listeners' policies as they are).
func planSSLPolicy(p *elbPlan, want *desired, cur *elbtypes.LoadBalancerDescription) {
	if want.SSLPolicy == "" {
		return
	}
	name := sslPolicyName(want.SSLPolicy)
	if cur.Policies == nil || !slices.Contains(cur.Policies.OtherPolicies, name) {
		p.sslPolicy = name
	}
	held := map[int32][]string{}
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener != nil {
			held[ld.Listener.LoadBalancerPort] = ld.PolicyNames
		}
	}
	for _, s := range want.Listeners {
		l := listenerOf(s)
		have := held[l.LoadBalancerPort]
		if slices.Contains(p.addListeners, s) {
			have = nil // (re)created by this plan: no policies yet
		}
		if proto := aws.ToString(l.Protocol); (proto == "SSL" || proto == "HTTPS") && !slices.Equal(have, []string{name}) {
			p.sslListeners = append(p.sslListeners, l.LoadBalancerPort)
			if have != nil {
				p.note("listener %s/%d had SSL policies %v, not %s", proto, l.LoadBalancerPort, have, name)
			}
		}
	}
}

// applyELB writes plan (which must not be a recreation) to the ELB name.
func (l *loadBalancers) applyELB(ctx context.Context, name string, want *desired, p elbPlan) error {
	api := l.c.api.elb
	lbName := aws.String(name)
	if len(p.deleteListeners) > 0 {
		if _, err := api.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: lbName, LoadBalancerPorts: p.deleteListeners}); err != nil {
			return fmt.Errorf("aws: DeleteLoadBalancerListeners %s: %w", name, err)
		}
	}
	if len(p.addListeners) > 0 {
		var ls []elbtypes.Listener
		for _, s := range p.addListeners {
			ls = append(ls, listenerOf(s))
		}
		if _, err := api.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: lbName, Listeners: ls}); err != nil {
			return fmt.Errorf("aws: CreateLoadBalancerListeners %s: %w", name, err)
		}
	}
	if len(p.attachSubnets) > 0 {
		if _, err := api.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: lbName, Subnets: p.attachSubnets}); err != nil {
			return fmt.Errorf("aws: AttachLoadBalancerToSubnets %s: %w", name, err)
		}
	}
	if len(p.detachSubnets) > 0 {
		if _, err := api.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: lbName, Subnets: p.detachSubnets}); err != nil {
			return fmt.Errorf("aws: DetachLoadBalancerFromSubnets %s: %w", name, err)
		}
	}
	if p.groups != nil {
		if _, err := api.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: lbName, SecurityGroups: p.groups}); err != nil {
			return fmt.Errorf("aws: ApplySecurityGroupsToLoadBalancer %s: %w", name, err)
		}
	}
	if p.healthCheck {
		if err := l.configureHealthCheck(ctx, name, want); err != nil {
			return err
		}
	}
	if p.crossZone != nil || p.attrs {
		if err := l.writeAttributes(ctx, name, want); err != nil {
			return err
		}
	}
	if p.proxyPolicy {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: lbName, PolicyName: aws.String(proxyPolicyName), PolicyTypeName: aws.String("ProxyProtocolPolicyType"),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}})
		if err != nil && !isCode(err, "DuplicatePolicyName") {
			return fmt.Errorf("aws: CreateLoadBalancerPolicy %s: %w", name, err)
		}
	}
	if p.sslPolicy != "" {
		_, err := api.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: lbName, PolicyName: aws.String(p.sslPolicy), PolicyTypeName: aws.String("SSLNegotiationPolicyType"),
			PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("Reference-Security-Policy"), AttributeValue: aws.String(want.SSLPolicy)}}})
		if err != nil && !isCode(err, "DuplicatePolicyName") {
			return annotationError(annSSLPolicy, "CreateLoadBalancerPolicy %s: %v", name, err)
		}
	}
	for _, port := range p.sslListeners {
		_, err := api.SetLoadBalancerPoliciesOfListener(ctx, &elb.SetLoadBalancerPoliciesOfListenerInput{
			LoadBalancerName: lbName, LoadBalancerPort: port, PolicyNames: []string{sslPolicyName(want.SSLPolicy)}})
		if err != nil {
			return fmt.Errorf("aws: SetLoadBalancerPoliciesOfListener %s port %d: %w", name, port, err)
		}
	}
	for _, port := range slices.Sorted(maps.Keys(p.backendPolicies)) {
		_, err := api.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: lbName, InstancePort: aws.Int32(port), PolicyNames: p.backendPolicies[port]})
		if err != nil {
			return fmt.Errorf("aws: SetLoadBalancerPoliciesForBackendServer %s port %d: %w", name, port, err)
		}
	}
	if len(p.register) > 0 {
		if _, err := api.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: lbName, Instances: elbInstances(p.register)}); err != nil {
			return fmt.Errorf("aws: RegisterInstancesWithLoadBalancer %s: %w", name, err)
		}
	}
	if len(p.deregister) > 0 {
		if _, err := api.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: lbName, Instances: elbInstances(p.deregister)}); err != nil {
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

// attrsDiff says how have differs from want in what the annotations set ("" when it does
// not): a timeout the Service does not set is not compared, nor the log bucket of disabled logs.
func attrsDiff(want, have elbAttrs) string {
	var d []string
	if want.IdleTimeout != have.IdleTimeout {
		d = append(d, fmt.Sprintf("idle timeout was %ds", have.IdleTimeout))
	}
	if want.Draining != have.Draining {
		d = append(d, "connection draining was "+onOff(have.Draining))
	}
	if want.DrainingTimeout != 0 && want.DrainingTimeout != have.DrainingTimeout {
		d = append(d, fmt.Sprintf("connection draining timeout was %ds", have.DrainingTimeout))
	}
	if want.AccessLog != have.AccessLog {
		d = append(d, "access logs were "+onOff(have.AccessLog))
	}
	if want.AccessLog && (want.Bucket != have.Bucket || want.Prefix != have.Prefix || (want.EmitInterval != 0 && want.EmitInterval != have.EmitInterval)) {
		d = append(d, fmt.Sprintf("access logs went to s3://%s/%s every %d minutes", have.Bucket, have.Prefix, have.EmitInterval))
	}
	return strings.Join(d, ", ")
}

// attributesOf reads the ELB's attributes, which DescribeLoadBalancers does not carry.
func (l *loadBalancers) attributesOf(ctx context.Context, name string) (crossZone bool, attrs elbAttrs, err error) {
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
