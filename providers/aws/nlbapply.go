package aws

// An NLB's target groups, listeners, targets, attributes and tags as observe → plan → apply:
// observeNLB reads what the cloud holds into an nlbplan.Observed, nlbplan.Compute (pure,
// table-tested in internal/nlbplan) says what differs, and applyNLB writes exactly that, in the
// plan's order, then drops the listings its writes made stale.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
)

// nlbTarget is what the plan compares the NLB named name (ARN arn) with.
type nlbTarget struct {
	name, arn string
	want      *nlbDesired
	members   []string
	tags      map[string]string // the NLB's as read; nil for one made by this reconcile
	newTags   map[string]string
}

// planInput is want as the plan compares it.
func (t nlbTarget) planInput() nlbplan.Desired {
	d := nlbplan.Desired{Health: t.want.planHealth(), GroupAttributes: t.want.TGAttributes, Members: t.members, Tags: t.newTags}
	for _, p := range t.want.Ports {
		d.Ports = append(d.Ports, nlbplan.Port{Protocol: p.Protocol, Port: p.Port, Cert: p.Cert, SSLPolicy: p.SSLPolicy, Group: p.TG, Backend: p.backend(), NodePort: p.NodePort})
	}
	// Upstream's defaults are off; the bucket and prefix are compared only while logs are on
	// (ELBv2 refuses an empty bucket).
	d.Attributes = [][2]string{{"load_balancing.cross_zone.enabled", strconv.FormatBool(t.want.CrossZone)}, {"access_logs.s3.enabled", strconv.FormatBool(t.want.AccessLog)}}
	if t.want.AccessLog {
		d.Attributes = append(d.Attributes, [2]string{"access_logs.s3.bucket", t.want.Bucket}, [2]string{"access_logs.s3.prefix", t.want.Prefix})
	}
	return d
}

func (d *nlbDesired) planHealth() nlbplan.Health {
	proto, port, path := splitHealth(d.Health)
	return nlbplan.Health{Protocol: proto, Port: port, Path: path, Healthy: d.HC.Healthy, Unhealthy: d.HC.Unhealthy, Timeout: d.HC.Timeout, Interval: d.HC.Interval}
}

func planGroup(tg v2types.TargetGroup) nlbplan.Group {
	return nlbplan.Group{ARN: aws.ToString(tg.TargetGroupArn), Name: aws.ToString(tg.TargetGroupName), Health: nlbplan.Health{
		Protocol: string(tg.HealthCheckProtocol), Port: aws.ToString(tg.HealthCheckPort), Path: aws.ToString(tg.HealthCheckPath),
		Healthy: aws.ToInt32(tg.HealthyThresholdCount), Unhealthy: aws.ToInt32(tg.UnhealthyThresholdCount),
		Timeout: aws.ToInt32(tg.HealthCheckTimeoutSeconds), Interval: aws.ToInt32(tg.HealthCheckIntervalSeconds)}}
}

// observeNLB reads what the plan compares: the wanted target groups no listener forwards to
// (upstream's taken over, verified by their tags when verify; those named already looked up;
// else found by name, proven this Service's), the listeners, the targets of each group that may
// serve after the plan (wanted, or a wanted port's listener forwards to it), the asked target
// group attributes, and the NLB's attributes unless it is new and asks none (AWS's defaults).
func (l *loadBalancers) observeNLB(ctx context.Context, svc *v1.Service, t nlbTarget, attached []v2types.TargetGroup, named map[string]v2types.TargetGroup, verify bool) (nlbplan.Observed, error) {
	have := nlbplan.Observed{Found: map[string]nlbplan.Group{}, Tags: t.tags}
	groups := map[string]*nlbplan.Group{} // by name: those whose targets and attributes are read
	for _, tg := range attached {
		have.Attached = append(have.Attached, planGroup(tg))
	}
	for _, p := range t.want.Ports {
		if slices.ContainsFunc(attached, func(tg v2types.TargetGroup) bool { return aws.ToString(tg.TargetGroupName) == p.TG }) {
			continue
		}
		found, untagged, err := l.findTargetGroup(ctx, svc, p, attached, named, verify)
		if err != nil {
			return have, err
		}
		if found != nil {
			g := planGroup(*found)
			g.Untagged = untagged
			have.Found[p.TG] = g
		}
	}
	out, err := awsread.DescribeListenersAll(ctx, l.c.api.elbv2, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(t.arn)})
	if err != nil {
		return have, fmt.Errorf("aws: DescribeListeners: %w", err)
	}
	var forwarded []string // groups a wanted port's listener forwards to
	for _, ls := range out.Listeners {
		pl := planListener(ls)
		have.Listeners = append(have.Listeners, pl)
		if slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.Port == pl.Port }) {
			forwarded = append(forwarded, pl.Forward)
		}
	}
	for i := range have.Attached {
		g := &have.Attached[i]
		if isFound(have.Found, g.ARN) {
			continue // read below
		}
		if slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.TG == g.Name }) || slices.Contains(forwarded, g.ARN) {
			groups[g.Name] = g
		}
	}
	for name, g := range have.Found {
		if err := l.observeGroup(ctx, &g, t.want, true); err != nil {
			return have, err
		}
		have.Found[name] = g
	}
	for _, g := range groups {
		wanted := slices.ContainsFunc(t.want.Ports, func(p nlbPort) bool { return p.TG == g.Name })
		if err := l.observeGroup(ctx, g, t.want, wanted); err != nil {
			return have, err
		}
	}
	if t.tags != nil || t.want.CrossZone || t.want.AccessLog {
		if have.Attributes, err = l.nlbAttributes(ctx, t.arn); err != nil {
			return have, err
		}
	}
	return have, nil
}

