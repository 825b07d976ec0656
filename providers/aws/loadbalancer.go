package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/keylock"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// fingerprintTag holds fingerprint.Of(the desired configuration) on each ELB, so a restart with
// nothing changed compares instead of writing.
const fingerprintTag = "ccm.k8s.io/fingerprint"

// loadBalancers implements cloudprovider.LoadBalancer with classic ELBs and NLBs.
type loadBalancers struct {
	c *Cloud
	// clusterName is the --cluster-name the service controller passes (the same on every
	// call); upstream's NLB group names are derived from it (nlbgroup.go).
	clusterName atomic.Value
	sn          subnetCache
	snap        elbSnapshot
	nsnap       nlbSnapshot
	gsnap       groupSnapshot // security groups tagged for the cluster
	tsnap       tgSnapshot    // target groups by NLB
	keys        keylock.Locks // one operation per Service at a time (see keylock)
	groupKeys   keylock.Locks // one sync at a time decides a node group's shared MTU rules (nlbrules.go)
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	return &loadBalancers{c: c, sn: subnetCache{m: map[string]subnetAnswer{}}}
}

// desired is what the fingerprint covers: everything but the member instances, which are
// compared with the ELB's own list so a node change is exactly one write.
type desired struct {
	Scheme         string
	Subnets        []string
	SecurityGroups []string
	Listeners      []string
	HealthCheck    string
	HC             annotations.HCOptions
	CrossZone      bool
	ExtraTags      map[string]string
	SourceRanges   []string
	NodeGroups     []string
	OwnGroup       bool // a security group made for this ELB (no annotation, no ElbSecurityGroup)
	// ProxyProtocol is omitted when off so the fingerprints of ELBs made before it existed hold
	// (TestGoldenNamesAndFingerprints pins them).
	ProxyProtocol bool `json:",omitempty"`
	// Attrs are the idle timeout, draining and access log attributes; nil when they are
	// upstream's defaults (60s, off, off), so the fingerprints of ELBs made before hold.
	Attrs *annotations.ELBAttrs `json:",omitempty"`
	// SSLPolicy and ExtraGroups likewise.
	SSLPolicy   string   `json:",omitempty"`
	ExtraGroups []string `json:",omitempty"`

	groupIDs []string // the groups to attach; not fingerprinted (an ID is known only after creation)
	named    bool     // SecurityGroups come from the annotation (checked before use), not the config
	vpc      string
}

// attrs are the ELB's attributes, upstream's defaults when the Service sets none.
func (d *desired) attrs() annotations.ELBAttrs {
	if d.Attrs == nil {
		return annotations.ELBAttrs{IdleTimeout: 60}
	}
	return *d.Attrs
}

