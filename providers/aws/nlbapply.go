package aws

// An NLB's writes. applyNLBFrame writes the frame nlbplan.PlanFrame decided (the NLB, its own
// group, the named groups, the node rules), applyNLB the parts nlbplan.Compute decided (target
// groups, listeners, targets, attributes, tags), each in the plan's order, after the one
// ownership check; each drops the listings its writes made stale. deleteNLB deletes what the
// Service owns, found by its tags.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// applyNLBFrame writes the frame in its order: the NLB deleted for a scheme change; for a new
// NLB the Service's ELB of the other type deleted, then its own group and rules (so it admits
// its clients from the start) and the NLB; for one that stays, its own group and its groups;
// the own group no longer used; the node rules and the shared path-MTU rules.
func (l *loadBalancers) applyNLBFrame(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	if f.Recreate {
		if err := l.deleteForScheme(ctx, s); err != nil {
			return err
		}
	}
	if f.Create {
		if err := l.replaceOtherType(ctx, s, f.Recreate); err != nil {
			return err
		}
	}
	if f.Own != nil {
		if err := l.applyOwnNLBGroup(ctx, s, f.Own); err != nil {
			return err
		}
	}
	if f.Create {
		if err := l.createNLB(ctx, s, f); err != nil {
			return err
		}
	} else if f.SetGroups {
		if err := l.setNLBGroups(ctx, s, f); err != nil {
			return err
		}
	}
	if f.Drop != "" {
		l.dropOwnNLBGroup(ctx, s.svc, f.Drop)
	}
	changes, err := l.applyNodeRules(ctx, s.svc, f.Nodes, f.MTU)
	s.repairs = append(s.repairs, changes...)
	return err
}

// deleteForScheme deletes the NLB, whose scheme changes: AWS cannot change it in place. It is
// made again, with new addresses and DNS name; its target groups stay and are attached to the
// new one. The NLB was proven the Service's before: upstream.CheckLB at observe, on tags read
// again (nlbOwnerCheck) when they came from the listing.
func (l *loadBalancers) deleteForScheme(ctx context.Context, s *nlbSync) error {
	l.c.events.Event(s.svc, v1.EventTypeNormal, svcevents.ReasonRecreated,
		fmt.Sprintf("recreating load balancer %s: its scheme changes to %s, which an NLB cannot do in place; its addresses and DNS name change", s.name, s.want.Scheme))
	if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: s.cur.LoadBalancerArn}); err != nil {
		return fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", s.name, err)
	}
	klog.InfoS("Deleted NLB to change its scheme", "service", klog.KObj(s.svc), "name", s.name, "scheme", s.want.Scheme)
	l.tsnap.Forget(aws.ToString(s.cur.LoadBalancerArn)) // its target groups are listed by its ARN
	s.cur, s.tags, s.applied = nil, nil, false
	return nil
}

// replaceOtherType deletes the Service's classic ELB before its NLB is made (a type change).
// An NLB made when the Service had an address and neither it nor an ELB was there was deleted
// out of band: a repair.
func (l *loadBalancers) replaceOtherType(ctx context.Context, s *nlbSync, recreated bool) error {
	hadELB, err := l.deleteClassic(ctx, s.svc)
	if err != nil {
		return err
	}
	if !hadELB && !recreated && len(s.svc.Status.LoadBalancer.Ingress) > 0 {
		s.repairs = append(s.repairs, "the load balancer was deleted")
		s.applied = true
	}
	return nil
}

// applyOwnNLBGroup makes the NLB's own group (or takes upstream's over: ccm's tags added, its
// rules kept where wanted) and writes its rules' difference.
func (l *loadBalancers) applyOwnNLBGroup(ctx context.Context, s *nlbSync, own *sgrules.Own) error {
	gid := own.ID
	if own.Create {
		g, err := l.createNLBGroup(ctx, s.svc, s.name, s.want)
		if err != nil {
			return err
		}
		s.group, gid = g, aws.ToString(g.GroupId)
	}
	if own.TakeOver {
		if err := l.takeOverGroup(ctx, s.svc, gid, "NLB"); err != nil {
			return err
		}
	}
	changes, err := l.writeRules(ctx, gid, own.Add, own.Del)
	if !own.Create {
		s.repairs = append(s.repairs, changes...)
	}
	return err
}

