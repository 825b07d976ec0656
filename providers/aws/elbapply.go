package aws

// A classic ELB's writes: its security groups and node rules (applyELBGroups), the ELB
// (created, or its listeners, health check, attributes, instances and subnets as elbplan
// decided), its tags; and deleteClassic, which deletes what the Service owns.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// Classic ELB writes: creation, listener, health check and attribute updates, members.

// applyClassic makes the ELB (deleting it first when its scheme changes, which ELB cannot do
// in place), writes its plan and drops the own group it no longer uses. It returns what the
// plan repaired on an ELB that was there. The ELB it deletes was proven the Service's before:
// upstream.CheckLB at observe, on tags read again (elbOwnerCheck) when they came from the
// listing.
func (l *loadBalancers) applyClassic(ctx context.Context, r *classicRun, opts *annotations.Options) ([]string, error) {
	svc := r.svc
	r.planExisting() // now, if the ELB's own group was made first
	if r.planned && r.plan.Recreate {
		// A new ELB gets a new DNS name.
		l.c.events.Event(svc, v1.EventTypeNormal, svcevents.ReasonRecreated,
			fmt.Sprintf("recreating load balancer %s: its scheme changes to %s, which ELB cannot do in place; its DNS name changes", r.name, r.want.Scheme))
		r.stale = true
		if _, err := l.c.api.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(r.name)}); err != nil {
			return nil, fmt.Errorf("aws: DeleteLoadBalancer %s: %w", r.name, err)
		}
	}
	var repairs []string
	if r.cur == nil || r.plan.Recreate {
		r.stale = true
		cur, plan, lost, err := l.createClassic(ctx, svc, opts, r.name, r.want, r.members, r.plan.Recreate)
		if err != nil {
			return nil, err
		}
		r.cur, r.plan, r.applied = cur, plan, lost
		if lost {
			repairs = append(repairs, "the load balancer was deleted")
		}
	} else {
		repairs = append(repairs, r.plan.Repairs...) // after a creation the plan is the rest of it, no repair
	}
	klog.V(2).InfoS("Reconciling ELB", "service", klog.KObj(svc), "name", r.name, "changes", len(r.plan.Repairs))
	r.stale = r.stale || !r.plan.Empty()
	if err := l.applyELB(ctx, r.name, r.want, r.plan); err != nil {
		return nil, err
	}
	if r.groups.unused != nil {
		// Groups named now (annotation, ElbSecurityGroup): the group ccm made before goes.
		if err := l.dropUnusedOwnGroup(ctx, svc, r.groups.unused); err != nil {
			return nil, err
		}
	}
	return repairs, nil
}

// tagClassic writes the fingerprint last: a failure above leaves the old one, so the next try
// rewrites. The ownership tags go with it (after the user's), so a load balancer written before
// UIDs were recorded gets its Service's UID.
func (l *loadBalancers) tagClassic(ctx context.Context, r *classicRun) error {
	if !r.tagsDue() {
		return nil
	}
	r.stale = true
	tags := ownTags(r.id, r.want.ExtraTags, map[string]string{fingerprintTag: r.fp})
	if _, err := l.c.api.elb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{r.name}, Tags: elbTags(tags)}); err != nil {
		return fmt.Errorf("aws: AddTags %s: %w", r.name, err)
	}
	return nil
}

// createClassic creates the ELB and plans the rest of it (what create does not set). lost: it
// was not recreated on purpose, the Service had an address and no NLB took its place, so it
// was deleted out of band.
func (l *loadBalancers) createClassic(ctx context.Context, svc *v1.Service, opts *annotations.Options, name string, want *desired, members []string, recreate bool) (*elbtypes.LoadBalancerDescription, elbplan.Plan, bool, error) {
	// Creating: this may be a type change, so the Service's NLB goes first.
	hadNLB, err := l.deleteNLB(ctx, svc)
	if err != nil {
		return nil, elbplan.Plan{}, false, err
	}
	lost := !hadNLB && !recreate && len(svc.Status.LoadBalancer.Ingress) > 0
	have, err := l.create(ctx, svc, opts, name, want)
	if err != nil {
		return nil, elbplan.Plan{}, false, err
	}
	return have.Desc, elbplan.Compute(want.planDesired(), members, have), lost, nil
}

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

// applyELBGroups writes the groups' plan: the own group made or taken over and its rules,
// then the node groups' rules. It returns what it repaired.
func (l *loadBalancers) applyELBGroups(ctx context.Context, svc *v1.Service, name string, want *desired, g *elbGroups) ([]string, error) {
	var repairs []string
	if g.plan != nil {
		gid, err := l.applyOwnELBGroup(ctx, svc, name, want, g.plan)
		if err != nil {
			return nil, err
		}
		changed, err := l.writeRules(ctx, gid, g.plan.Add, g.plan.Del)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, changed...)
		if !g.planned {
			want.groupIDs = []string{gid}
			want.groupIDs = elbGroupIDs(want)
			g.planNodeRules(l.identity(svc), want)
		}
	}
	for _, c := range g.changes {
		changed, err := l.writeRules(ctx, c.Group, c.Add, c.Del)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, changed...)
	}
	return repairs, nil
}

