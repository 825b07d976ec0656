package aws

// What a classic ELB reconcile reads, writing nothing: the Service's ELB (ccm's name, else
// upstream's proven by its tags), its attributes, and its security groups checked for ownership.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// observeClassic reads the members, the Service's ELB, its attributes and groups, and builds
// the desired state. A missing ELB with mustExist is errNotCreatedYet; an ELB found that is not
// the Service's (upstream.CheckLB) is an error.
func (l *loadBalancers) observeClassic(ctx context.Context, svc *v1.Service, opts *annotations.Options, nodes []*v1.Node, mustExist bool) (*classicRun, error) {
	r := &classicRun{svc: svc, id: l.identity(svc)}
	members, nodeGroups, err := l.members(ctx, opts, nodes)
	if err != nil {
		return nil, err
	}
	r.members = members
	// ccm's ELB, or the one the upstream CCM made for this Service (taken over in place).
	if r.name, r.cur, r.tags, r.listed, err = l.findClassic(ctx, svc); err != nil {
		return nil, err
	}
	l.adviseKeptTLSClassic(svc, opts, r.cur)
	if r.want, err = l.desired(ctx, svc, opts, r.name, nodeGroups); err != nil {
		return nil, err
	}
	r.fp = fingerprint.Of(r.want)
	if r.cur == nil && mustExist {
		return nil, errNotCreatedYet
	}
	if r.cur != nil {
		if err := upstream.CheckLB(r.id, svc, r.name, r.tags); err != nil {
			return nil, err
		}
		r.applied = !fingerprint.Changed(r.tags[fingerprintTag], r.fp) && !ownership.NeedsUID(r.id, r.tags)
		r.have.Desc = r.cur
		if r.have.CrossZone, r.have.Attrs, err = l.attributesOf(ctx, r.name); err != nil {
			return nil, err
		}
	}
	if r.groups, err = l.observeELBGroups(ctx, svc, r.name, r.want); err != nil {
		return nil, err
	}
	return r, nil
}

// adviseKeptTLSClassic is adviseKeptTLS for an ELB, whose description holds its listeners:
// it says which TLS listeners are kept when the Service's ssl-ports are some upstream reads
// as plain.
func (l *loadBalancers) adviseKeptTLSClassic(svc *v1.Service, opts *annotations.Options, cur *elbtypes.LoadBalancerDescription) {
	if cur == nil || len(opts.PortsReadPlainOnlyByUpstream(svc)) == 0 {
		return
	}
	current := map[int32]string{}
	for _, ld := range cur.ListenerDescriptions {
		if ld.Listener != nil {
			current[ld.Listener.LoadBalancerPort] = aws.ToString(ld.Listener.Protocol)
		}
	}
	if msg := opts.KeepTLSListeners(svc, current); msg != "" {
		l.c.events.Advise(svc, reasonListenerKeptTLS, msg)
	}
}

// findClassic returns svc's classic ELB: ccm's name, else upstream's when its tags prove it is
// this Service's (never one of another cluster or Service). Neither: ccm's name and nil. From
// the cluster's listing when it holds either (listed), else read.
func (l *loadBalancers) findClassic(ctx context.Context, svc *v1.Service) (name string, cur *elbtypes.LoadBalancerDescription, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstream.LBName(svc)
	id := l.identity(svc)
	if cur, tags := l.snap.Get(ctx, own, l.listELBs); cur != nil && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.snap.Get(ctx, up, l.listELBs); cur != nil && tags != nil && upstream.CheckLB(id, svc, up, tags) == nil {
			return up, cur, tags, true, nil
		}
	}
	// Not listed (new, just written, or the listing failed): read ccm's name, then upstream's.
	if cur, err = l.describe(ctx, own); err != nil || cur != nil {
		if cur != nil {
			tags, err = l.tags(ctx, own)
		}
		return own, cur, tags, false, err
	}
	if up != "" {
		if cur, err = l.describe(ctx, up); err != nil {
			return "", nil, nil, false, err
		}
		if cur != nil {
			if tags, err = l.tags(ctx, up); err != nil {
				return "", nil, nil, false, err
			}
			if upstream.CheckLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("A load balancer has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
}

// describe returns the ELB, or nil when ELB says it does not exist.
func (l *loadBalancers) describe(ctx context.Context, name string) (*elbtypes.LoadBalancerDescription, error) {
	out, err := l.c.api.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}})
	if isCode(err, "LoadBalancerNotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeLoadBalancers %s: %w", name, err)
	}
	if len(out.LoadBalancerDescriptions) == 0 {
		return nil, nil
	}
	return &out.LoadBalancerDescriptions[0], nil
}