// nodePorts are the ports the ELB reaches the nodes on: its listeners' instance ports and an
// HTTP health check's port.
func (d *desired) nodePorts() []int32 {
	var out []int32
	for _, s := range d.Listeners {
		out = append(out, aws.ToInt32(elbplan.ListenerOf(s).InstancePort))
	}
	if _, rest, ok := strings.Cut(d.HealthCheck, ":"); ok {
		digits, _, _ := strings.Cut(rest, "/")
		if hc, err := strconv.Atoi(digits); err == nil && hc > 0 {
			out = append(out, int32(hc))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (l *loadBalancers) name(svc *v1.Service) string {
	return lbname.AWSELB.Name(l.c.cfg.ClusterID(), svc.Namespace, svc.Name)
}

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return l.name(svc)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if annotations.ExternalType(svc) {
		return nil, false, nil // another controller's (upstream answers the same)
	}
	st, err := l.loadBalancerStatus(ctx, svc)
	if err != nil || st != nil {
		return st, st != nil, publicError(err)
	}
	// The library calls EnsureLoadBalancerDeleted only for a Service whose load balancer
	// exists. A create killed before the load balancer was made leaves this Service's security
	// group or target groups behind: they count as existing, so that the delete removes them.
	left, err := l.leftovers(ctx, svc)
	if err != nil || !left {
		return nil, false, publicError(err)
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// loadBalancerStatus is the status of svc's load balancer of the type it asks for, or nil.
func (l *loadBalancers) loadBalancerStatus(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, error) {
	if svc.Annotations[annotations.Prefix+annotations.Type] == "nlb" {
		_, lb, _, _, err := l.findNLB(ctx, svc)
		if err != nil || lb == nil {
			return nil, err
		}
		return nlbStatus(lb), nil
	}
	_, d, _, _, err := l.findClassic(ctx, svc)
	if err != nil || d == nil {
		return nil, err
	}
	return status(d), nil
}

// leftovers says whether objects svc owns remain while its load balancer does not: an ELB
// security group or a target group carrying its ownership tags. Read only when the load
// balancer is missing, so unchanged Services never pay for it.
func (l *loadBalancers) leftovers(ctx context.Context, svc *v1.Service) (bool, error) {
	id := l.identity(svc)
	groups, err := l.ownedELBGroups(ctx, id)
	if err != nil || len(groups) > 0 {
		return len(groups) > 0, err
	}
	tgs, err := l.ownedTargetGroups(ctx, id)
	return len(tgs) > 0, err
}

// elbOwnerCheck reads the ELB's tags and checks that svc owns it (see checkLB): run before
// the first write of a reconcile that decided on the listing's tags (which may be the
// listing's lifetime old: someone may have retagged it since).
func (l *loadBalancers) elbOwnerCheck(svc *v1.Service, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		tags, err := l.tags(ctx, name)
		if err != nil {
			return err
		}
		return upstream.CheckLB(l.identity(svc), svc, name, tags)
	}
}

// nlbOwnerCheck is elbOwnerCheck for an NLB.
func (l *loadBalancers) nlbOwnerCheck(svc *v1.Service, name, arn string) func(context.Context) error {
	return func(ctx context.Context) error {
		tags, err := l.tagsV2(ctx, arn)
		if err != nil {
			return err
		}
		return upstream.CheckLB(l.identity(svc), svc, name, tags)
	}
}

// status is the ELB's DNS name, lower-cased: ELB keeps the case of the load balancer name in
// it (hashed names carry an upper-case marker) and Kubernetes accepts only lower-case hostnames.
func status(d *elbtypes.LoadBalancerDescription) *v1.LoadBalancerStatus {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: strings.ToLower(aws.ToString(d.DNSName))}}}
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

// isCode and filter are awsread's, used throughout the package.
var (
	isCode = awsread.IsCode
	filter = awsread.Filter
)

// errNotCreatedYet is UpdateLoadBalancer finding no load balancer: updates never create one.
var errNotCreatedYet = errors.New("no load balancer to update")

// EnsureLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	l.clusterName.Store(clusterName)
	if annotations.ExternalType(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	st, err := l.ensure(ctx, svc, nodes, false)
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "ensure", start, err)
	return st, publicError(err)
}

// EnsureLoadBalancer, UpdateLoadBalancer and GetLoadBalancer step aside for a Service whose
// aws-load-balancer-type is "external" or "nlb-ip", as upstream does: the AWS Load Balancer
// Controller serves it. The service controller takes ImplementedElsewhere as "nothing to do".

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: the same reconcile, which changes
// only members when only the nodes changed, but never creates. The node sync calls it for the
// Services it has cached, also one whose load balancer a worker has just deleted; creating
// would bring that back for good. A Service with no address yet has its creation pending
// (requeued with the current Nodes), so that is no error.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	l.clusterName.Store(clusterName)
	if annotations.ExternalType(svc) {
		return cloudprovider.ImplementedElsewhere
	}
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	_, err := l.ensure(ctx, svc, nodes, true)
	if errors.Is(err, errNotCreatedYet) {
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			err = nil
		} else {
			err = fmt.Errorf("aws: load balancer %s of %s/%s is gone; not recreating it in an update", l.name(svc), svc.Namespace, svc.Name)
		}
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "update", start, err)
	return publicError(err)
}