// createNLBGroup makes the group of the NLB name, tagged for the Service.
func (l *loadBalancers) createNLBGroup(ctx context.Context, svc *v1.Service, name string, want *nlbDesired) (*types.SecurityGroup, error) {
	gname := nlbGroupName(name)
	tags := ownTags(l.identity(svc), want.ExtraTags, nil)
	gid, err := l.createGroup(ctx, gname, want.vpc, fmt.Sprintf("Kubernetes NLB %s for %s/%s", name, svc.Namespace, svc.Name), tags)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Created NLB security group", "service", klog.KObj(svc), "group", gid)
	return &types.SecurityGroup{GroupId: aws.String(gid), GroupName: aws.String(gname), Tags: ec2Tags(tags)}, nil
}

// createNLB makes the NLB with the groups the frame gives it.
func (l *loadBalancers) createNLB(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	want := s.want
	in := &elbv2.CreateLoadBalancerInput{Name: aws.String(s.name), Type: v2types.LoadBalancerTypeEnumNetwork,
		Scheme: v2types.LoadBalancerSchemeEnum(want.Scheme), Subnets: want.Subnets, Tags: v2Tags(ownTags(l.identity(s.svc), s.opts.ExtraTags, nil))}
	switch {
	case f.Own != nil:
		in.SecurityGroups = []string{groupIDOf(s.group)}
	case len(f.Named) > 0:
		in.SecurityGroups = f.Named
	}
	if len(want.Addresses) > 0 {
		in.Subnets = nil
		for i, sn := range want.Subnets {
			m := v2types.SubnetMapping{SubnetId: aws.String(sn)}
			if len(s.opts.EIPs) > 0 {
				m.AllocationId = aws.String(want.Addresses[i])
			} else {
				m.PrivateIPv4Address = aws.String(want.Addresses[i])
			}
			in.SubnetMappings = append(in.SubnetMappings, m)
		}
	}
	out, err := l.c.api.elbv2.CreateLoadBalancer(ctx, in)
	if err != nil {
		return fmt.Errorf("aws: CreateLoadBalancer (v2) %s: %w", s.name, err)
	}
	if len(out.LoadBalancers) == 0 || aws.ToString(out.LoadBalancers[0].LoadBalancerArn) == "" {
		return errEmptyAnswer("CreateLoadBalancer (v2)", s.name)
	}
	s.cur, s.tags, s.lbStale = &out.LoadBalancers[0], nil, true
	klog.InfoS("Created NLB", "service", klog.KObj(s.svc), "name", s.name)
	return nil
}

func v2Tags(m map[string]string) []v2types.Tag {
	var out []v2types.Tag
	for _, t := range elbTags(m) {
		out = append(out, v2types.Tag{Key: t.Key, Value: t.Value})
	}
	return out
}

func groupIDOf(g *types.SecurityGroup) string {
	if g == nil {
		return ""
	}
	return aws.ToString(g.GroupId)
}

// reasonNLBGroupsReplaced is the Normal Event's reason when an NLB's security groups are replaced.
const reasonNLBGroupsReplaced = "LoadBalancerSecurityGroupsReplaced"

// setNLBGroups gives the existing NLB the groups the frame wants (its own group, or the named
// ones), with SetSecurityGroups, as upstream.
func (l *loadBalancers) setNLBGroups(ctx context.Context, s *nlbSync, f nlbplan.Frame) error {
	want, cur, name := f.Named, s.cur.SecurityGroups, aws.ToString(s.cur.LoadBalancerName)
	if f.Own != nil {
		want = []string{groupIDOf(s.group)}
	}
	if _, err := l.c.api.elbv2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: s.cur.LoadBalancerArn, SecurityGroups: want}); err != nil {
		return setNLBGroupsError(name, len(f.Named) > 0, err)
	}
	s.lbStale = true // the NLB's groups, as the listing holds them
	klog.InfoS("Set the NLB's security groups", "service", klog.KObj(s.svc), "name", name, "was", cur, "groups", want)
	// Said on the Service: after an upgrade from a ccm that ignored the annotation on an NLB,
	// this first sync is where its clients' traffic starts to depend on the named groups' rules.
	l.c.events.Event(s.svc, v1.EventTypeNormal, reasonNLBGroupsReplaced, nlbGroupsReplacedMessage(name, cur, want, len(f.Named) > 0))
	s.repairs = append(s.repairs, fmt.Sprintf("security groups were %v, not %v", cur, want))
	return nil
}

// setNLBGroupsError names the security-groups annotation when AWS refuses a group it named
// (InvalidSecurityGroup); refusing the Service's own group is not the annotation's fault.
func setNLBGroupsError(lbName string, named bool, err error) error {
	if named && isCode(err, "InvalidSecurityGroup") {
		return annotations.Error(annotations.SecurityGroup, "SetSecurityGroups: %v", err)
	}
	return fmt.Errorf("aws: SetSecurityGroups %s: %w", lbName, err)
}