func (l *loadBalancers) tags(ctx context.Context, name string) (map[string]string, error) {
	out, err := l.c.api.elb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{name}})
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeTags %s: %w", name, err)
	}
	tags := map[string]string{}
	for _, td := range out.TagDescriptions {
		for _, t := range td.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return tags, nil
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

// observeELBGroups reads the ELB's groups: the named ones are checked (each must be the
// Service's by its tags, or allowed by the operator), its own group is found (one found by
// its name alone must be the Service's, or upstream's for this Service's ELB), and the node
// groups are read. It sets want.groupIDs when they are known before any write.
func (l *loadBalancers) observeELBGroups(ctx context.Context, svc *v1.Service, name string, want *desired) (*elbGroups, error) {
	id := l.identity(svc)
	g := &elbGroups{}
	if !want.OwnGroup {
		if want.named {
			if err := l.checkNamedGroups(ctx, id, annotations.SecurityGroup, want.SecurityGroups); err != nil {
				return nil, err
			}
		}
		want.groupIDs = want.SecurityGroups
		g.unused = l.unusedOwnGroup(ctx, svc, name, want.vpc)
	} else if err := l.observeOwnELBGroup(ctx, svc, name, want, g); err != nil {
		return nil, err
	}
	if len(want.ExtraGroups) > 0 {
		if err := l.checkNamedGroups(ctx, id, annotations.ExtraGroups, want.ExtraGroups); err != nil {
			return nil, err
		}
	}
	if l.c.cfg.Global.DisableSecurityGroupIngress || len(want.NodeGroups) == 0 {
		return g, nil
	}
	gs, err := l.groupsByID(ctx, want.NodeGroups)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		g.nodes = append(g.nodes, sgrules.Group{ID: aws.ToString(gs[i].GroupId), Rules: rulesOf(&gs[i])})
	}
	return g, nil
}

// observeOwnELBGroup finds the ELB's own group and decides whether it is the Service's.
func (l *loadBalancers) observeOwnELBGroup(ctx context.Context, svc *v1.Service, name string, want *desired, g *elbGroups) error {
	own, err := l.ownGroup(ctx, name, want.vpc)
	if err != nil || own == nil {
		return err
	}
	id := l.identity(svc)
	g.own = own
	g.seen = &sgrules.Group{ID: aws.ToString(own.GroupId), Rules: rulesOf(own)}
	if err := ownership.Check(id, "security group", groupName(name), groupTags(own)); err != nil {
		// Found by its name alone: a group someone else made with this name is not ours;
		// upstream's group for this Service's ELB becomes ours in place.
		if !upstream.IsELBGroup(id, svc, name, own) {
			return err
		}
		g.seen.Upstream = true
	}
	want.groupIDs = []string{g.seen.ID}
	return nil
}

// unusedOwnGroup is the ELB's own group when the ELB uses named groups instead (nil: none, or
// not proven the Service's).
func (l *loadBalancers) unusedOwnGroup(ctx context.Context, svc *v1.Service, lbName, vpc string) *types.SecurityGroup {
	if vpc == "" {
		return nil
	}
	g, _ := l.gsnap.Get(ctx, "name:"+vpc+"/"+groupName(lbName), l.listGroups)
	id := l.identity(svc)
	if g == nil || (!ownership.Is(id, groupTags(g)) && !upstream.IsELBGroup(id, svc, lbName, g)) {
		return nil
	}
	return g
}