// ensure reconciles svc's load balancer; with mustExist it returns errNotCreatedYet rather
// than create one.
func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node, mustExist bool) (*v1.LoadBalancerStatus, error) {
	if err := l.c.cfg.checker().Values(svc); err != nil {
		return nil, err
	}
	if err := annotations.UnsupportedSpec(svc); err != nil {
		return nil, err
	}
	opts, err := annotations.Parse(svc)
	if err != nil {
		return nil, err
	}
	if err := annotations.CheckUnreadable(l.identity(svc), opts, l.c.cfg.allow()); err != nil {
		return nil, err
	}
	l.adviseUnused(svc, opts)
	var st *v1.LoadBalancerStatus
	if opts.NLB {
		st, err = l.ensureNLB(ctx, svc, opts, nodes, mustExist)
	} else {
		st, err = l.ensureClassic(ctx, svc, opts, nodes, mustExist)
	}
	if err != nil && !errors.Is(err, errNotCreatedYet) {
		// Maybe a listing was out of date (a group deleted by hand): the next try lists afresh.
		for _, name := range []string{l.name(svc), upstream.LBName(svc)} {
			l.snap.Forget(name)
			l.nsnap.Forget(name)
		}
		l.gsnap.ForgetAll()
		l.tsnap.ForgetAll()
	}
	return st, err
}