// nlbGroupsReplacedMessage says which groups the NLB had and has, and why (named: the
// security-groups annotation names them; else the Service's own group, the annotation unset).
func nlbGroupsReplacedMessage(lbName string, was, now []string, named bool) string {
	ann := annotations.Prefix + annotations.SecurityGroup
	why := fmt.Sprintf("%s names them; ccm writes no rule into them: their rules must admit the clients on the listener ports", ann)
	if !named {
		why = fmt.Sprintf("%s is not set: the Service's own group, whose rules ccm keeps, replaces them; the groups detached are left as they are", ann)
	}
	return fmt.Sprintf("security groups of NLB %s replaced: were %s, now %s (%s)", lbName, strings.Join(was, ","), strings.Join(now, ","), why)
}

// dropOwnNLBGroup deletes the Service's own group gid, detached from its NLB. A failure (AWS
// may hold a detached group in use for a while) is logged: the next sync finds it again, and
// the Service's delete deletes it too.
func (l *loadBalancers) dropOwnNLBGroup(ctx context.Context, svc *v1.Service, gid string) {
	if err := l.deleteGroup(ctx, svc, &types.SecurityGroup{GroupId: aws.String(gid)}); err != nil {
		klog.InfoS("The Service's own NLB security group is not deleted yet", "service", klog.KObj(svc), "group", gid, "err", err)
	}
}

// applyNodeRules writes the node groups' rule changes, then settles the shared MTU rules of
// the groups in mtu. It returns what it changed.
func (l *loadBalancers) applyNodeRules(ctx context.Context, svc *v1.Service, changes []sgrules.Change, mtu map[string][]rule) ([]string, error) {
	var notes []string
	for _, c := range changes {
		if len(c.Redescribe) > 0 {
			l.gsnap.ForgetAll()
			if _, err := l.c.api.ec2.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
				GroupId: aws.String(c.Group), IpPermissions: permissions(c.Redescribe, true)}); err != nil {
				return nil, fmt.Errorf("aws: UpdateSecurityGroupRuleDescriptionsIngress %s: %w", c.Group, err)
			}
			notes = append(notes, c.Notes...)
		}
		changed, err := l.writeRules(ctx, c.Group, c.Add, c.Del)
		if err != nil {
			return nil, err
		}
		notes = append(notes, changed...)
	}
	changed, err := l.syncMTURules(ctx, svc, l.identity(svc).Cluster, mtu)
	if err != nil {
		return nil, err
	}
	return append(notes, changed...), nil
}

// reasonNLBMTURuleNotAdded: AWS refused the shared path-MTU rules in a node group.
const reasonNLBMTURuleNotAdded = "LoadBalancerMTURuleNotAdded"

// syncMTURules settles the shared MTU rules of the groups in wanted (group ID -> the Service's
// wanted client rules there), each under its group's lock and from one read of the groups as
// they are now. A refusal for the rule quota or a duplicate is a Warning on svc, not an error.
func (l *loadBalancers) syncMTURules(ctx context.Context, svc *v1.Service, cluster string, wanted map[string][]rule) ([]string, error) {
	if len(wanted) == 0 {
		return nil, nil
	}
	ids := slices.Sorted(maps.Keys(wanted)) // locks taken in one order: no deadlock
	for _, gid := range ids {
		defer l.groupKeys.Lock(gid)()
	}
	gs, err := l.describeGroups(ctx, ids)
	if err != nil {
		return nil, err
	}
	var changes []string
	for i := range gs {
		gid := aws.ToString(gs[i].GroupId)
		have := rulesOf(&gs[i])
		want, mine := sgrules.NLBMTURules(cluster, append(slices.Clone(have), wanted[gid]...))
		add, del := sgrules.Plan(have, want, mine)
		if len(add)+len(del) > 0 {
			l.gsnap.ForgetAll() // the listing no longer holds this group as it is
		}
		if len(add) > 0 {
			_, err := l.c.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: permissions(add, true)})
			var ae smithy.APIError
			switch {
			case isCode(err, "RulesPerSecurityGroupLimitExceeded", "InvalidPermission.Duplicate") && errors.As(err, &ae):
				l.c.events.Advise(svc, reasonNLBMTURuleNotAdded, mtuRefusal(gid, add, ae.ErrorCode()))
			case err != nil:
				return nil, fmt.Errorf("aws: AuthorizeSecurityGroupIngress %s: %w", gid, err)
			default:
				for _, r := range add {
					changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was missing", r.Text(), gid))
				}
			}
		}
		if len(del) > 0 {
			if _, err := l.c.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: permissions(del, false)}); err != nil && !isCode(err, "InvalidPermission.NotFound") {
				return nil, fmt.Errorf("aws: RevokeSecurityGroupIngress %s: %w", gid, err)
			}
			for _, r := range del {
				changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was not wanted", r.Text(), gid))
			}
		}
	}
	return changes, nil
}