// findTargetGroup is p's target group when no listener forwards to it: maybe the upstream CCM's
// for this port (taken over, so its listener stays), or made by an earlier, interrupted try.
// untagged: upstream's, proven this Service's, without ccm's tags yet.
func (l *loadBalancers) findTargetGroup(ctx context.Context, svc *v1.Service, p nlbPort, attached []v2types.TargetGroup, named map[string]v2types.TargetGroup, verify bool) (_ *v2types.TargetGroup, untagged bool, _ error) {
	found, untagged, err := l.adoptTargetGroup(ctx, svc, p, attached, verify)
	if err != nil || found != nil {
		return found, untagged, err
	}
	if t, known := named[p.TG]; known {
		return &t, false, nil
	}
	if named != nil {
		return nil, false, nil
	}
	tg, err := l.ownTargetGroup(ctx, l.identity(svc), p.TG)
	return tg, false, err
}

func planListener(ls v2types.Listener) nlbplan.Listener {
	pl := nlbplan.Listener{ARN: aws.ToString(ls.ListenerArn), Protocol: string(ls.Protocol), Port: aws.ToInt32(ls.Port), SSLPolicy: aws.ToString(ls.SslPolicy)}
	if len(ls.DefaultActions) == 1 {
		pl.Forward = aws.ToString(ls.DefaultActions[0].TargetGroupArn)
	}
	if len(ls.Certificates) > 0 {
		pl.Cert = aws.ToString(ls.Certificates[0].CertificateArn)
	}
	return pl
}

// observeGroup reads g's targets and their health, and, when g is wanted and attributes are
// asked, its attributes.
func (l *loadBalancers) observeGroup(ctx context.Context, g *nlbplan.Group, want *nlbDesired, wanted bool) error {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(g.ARN)})
	if err != nil {
		return fmt.Errorf("aws: DescribeTargetHealth %s: %w", g.Name, err)
	}
	for _, d := range out.TargetHealthDescriptions {
		if d.Target != nil {
			g.Targets = append(g.Targets, aws.ToString(d.Target.Id))
		}
		g.Healthy = g.Healthy || (d.TargetHealth != nil && d.TargetHealth.State == v2types.TargetHealthStateEnumHealthy)
	}
	if !wanted || len(want.TGAttributes) == 0 {
		return nil // nothing asked: not even read
	}
	g.Attributes, err = l.groupAttributes(ctx, g.ARN, g.Name)
	return err
}

func (l *loadBalancers) groupAttributes(ctx context.Context, arn, name string) (map[string]string, error) {
	out, err := l.c.api.elbv2.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTargetGroupAttributes %s: %w", name, err)
	}
	have := map[string]string{}
	for _, a := range out.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	return have, nil
}

func (l *loadBalancers) nlbAttributes(ctx context.Context, arn string) (map[string]string, error) {
	out, err := l.c.api.elbv2.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeLoadBalancerAttributes (v2): %w", err)
	}
	have := map[string]string{}
	for _, a := range out.Attributes {
		have[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	return have, nil
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

// anyHealthy says whether a target of the target group arn passes its health check.
func (l *loadBalancers) anyHealthy(ctx context.Context, arn, name string) (bool, error) {
	out, err := l.c.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		return false, fmt.Errorf("aws: DescribeTargetHealth %s: %w", name, err)
	}
	return slices.ContainsFunc(out.TargetHealthDescriptions, func(d v2types.TargetHealthDescription) bool {
		return d.TargetHealth != nil && d.TargetHealth.State == v2types.TargetHealthStateEnumHealthy
	}), nil
}

func isFound(found map[string]nlbplan.Group, arn string) bool {
	for _, g := range found {
		if g.ARN == arn {
			return true
		}
	}
	return false
}