// ensureClassic reconciles svc's classic ELB as observe → plan → apply: it reads the ELB (the
// cluster's listing, else one Describe; the cross-zone attribute), its groups and the node
// groups; plans the groups' writes (planELBGroups) and the ELB's (elbplan.Compute); confirms
// the ELB's owner once when it decided on the listing's tags and something is to be written;
// then writes the groups, the ELB (made, or made again for a scheme change), the plan, the
// unused own group's delete and the tags. Nothing differs: no write. The fingerprint tag says
// what was last applied: a difference while it still matches is drift, reported as an Event.
func (l *loadBalancers) ensureClassic(ctx context.Context, svc *v1.Service, opts *annotations.Options, nodes []*v1.Node, mustExist bool) (_ *v1.LoadBalancerStatus, err error) {
	r, err := l.observeClassic(ctx, svc, opts, nodes, mustExist)
	if err != nil {
		return nil, err
	}
	planELBGroups(r.id, r.want, r.groups)
	r.planExisting()
	defer func() {
		if r.stale || err != nil { // the next look reads the ELB as written
			l.snap.Forget(r.name)
		}
	}()
	if r.listed && r.writes() {
		// Decided on the listing's tags, which may be its lifetime old: read them again once.
		if err := l.elbOwnerCheck(svc, r.name)(ctx); err != nil {
			return nil, err
		}
	}
	groupRepairs, err := l.applyELBGroups(ctx, svc, r.name, r.want, r.groups)
	if err != nil {
		return nil, err
	}
	repairs, err := l.applyClassic(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	if r.applied {
		l.c.events.Repaired(svc, append(groupRepairs, repairs...))
	}
	if err := l.tagClassic(ctx, r); err != nil {
		return nil, err
	}
	return status(r.cur), nil
}

// classicRun is one reconcile of an ELB: the members, the ELB found (cur nil: none; tags its
// tags; listed: both from the listing), the desired state with its fingerprint, its groups,
// and its plan.
type classicRun struct {
	svc     *v1.Service
	name    string
	cur     *elbtypes.LoadBalancerDescription
	tags    map[string]string
	listed  bool
	members []string
	want    *desired
	fp      string
	id      ownership.Identity
	groups  *elbGroups
	have    elbplan.Observed // cur's attributes, read
	plan    elbplan.Plan
	planned bool // plan is computed (an existing ELB whose groups are known)
	// applied: the desired state is the one last applied, so a difference is drift.
	applied bool
	stale   bool // the ELB's entry in the listing is no longer what the cloud holds
}

// observeClassic reads the members, the Service's ELB, its attributes and groups, and builds
// the desired state. A missing ELB with mustExist is errNotCreatedYet; an ELB found that is not
// the Service's (checkLB) is an error.
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

// planExisting plans the existing ELB's changes once the groups it is to have are known.
func (r *classicRun) planExisting() {
	if r.cur != nil && r.groups.planned {
		r.plan, r.planned = elbplan.Compute(r.want.planDesired(), r.members, r.have), true
	}
}

// tagsDue says whether the ELB's tags are to be written: its fingerprint or ownership tags
// (after the user's) are not what they should be.
func (r *classicRun) tagsDue() bool {
	return r.tags == nil || fingerprint.Changed(r.tags[fingerprintTag], r.fp) || ownership.NeedsUID(r.id, r.tags) || !tagsHold(r.tags, ownTags(r.id, r.want.ExtraTags, nil))
}

// writes says whether the reconcile writes anything: a plan not computed yet (a group to
// make first) does.
func (r *classicRun) writes() bool {
	return r.cur == nil || r.groups.writes() || !r.planned || !r.plan.Empty() || r.tagsDue()
}

// applyClassic makes the ELB (deleting it first when its scheme changes, which ELB cannot do
// in place), writes its plan and drops the own group it no longer uses. It returns what the
// plan repaired on an ELB that was there.
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

// tagsHold reports whether have carries every tag of want with its value.
func tagsHold(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func (l *loadBalancers) desired(ctx context.Context, svc *v1.Service, opts *annotations.Options, name string, nodeGroups []string) (*desired, error) {
	d := &desired{Scheme: "internet-facing", HC: opts.HC, CrossZone: opts.CrossZone, ExtraTags: opts.ExtraTags, NodeGroups: nodeGroups, ProxyProtocol: opts.ProxyProtocol,
		SSLPolicy: opts.SSLPolicy, ExtraGroups: opts.ExtraGroups}
	d.HC.Protocol, d.HC.Port, d.HC.Path = "", "", "" // in HealthCheck
	if opts.Attrs != (annotations.ELBAttrs{IdleTimeout: 60}) {
		a := opts.Attrs
		d.Attrs = &a
	}
	if opts.Internal {
		d.Scheme = "internal"
	}
	var err error
	if d.Subnets, d.vpc, err = l.subnets(ctx, svc, opts); err != nil {
		return nil, err
	}
	d.SecurityGroups = opts.SecurityGroups
	d.named = len(d.SecurityGroups) > 0
	if len(d.SecurityGroups) == 0 && l.c.cfg.Global.ElbSecurityGroup != "" {
		d.SecurityGroups = []string{l.c.cfg.Global.ElbSecurityGroup}
	}
	d.OwnGroup = len(d.SecurityGroups) == 0
	d.SourceRanges = opts.SourceRanges
	for _, p := range svc.Spec.Ports {
		// Upstream's listeners: on a TLS port the backend protocol picks HTTPS or SSL in front;
		// elsewhere only "http" makes an HTTP listener, and https or ssl are plain TCP (their
		// health check is SSL, below).
		proto, iproto := strings.ToUpper(opts.Backend), strings.ToUpper(opts.Backend)
		if opts.SSLPort(p) {
			proto = map[string]string{"HTTP": "HTTPS", "HTTPS": "HTTPS", "TCP": "SSL", "SSL": "SSL"}[iproto]
		} else if iproto == "HTTPS" || iproto == "SSL" {
			proto, iproto = "TCP", "TCP"
		}
		cert := ""
		if opts.SSLPort(p) {
			cert = opts.SSLCert
		}
		d.Listeners = append(d.Listeners, fmt.Sprintf("%s:%d:%s:%d:%s", proto, p.Port, iproto, p.NodePort, cert))
	}
	d.HealthCheck = l.classicHealth(svc, opts)
	return d, nil
}

// classicHealth is the ELB's health check target as upstream builds it: with
// externalTrafficPolicy Local HTTP on the health check nodePort at /healthz; else TCP (SSL with
// backend-protocol https or ssl) on the first nodePort, or the shared kube-proxy probe of
// ClusterServiceLoadBalancerHealthProbeMode Shared; then the healthcheck-protocol, -port
// ("traffic-port": the first nodePort) and -path annotations (path default /).
func (l *loadBalancers) classicHealth(svc *v1.Service, opts *annotations.Options) string {
	first := firstNodePort(svc)
	var proto, path string
	var port int32
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		proto, port, path = "HTTP", svc.Spec.HealthCheckNodePort, "/healthz"
	} else if p, sharedPath, ok := l.c.cfg.sharedProbe(); ok {
		proto, port, path = "HTTP", int32(p), sharedPath // nodePorts() admits it from the ELB's group
	} else {
		proto, port = "TCP", first
		if opts.Backend == "https" || opts.Backend == "ssl" {
			proto = "SSL"
		}
	}
	if opts.HC.Protocol != "" {
		proto = opts.HC.Protocol
	}
	switch opts.HC.Port {
	case "":
	case annotations.TrafficPort:
		port = first
	default:
		n, _ := strconv.Atoi(opts.HC.Port)
		port = int32(n)
	}
	if proto != "HTTP" && proto != "HTTPS" {
		return fmt.Sprintf("%s:%d", proto, port)
	}
	if path == "" {
		path = "/"
	}
	if opts.HC.Path != "" {
		path = opts.HC.Path
	}
	return fmt.Sprintf("%s:%d%s", proto, port, path)
}

func firstNodePort(svc *v1.Service) int32 {
	if len(svc.Spec.Ports) == 0 {
		return 0
	}
	return svc.Spec.Ports[0].NodePort
}

// members maps the Nodes (filtered by target-node-labels) to instance IDs and returns the
// security groups of those instances. Nodes with a providerID cost no call beyond the shared,
// batched, cached DescribeInstances.
func (l *loadBalancers) members(ctx context.Context, opts *annotations.Options, nodes []*v1.Node) (ids, groups []string, err error) {
	var byID []string
	for _, n := range nodes {
		if !opts.NodeLabels.Selects(n.Labels) {
			continue
		}
		if n.Spec.ProviderID == "" {
			in, err := l.c.lookup(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			if in != nil {
				byID = append(byID, aws.ToString(in.InstanceId))
			}
			continue
		}
		id, err := instanceID(n.Spec.ProviderID)
		if err != nil {
			return nil, nil, err
		}
		byID = append(byID, id)
	}
	got, err := l.c.inst.Get(ctx, byID)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range byID {
		in := alive(got[id])
		if in == nil {
			continue // gone: the node controller will remove its Node
		}
		ids = append(ids, id)
		if l.c.cfg.Global.DisableSecurityGroupIngress {
			continue
		}
		g, err := nodeGroupOf(id, instanceGroups(in), func(g string) bool {
			sg, _ := l.gsnap.Get(ctx, g, l.listGroups) // the cluster's tagged groups, listed once
			return sg != nil
		})
		if err != nil {
			return nil, nil, err
		}
		if g != "" && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	sort.Strings(groups)
	return ids, groups, nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer. It deletes only an ELB
// tagged as owned by this cluster for this Service, then its security group and the rules
// that point at it. A missing ELB is success (its group is still cleaned up).
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	l.clusterName.Store(clusterName)
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	_, err := l.deleteNLB(ctx, svc)
	if err == nil {
		_, err = l.deleteClassic(ctx, svc)
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "delete", start, err)
	return publicError(err)
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
	if byName != nil && !slices.ContainsFunc(owned, func(g ec2types.SecurityGroup) bool { return aws.ToString(g.GroupId) == aws.ToString(byName.GroupId) }) {
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