// mtuRefusal is the Warning for MTU rules AWS refused in group gid with code.
func mtuRefusal(gid string, add []rule, code string) string {
	var cidrs []string
	for _, r := range add {
		cidrs = append(cidrs, r.CIDR)
	}
	why := "the group is at its quota of inbound rules: raise the quota (Service Quotas, \"Inbound or outbound rules per security group\") or free rules"
	if code == "InvalidPermission.Duplicate" {
		why = "another writer added one of them at the same time; the next sync looks again"
	}
	return fmt.Sprintf("node security group %s: AWS refused the path-MTU rules (ICMP 3-4 from %s) for NLB clients (%s): %s. The NLB serves; clients on a path with a smaller MTU may not learn it",
		gid, strings.Join(cidrs, ", "), code, why)
}

// nlbApply is one plan being written: the ARNs of the target groups it knows and makes, what
// it repaired, and whether a listener still waits.
type nlbApply struct {
	l       *loadBalancers
	svc     *v1.Service
	t       nlbTarget
	arns    map[string]string // target group name → ARN
	repairs []string
	waiting map[int32]bool // listener ports whose switch waits for a healthy target
	deleted map[string]bool
	stale   struct{ groups, lb bool } // the listings a write (attempted) made stale
}

// applyNLB writes p in its order: target groups (made and filled first, so no listener ever
// forwards to an empty one), listeners, stale target groups, the NLB's attributes, targets and,
// unless a listener waits (then the next reconcile goes on with it), the tags. Ownership of
// the NLB is settled before: checked on tags read now, or, for tags from the listing, read again
// before the first write (confirmBeforeWrites). It returns what it repaired and whether a
// listener waits; the listings the writes touched are dropped, after an error too.
func (l *loadBalancers) applyNLB(ctx context.Context, svc *v1.Service, t nlbTarget, have nlbplan.Observed, p nlbplan.Plan) (repairs []string, pending bool, err error) {
	a := &nlbApply{l: l, svc: svc, t: t, arns: map[string]string{}, repairs: slices.Clone(p.Repairs), waiting: map[int32]bool{}, deleted: map[string]bool{}}
	for _, g := range have.Attached {
		a.arns[g.Name] = g.ARN
	}
	for name, g := range have.Found { // by the wanted name too: upstream's has its own
		a.arns[name], a.arns[g.Name] = g.ARN, g.ARN
	}
	defer a.forget()
	if len(p.Unknown) > 0 {
		a.adviseUnknown(p.Unknown)
	}
	for _, step := range []func(context.Context, nlbplan.Plan) error{a.takeOver, a.groups, a.listeners, a.deleteGroups, a.attributes, a.targets} {
		if err := step(ctx, p); err != nil {
			return nil, false, err
		}
	}
	if pending = p.Pending || len(a.waiting) > 0; !pending && p.Tags != nil {
		a.stale.lb = true
		if _, err := l.c.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{t.arn}, Tags: v2Tags(p.Tags)}); err != nil {
			return nil, false, fmt.Errorf("aws: AddTags (v2) %s: %w", t.name, err)
		}
	}
	return a.repairs, pending, nil
}

// forget drops the listings the plan's writes changed: the NLB's target groups (which its
// listeners forward to, and their health checks) and the NLB's entry (its tags). Targets and
// attributes are in no listing.
func (a *nlbApply) forget() {
	if a.stale.groups {
		a.l.tsnap.Forget(a.t.arn)
	}
	if a.stale.lb {
		a.l.nsnap.Forget(a.t.name)
	}
}

func (a *nlbApply) arn(r nlbplan.Ref) string {
	if r.ARN != "" {
		return r.ARN
	}
	return a.arns[r.Name]
}