// applyOwnELBGroup makes the ELB's own group, or adds ccm's tags to upstream's; it returns its ID.
func (l *loadBalancers) applyOwnELBGroup(ctx context.Context, svc *v1.Service, name string, want *desired, p *sgrules.Own) (string, error) {
	switch {
	case p.Create:
		return l.createGroup(ctx, groupName(name), want.vpc, fmt.Sprintf("Kubernetes ELB %s for %s/%s", name, svc.Namespace, svc.Name), l.identity(svc).Tags())
	case p.TakeOver:
		if err := l.takeOverGroup(ctx, svc, p.ID, "ELB"); err != nil {
			return "", err
		}
	}
	return p.ID, nil
}

// dropUnusedOwnGroup deletes the ELB's own group g, no longer used, after the rules from it.
func (l *loadBalancers) dropUnusedOwnGroup(ctx context.Context, svc *v1.Service, g *types.SecurityGroup) error {
	own := *g
	ownID := aws.ToString(own.GroupId)
	if err := l.revokeRulesFrom(ctx, l.identity(svc), []string{ownID}, ownID); err != nil {
		return err
	}
	return l.deleteGroup(ctx, svc, &own)
}

// deleteClassic deletes svc's classic ELB, if this Service owns it, and what ccm added for it:
// the rules carrying its description in the groups that admit the ELB's groups (its own, the
// ones named by annotation, ElbSecurityGroup), and its own security group. Which rules go is
// decided by their descriptions alone, never by a tag a Service could have set.
func (l *loadBalancers) deleteClassic(ctx context.Context, svc *v1.Service) (existed bool, err error) {
	id := l.identity(svc)
	l.snap.Forget(l.name(svc))
	l.snap.Forget(upstream.LBName(svc))
	// ccm's ELB or upstream's for this Service (findClassic reads both names when not listed).
	name, cur, tags, listed, err := l.findClassic(ctx, svc)
	if err != nil {
		return false, err
	}
	if listed {
		if tags, err = l.tags(ctx, name); err != nil { // a delete goes by the tags as they are
			return false, err
		}
	}
	defer l.snap.Forget(name)
	var sources []string
	if cur != nil {
		if upstream.CheckLB(id, svc, name, tags) != nil {
			klog.InfoS("Not deleting an ELB this Service does not own", "service", klog.KObj(svc), "name", name)
			return true, nil
		}
		sources = slices.Clone(cur.SecurityGroups)
		if _, err := l.c.api.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)}); err != nil {
			return false, fmt.Errorf("aws: DeleteLoadBalancer %s: %w", name, err)
		}
		klog.InfoS("Deleted ELB", "service", klog.KObj(svc), "name", name)
	}
	if cur != nil || svc.Annotations[annotations.Prefix+annotations.Type] != "nlb" {
		// The ELB may be gone already (an interrupted delete): the groups it could have used.
		for _, g := range annotations.SplitList(svc.Annotations[annotations.Prefix+annotations.SecurityGroup]) {
			if annotations.SecurityGroupIDRE.MatchString(g) {
				sources = append(sources, g)
			}
		}
		sources = append(sources, l.c.cfg.Global.ElbSecurityGroup)
	}
	// The ELB's own groups by their tags (any VPC, whatever step an interrupted try reached),
	// and by the name ccm gives them (one tagged before UIDs were recorded).
	owned, err := l.ownedELBGroups(ctx, id)
	if err != nil {
		return false, err
	}
	byName, err := l.findGroup(ctx, name, l.c.cfg.Global.VPC)
	if err != nil {
		return false, err
	}
	if byName != nil && !slices.ContainsFunc(owned, func(g types.SecurityGroup) bool { return aws.ToString(g.GroupId) == aws.ToString(byName.GroupId) }) {
		if ownership.Is(id, groupTags(byName)) || upstream.IsELBGroup(id, svc, name, byName) {
			owned = append(owned, *byName)
		} else {
			klog.InfoS("Not deleting a security group this Service does not own", "group", aws.ToString(byName.GroupId))
		}
	}
	if len(owned) == 0 {
		return cur != nil, l.revokeRulesFrom(ctx, id, sources, "")
	}
	for i := range owned {
		ownID := aws.ToString(owned[i].GroupId)
		if err := l.revokeRulesFrom(ctx, id, append(slices.Clone(sources), ownID), ownID); err != nil {
			return false, err
		}
		if err := l.deleteGroup(ctx, svc, &owned[i]); err != nil {
			return false, err
		}
	}
	return cur != nil, nil
}