func (a *nlbApply) adviseUnknown(keys []string) {
	a.l.c.events.Advise(a.svc, reasonUnusedAnnotation, fmt.Sprintf("%s%s: target groups have no attribute %s; not set (as upstream)",
		annotations.Prefix, annotations.TGAttributes, strings.Join(keys, ", ")))
}

// takeOver adds ccm's ownership tags to the upstream CCM's target groups the plan keeps.
func (a *nlbApply) takeOver(ctx context.Context, p nlbplan.Plan) error {
	tags := v2Tags(a.l.identity(a.svc).Tags())
	for _, r := range p.TagGroups {
		a.stale.groups = true
		if _, err := a.l.c.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{r.ARN}, Tags: tags}); err != nil {
			return fmt.Errorf("aws: AddTags (v2) %s: %w", r.Name, err)
		}
		klog.InfoS("Took over the upstream CCM's target group", "service", klog.KObj(a.svc), "targetGroup", r.Name)
	}
	return nil
}

// groups makes the missing target groups (each given the members and the asked attributes it
// has at once), then repairs health checks and attributes.
func (a *nlbApply) groups(ctx context.Context, p nlbplan.Plan) error {
	api, want := a.l.c.api.elbv2, a.t.want
	a.stale.groups = a.stale.groups || p.ChangesGroups()
	for _, c := range p.CreateGroups {
		h := c.Health
		in := &elbv2.CreateTargetGroupInput{Name: aws.String(c.Port.Group), Protocol: v2types.ProtocolEnum(c.Port.Backend), Port: aws.Int32(c.Port.NodePort),
			VpcId: aws.String(want.vpc), TargetType: v2types.TargetTypeEnumInstance,
			HealthCheckProtocol: v2types.ProtocolEnum(h.Protocol), HealthCheckPort: aws.String(h.Port),
			HealthyThresholdCount: aws.Int32(h.Healthy), UnhealthyThresholdCount: aws.Int32(h.Unhealthy),
			HealthCheckIntervalSeconds: aws.Int32(h.Interval), HealthCheckTimeoutSeconds: aws.Int32(h.Timeout),
			Tags: v2Tags(ownTags(a.l.identity(a.svc), want.ExtraTags, nil))}
		if h.Path != "" {
			in.HealthCheckPath = aws.String(h.Path)
		}
		out, err := api.CreateTargetGroup(ctx, in)
		if err != nil {
			return fmt.Errorf("aws: CreateTargetGroup %s: %w", c.Port.Group, err)
		}
		if len(out.TargetGroups) == 0 || aws.ToString(out.TargetGroups[0].TargetGroupArn) == "" {
			return errEmptyAnswer("CreateTargetGroup", c.Port.Group)
		}
		arn := aws.ToString(out.TargetGroups[0].TargetGroupArn)
		a.arns[c.Port.Group] = arn
		if err := a.l.changeTargets(ctx, arn, c.Register, nil); err != nil {
			return err
		}
		if err := a.newGroupAttributes(ctx, arn, c.Port.Group); err != nil {
			return err
		}
	}
	h := want.planHealth()
	for _, r := range p.ModifyHealth {
		in := &elbv2.ModifyTargetGroupInput{TargetGroupArn: aws.String(r.ARN), HealthCheckProtocol: v2types.ProtocolEnum(h.Protocol), HealthCheckPort: aws.String(h.Port),
			HealthyThresholdCount: aws.Int32(h.Healthy), UnhealthyThresholdCount: aws.Int32(h.Unhealthy),
			HealthCheckIntervalSeconds: aws.Int32(h.Interval), HealthCheckTimeoutSeconds: aws.Int32(h.Timeout)}
		if h.Path != "" {
			in.HealthCheckPath = aws.String(h.Path)
		}
		if _, err := api.ModifyTargetGroup(ctx, in); err != nil {
			return fmt.Errorf("aws: ModifyTargetGroup %s: %w", r.Name, err)
		}
	}
	for _, s := range p.GroupAttributes {
		if err := a.setGroupAttributes(ctx, a.arn(s.Group), s.Group.Name, s.Values); err != nil {
			return err
		}
	}
	return nil
}

// newGroupAttributes writes the asked attributes a target group just made has: which keys it
// has is known only once it exists (an unknown key is reported, not sent, as upstream).
func (a *nlbApply) newGroupAttributes(ctx context.Context, arn, name string) error {
	if len(a.t.want.TGAttributes) == 0 {
		return nil
	}
	have, err := a.l.groupAttributes(ctx, arn, name)
	if err != nil {
		return err
	}
	change, unknown := nlbplan.GroupAttributes(have, a.t.want.TGAttributes)
	if len(unknown) > 0 {
		a.adviseUnknown(unknown)
	}
	return a.setGroupAttributes(ctx, arn, name, change)
}

func (a *nlbApply) setGroupAttributes(ctx context.Context, arn, name string, kvs [][2]string) error {
	if len(kvs) == 0 {
		return nil
	}
	var attrs []v2types.TargetGroupAttribute
	for _, kv := range kvs {
		attrs = append(attrs, v2types.TargetGroupAttribute{Key: aws.String(kv[0]), Value: aws.String(kv[1])})
	}
	if _, err := a.l.c.api.elbv2.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(arn), Attributes: attrs}); err != nil {
		return annotations.Error(annotations.TGAttributes, "target group %s: ModifyTargetGroupAttributes: %v", name, err)
	}
	return nil
}

// listeners deletes, changes and makes listeners. A switch to a target group made by this plan
// happens only once a target there passes its health check (read now: it was just filled);
// until then the listener keeps its group and the plan is pending.
func (a *nlbApply) listeners(ctx context.Context, p nlbplan.Plan) error {
	api := a.l.c.api.elbv2
	for _, ls := range p.DeleteListeners {
		if _, err := api.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(ls.ARN)}); err != nil {
			return fmt.Errorf("aws: DeleteListener: %w", err)
		}
	}
	for _, m := range p.ModifyListeners {
		if m.PolicyOnly {
			// Changed in place, as upstream does: the listener keeps serving.
			if _, err := api.ModifyListener(ctx, &elbv2.ModifyListenerInput{ListenerArn: aws.String(m.Listener.ARN), SslPolicy: aws.String(m.Port.SSLPolicy)}); err != nil {
				return annotations.Error(annotations.SSLPolicy, "listener TLS/%d: ModifyListener: %v", m.Port.Port, err)
			}
			continue
		}
		to := a.arn(m.To)
		if m.AwaitHealthy {
			ready, err := a.l.anyHealthy(ctx, to, m.To.Name)
			if err != nil {
				return err
			}
			if !ready {
				klog.InfoS("Waiting for a healthy target before switching a listener to its new target group", "service", klog.KObj(a.svc), "port", m.Port.Port, "targetGroup", m.To.Name)
				a.waiting[m.Port.Port] = true
				continue
			}
			a.repairs = append(a.repairs, m.Repair)
		}
		in := &elbv2.ModifyListenerInput{ListenerArn: aws.String(m.Listener.ARN), Protocol: v2types.ProtocolEnum(m.Port.Protocol),
			DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(to)}}}
		if m.Port.Cert != "" {
			in.Certificates = []v2types.Certificate{{CertificateArn: aws.String(m.Port.Cert)}}
		}
		if m.Port.SSLPolicy != "" {
			in.SslPolicy = aws.String(m.Port.SSLPolicy)
		}
		if _, err := api.ModifyListener(ctx, in); isCode(err, "SSLPolicyNotFound") {
			return annotations.Error(annotations.SSLPolicy, "listener TLS/%d: %v", m.Port.Port, err)
		} else if err != nil {
			return fmt.Errorf("aws: ModifyListener %d: %w", m.Port.Port, err)
		}
	}
	for _, port := range p.CreateListeners {
		in := &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(a.t.arn), Port: aws.Int32(port.Port), Protocol: v2types.ProtocolEnum(port.Protocol),
			DefaultActions: []v2types.Action{{Type: v2types.ActionTypeEnumForward, TargetGroupArn: aws.String(a.arns[port.Group])}}}
		if port.Cert != "" {
			in.Certificates = []v2types.Certificate{{CertificateArn: aws.String(port.Cert)}}
		}
		if port.SSLPolicy != "" {
			in.SslPolicy = aws.String(port.SSLPolicy)
		}
		if _, err := api.CreateListener(ctx, in); isCode(err, "SSLPolicyNotFound") {
			return annotations.Error(annotations.SSLPolicy, "listener TLS/%d: %v", port.Port, err)
		} else if err != nil {
			return fmt.Errorf("aws: CreateListener %d: %w", port.Port, err)
		}
	}
	return nil
}

// deleteGroups deletes the target groups no listener forwards to any more, if ours; one a
// waiting listener still forwards to stays, and keeps its targets meanwhile.
func (a *nlbApply) deleteGroups(ctx context.Context, p nlbplan.Plan) error {
	for _, d := range p.DeleteGroups {
		if slices.ContainsFunc(d.KeptBy, func(port int32) bool { return a.waiting[port] }) {
			continue
		}
		tg := v2types.TargetGroup{TargetGroupArn: aws.String(d.Group.ARN), TargetGroupName: aws.String(d.Group.Name)}
		if err := a.l.deleteTG(ctx, a.svc, tg); err != nil {
			return err
		}
		a.deleted[d.Group.ARN] = true
		a.repairs = append(a.repairs, fmt.Sprintf("target group %s was not wanted", d.Group.Name))
	}
	return nil
}

func (a *nlbApply) attributes(ctx context.Context, p nlbplan.Plan) error {
	if len(p.Attributes) == 0 {
		return nil
	}
	var change []v2types.LoadBalancerAttribute
	for _, kv := range p.Attributes {
		change = append(change, v2types.LoadBalancerAttribute{Key: aws.String(kv[0]), Value: aws.String(kv[1])})
	}
	if _, err := a.l.c.api.elbv2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(a.t.arn), Attributes: change}); err != nil {
		return fmt.Errorf("aws: ModifyLoadBalancerAttributes (v2): %w", err)
	}
	return nil
}

// targets registers and deregisters, in the groups that still exist.
func (a *nlbApply) targets(ctx context.Context, p nlbplan.Plan) error {
	for _, r := range p.Register {
		if arn := a.arn(r.Group); !a.deleted[arn] {
			if err := a.l.changeTargets(ctx, arn, r.IDs, nil); err != nil {
				return err
			}
		}
	}
	for _, r := range p.Deregister {
		if arn := a.arn(r.Group); !a.deleted[arn] {
			if err := a.l.changeTargets(ctx, arn, nil, r.IDs); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteNLB deletes svc's NLB and its target groups if this cluster owns them. Groups left by
// an interrupted delete are found again by their names.
func (l *loadBalancers) deleteNLB(ctx context.Context, svc *v1.Service) (existed bool, err error) {
	l.nsnap.Forget(l.name(svc))
	l.nsnap.Forget(upstream.LBName(svc))
	// ccm's NLB or upstream's for this Service (both names read: they were just forgotten).
	name, cur, tags, _, err := l.findNLB(ctx, svc) // read, not listed: both names were forgotten
	if err != nil {
		return false, err
	}
	defer l.nsnap.Forget(name)
	var tgs []v2types.TargetGroup
	var group *types.SecurityGroup
	if cur != nil {
		arn := aws.ToString(cur.LoadBalancerArn)
		defer l.tsnap.Forget(arn)
		if upstream.CheckLB(l.identity(svc), svc, name, tags) != nil {
			klog.InfoS("Not deleting an NLB this Service does not own", "service", klog.KObj(svc), "name", name)
			return true, nil
		}
		if tgs, err = l.attachedTGs(ctx, arn); err != nil {
			return false, err
		}
		// The NLB's own group (any mode: upstream deletes it so too), deleted after the NLB.
		if group, err = l.nlbGroupOf(ctx, svc, cur); err != nil {
			return false, err
		}
		// The tag only says where to look (it is written last, so an interrupted reconcile may
		// have added rules it does not name: the groups tagged for the cluster are looked at
		// too); what goes is decided by the rules' descriptions.
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return false, err
		}
		if err := l.removeNodeRulesNLB(ctx, svc, upstream.Only(name, svc), append(groups, groupIDs(tags[nodeGroupsTag])...)); err != nil {
			return false, err
		}
		if _, err := l.c.api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: cur.LoadBalancerArn}); err != nil {
			return false, fmt.Errorf("aws: DeleteLoadBalancer (v2) %s: %w", name, err)
		}
		klog.InfoS("Deleted NLB", "service", klog.KObj(svc), "name", name)
	} else if svc.Annotations[annotations.Prefix+annotations.Type] == "nlb" {
		// No NLB (deleted by an interrupted delete, or never created): its node rules, in the
		// groups tagged for the cluster, carry this Service's description.
		groups, err := l.clusterGroups(ctx)
		if err != nil {
			return false, err
		}
		if err := l.removeNodeRulesNLB(ctx, svc, "", groups); err != nil {
			return false, err
		}
	}
	// Target groups by their tags: also those an interrupted reconcile left unattached, or
	// made for ports the Service has changed since.
	owned, err := l.ownedTargetGroups(ctx, l.identity(svc))
	if err != nil {
		return false, err
	}
	for _, tg := range owned {
		if !slices.ContainsFunc(tgs, func(a v2types.TargetGroup) bool {
			return aws.ToString(a.TargetGroupArn) == aws.ToString(tg.TargetGroupArn)
		}) {
			tgs = append(tgs, tg)
		}
	}
	for _, tg := range tgs {
		if err := l.deleteTG(ctx, svc, tg); err != nil {
			return false, err
		}
	}
	// Without its group on the NLB (deleted by an interrupted delete, or detached when the
	// Service named groups), the Service's own is looked for by its tags.
	if group != nil || ((cur == nil || len(cur.SecurityGroups) > 0) && l.c.cfg.nlbGroupsManaged() && svc.Annotations[annotations.Prefix+annotations.Type] == "nlb") {
		if err := l.deleteNLBGroup(ctx, svc, name, group); err != nil {
			return false, err
		}
	}
	return cur != nil, nil
}

func (l *loadBalancers) deleteTG(ctx context.Context, svc *v1.Service, tg v2types.TargetGroup) error {
	tags, err := l.tagsV2(ctx, aws.ToString(tg.TargetGroupArn))
	if err != nil {
		return err
	}
	if !upstream.OwnsTG(l.identity(svc), tg, tags) {
		return nil
	}
	_, err = l.c.api.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: tg.TargetGroupArn})
	if isCode(err, "ResourceInUse") {
		return api.NewRetryError(fmt.Sprintf("target group %s is still in use; retrying", aws.ToString(tg.TargetGroupName)), nlbPoll)
	}
	if err != nil && !isCode(err, "TargetGroupNotFound") {
		return fmt.Errorf("aws: DeleteTargetGroup: %w", err)
	}
	return nil
}

// removeNodeRulesNLB removes the Service's NLB rules from the node groups (read as they are
// now), and settles the shared MTU rules there. The rules it removes are those carrying this
// Service's description (ownership.Description): nodePorts are unique only within a cluster,
// and two clusters may share a node group. up is the name of the Service's NLB when it is the
// upstream CCM's, taken over ("" otherwise): the node rules upstream described with that name
// are then this Service's too.
func (l *loadBalancers) removeNodeRulesNLB(ctx context.Context, svc *v1.Service, up string, groups []string) error {
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	if len(groups) == 0 {
		return nil
	}
	gs, err := l.describeGroups(ctx, groups)
	if err != nil {
		return err
	}
	var read []sgrules.Group
	for i := range gs {
		read = append(read, sgrules.Group{ID: aws.ToString(gs[i].GroupId), Rules: rulesOf(&gs[i])})
	}
	changes, mtu := nlbplan.PlanNodeRules(nodeRuleOwners(l.identity(svc), up), read)
	_, err = l.applyNodeRules(ctx, svc, changes, mtu)
	return err
}

// deleteNLBGroup deletes the NLB's own group once the NLB is gone. g was found attached to the
// Service's NLB (nlbGroupOf); without it (the NLB was deleted by an interrupted delete, or the
// Service names its groups) ccm's group is found by its name, upstream's (taken over) by the
// Service's ownership tags. A group the security-groups annotation names is the user's, even
// the Service's own one: never deleted, as dropOwnNLBGroup never drops it.
func (l *loadBalancers) deleteNLBGroup(ctx context.Context, svc *v1.Service, name string, g *types.SecurityGroup) error {
	id := l.identity(svc)
	named := annotations.SplitList(svc.Annotations[annotations.Prefix+annotations.SecurityGroup])
	if g == nil {
		out, err := awsread.DescribeSecurityGroupsAll(ctx, l.c.api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
			filter("tag:"+ownership.ServiceTag, id.Service()), filter("tag-key", ownership.ClusterTagPrefix+id.Cluster)}})

		if err != nil {
			return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
		}
		for i := range out.SecurityGroups {
			c := &out.SecurityGroups[i]
			if slices.Contains(named, aws.ToString(c.GroupId)) {
				continue
			}
			if ownership.Is(id, groupTags(c)) && (aws.ToString(c.GroupName) == nlbGroupName(name) || l.isUpstreamNLBGroup(id, svc, c)) {
				g = c
				break
			}
		}
		if g == nil {
			return nil
		}
	}
	// Owned: ccm's tags, or upstream's group, proven the Service's by the UID hash in its name,
	// its description and the cluster's "owned" tag (isUpstreamNLBGroup), wherever it is attached.
	if slices.Contains(named, aws.ToString(g.GroupId)) || (!ownership.Is(id, groupTags(g)) && !l.isUpstreamNLBGroup(id, svc, g)) {
		return nil
	}
	return l.deleteGroup(ctx, svc, g)
}
