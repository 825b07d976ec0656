package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/keylock"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
)

// loadBalancers implements cloudprovider.LoadBalancer over Octavia and Neutron floating IPs.
//
// Provisioning never holds a worker: a load balancer that is PENDING_* makes Ensure return a
// RetryError, and the service controller comes back after [LoadBalancer] pending-retry. Short
// waits happen only between the writes of one update (Octavia refuses a write while the load
// balancer is PENDING_UPDATE), bounded by updateWait.
type loadBalancers struct {
	c *Cloud

	mu  sync.Mutex
	ids map[string]string // load balancer name -> ID we created or found: list results may lag

	keys keylock.Locks // one operation per Service at a time (see keylock)

	// pendingLooks and stuckAfter pace the looks at load balancers Octavia holds pending
	// (stuck.go); tests shorten stuckAfter.
	pendingLooks pendingLooks
	stuckAfter   time.Duration

	snaps snapshots // bulk reads shared by the syncs of unchanged Services (observe.go)

	// deleted holds the Services (by UID, with the time) whose load balancers this process
	// deleted: a Node change that reaches one of them afterwards (the service controller's node
	// sync works from its cache) must not create the load balancer again. Entries older than
	// deletedMemory are dropped at the next delete.
	deleted sync.Map

	tlsChecked sync.Map // TLS reference -> when Barbican last had it (tls.go)

	vip vipSubnets // the VIP subnet detected from a Node's port (vipsubnet.go)

	fipSubnetChecked sync.Map // Service UID -> the selection and floating IP last checked (fipsubnetkept.go)
	fipSubnetLists   sync.Map // network and selection -> *fipSubnetList (fipsubnetkept.go)
	fipSubnetListMu  sync.Mutex
}

// deletedMemory is how long a deleted Service is remembered: far longer than a node sync
// holding a stale copy of it.
const deletedMemory = time.Hour

func (l *loadBalancers) markDeleted(uid types.UID) {
	now := time.Now()
	l.deleted.Range(func(k, v any) bool {
		if now.Sub(v.(time.Time)) > deletedMemory {
			l.deleted.Delete(k)
		}
		return true
	})
	l.deleted.Store(uid, now)
	l.fipSubnetChecked.Delete(uid)
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// updateWait bounds the wait for PENDING_UPDATE between two writes of one reconcile.
const updateWait = 20 * time.Second

func newLoadBalancers(c *Cloud) *loadBalancers {
	return &loadBalancers{c: c, ids: map[string]string{}, stuckAfter: defaultStuckAfter}
}

func svcKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// GetLoadBalancerName implements cloudprovider.LoadBalancer: kube_service_<cluster>_<ns>_<name>.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name)
}

// errNamedMissing: the load balancer named by load-balancer-id does not exist.
var errNamedMissing = errors.New("does not exist")

// find returns the load balancer named name for the Service id, or nil: the one named by
// load-balancer-id (existingID), the one we created (by ID, as a new load balancer may be
// missing from lists for a while), else the one with that name that the Service owns.
//
// adopted is true for a load balancer named by load-balancer-id that is not the Service's own
// but that the operator allowed ([LoadBalancer] allowed-resource-*): ccm then only adds its
// own listeners to it. One that is neither is refused with an error wrapping
// ownership.ErrNotOwned, and returned with it (delete takes back only our listeners from it).
func (l *loadBalancers) find(ctx context.Context, cl *clients, id ownership.Identity, name, existingID string) (lb *loadbalancers.LoadBalancer, adopted bool, err error) {
	if existingID != "" {
		lb, err := loadbalancers.Get(ctx, cl.lb, existingID).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, false, fmt.Errorf("annotation %s: load balancer %q %w", annLoadBalancerID, existingID, errNamedMissing)
		}
		if err != nil {
			return nil, false, fmt.Errorf("getting load balancer %s: %w", existingID, err)
		}
		if lbOwned(id, lb) == nil {
			return lb, false, nil
		}
		if earlierService(id, lb) {
			return nil, false, errEarlierNamed(existingID) // neither shared nor allowed (earlierservice.go)
		}
		if sharable(id, lb) {
			return lb, true, nil // another Service's of this cluster and namespace: shared (shared.go)
		}
		a, _ := annotations.Lookup(annLoadBalancerID)
		if err := reach.Named(id, l.c.cfg.LoadBalancer.allow, a, lb.ID, reach.Evidence{Tags: tagMap(lb.Tags)}); err != nil {
			return lb, false, err
		}
		return lb, true, nil
	}
	l.mu.Lock()
	known := l.ids[name]
	l.mu.Unlock()
	if known != "" {
		lb, err := loadbalancers.Get(ctx, cl.lb, known).Extract()
		if err == nil && lbOwned(id, lb) == nil {
			return lb, false, nil
		}
		if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, false, fmt.Errorf("getting load balancer %s: %w", known, err)
		}
		l.forget(name)
	}
	pages, err := loadbalancers.List(cl.lb, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("listing load balancers named %s: %w", name, err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, false, err
	}
	var refusal error
	for i := range all {
		if all[i].Name != name {
			continue
		}
		if err := lbOwned(id, &all[i]); err != nil {
			refusal = fmt.Errorf("a load balancer named %s exists; not touching it: %w", name, err)
			if earlierService(id, &all[i]) {
				refusal = errEarlierByName(name, err)
			}
			continue
		}
		l.remember(name, all[i].ID)
		return &all[i], false, nil
	}
	if refusal != nil {
		return nil, false, refusal
	}
	return l.findLegacyNamed(ctx, cl, id, name)
}

// findLegacyNamed looks for the Service's load balancer under the names upstream gave it where
// ccm's differs: its literal kube_service_<cluster>_<namespace>_<name> (upstreamName: a
// cluster name with "_"), then the name early upstream CCMs gave it (k8s.io/cloud-provider's
// DefaultLoadBalancerName: "a" and the UID without dashes, cut to 32), which upstream still
// looks up. Only for the first family's name, and only one the Service owns (its tags, or
// upstream's description naming this Service and cluster, as lbOwned proves any load balancer
// found by name). syncOne gives it the current name.
func (l *loadBalancers) findLegacyNamed(ctx context.Context, cl *clients, id ownership.Identity, name string) (*loadbalancers.LoadBalancer, bool, error) {
	if id.UID == "" || name != lbname.Octavia.Name(id.Cluster, id.Namespace, id.Name) {
		return nil, false, nil
	}
	early := cloudprovider.DefaultLoadBalancerName(&v1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID(id.UID)}})
	for _, legacy := range []string{upstreamName(id), early} {
		if legacy == "" {
			continue
		}
		pages, err := loadbalancers.List(cl.lb, loadbalancers.ListOpts{Name: legacy}).AllPages(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("listing load balancers named %s: %w", legacy, err)
		}
		all, err := loadbalancers.ExtractLoadBalancers(pages)
		if err != nil {
			return nil, false, err
		}
		for i := range all {
			if all[i].Name == legacy && lbOwned(id, &all[i]) == nil {
				l.remember(name, all[i].ID)
				return &all[i], false, nil
			}
		}
	}
	return nil, false, nil
}

func (l *loadBalancers) remember(name, id string) {
	l.mu.Lock()
	l.ids[name] = id
	l.mu.Unlock()
}

func (l *loadBalancers) forget(name string) {
	l.mu.Lock()
	delete(l.ids, name)
	l.mu.Unlock()
}

// familyName names the load balancer of one IP family: the first family of the Service keeps
// the upstream name, the second (dual-stack) gets the family as a suffix. "_" cannot occur in
// a Service name, so this never collides with another Service's load balancer.
func (l *loadBalancers) familyName(clusterName string, svc *v1.Service, family v1.IPFamily) string {
	if family == families(svc)[0] {
		return lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name)
	}
	return lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name+"_"+strings.ToLower(string(family)))
}

// familySpecs is one spec per IP family of the Service, each with its VIP and member subnet
// of that family (detected from a Node's port when nothing names one: vipsubnet.go). all are
// every Node, members or not: upstream detects the VIP subnet from any of them.
func (r *svcRun) familySpecs(ctx context.Context, all []*v1.Node, base *lbSpec) ([]*lbSpec, error) {
	l, cl := r.l, r.cl
	var out []*lbSpec
	for i, f := range families(r.svc) {
		s := *base
		s.family, s.name = f, l.familyName(r.clusterName, r.svc, f)
		if i > 0 {
			// load-balancer-id and port-id name the first family's load balancer and its port
			s.existingID, s.recordedID, s.vipPortID = "", "", ""
		}
		if f == v1.IPv6Protocol {
			s.fixedFIP = "" // IPv6 VIPs are routed, not NATed: no floating IP
		}
		s.vipAddress = requestedVIP(base.fixedFIP, s.internal, f)
		// Each family's listeners get the source ranges of that family only.
		s.listeners = make([]listenerSpec, len(base.listeners))
		for j, ls := range base.listeners {
			ls.SourceRanges = familyRanges(ls.SourceRanges, f)
			s.listeners[j] = ls
		}
		var err error
		if base.detectSubnet {
			if s.subnetID, err = l.nodeSubnet(ctx, cl, all, f); err != nil {
				return nil, err
			}
			s.memberSubnetID = s.subnetID // as upstream, unless member-subnet-id names one
		} else if s.subnetID, err = familySubnet(ctx, cl, base.subnetID, base.networkID, f); err != nil {
			return nil, err
		}
		if base.memberSubnetID != "" {
			if s.memberSubnetID, err = familySubnet(ctx, cl, base.memberSubnetID, "", f); err != nil {
				// Upstream's default member subnet on a network without a subnet of this
				// family (a dual-stack class, an IPv4-only config subnet): the family's
				// members go on its VIP subnet, as before that default. A member-subnet-id
				// that was set must serve every family.
				var none *noFamilySubnetError
				if !base.memberDefault || !errors.As(err, &none) || s.subnetID == "" {
					return nil, fmt.Errorf("member subnet (%s %q): %w", base.memberSubnetFrom, base.memberSubnetID, err)
				}
				s.memberSubnetID = s.subnetID
			}
		}
		if base.memberDefault {
			s.memberSubnetAlts = l.earlierMemberSubnets(ctx, cl, &s)
		}
		out = append(out, &s)
	}
	return out, nil
}

// earlierMemberSubnets are the subnets of s's family on which an earlier ccm put members by
// default and that satisfy upstream's default as well: the VIP subnet, and subnet-id by
// annotation, class, config (the VIP subnet before the class came first for public
// Services). One that cannot be resolved is left out: its members are then rewritten.
func (l *loadBalancers) earlierMemberSubnets(ctx context.Context, cl *clients, s *lbSpec) []string {
	var out []string
	add := func(id string) {
		if id != "" && id != s.memberSubnetID && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	add(s.subnetID)
	if s.svcSubnetID != "" && !s.detectSubnet {
		if id, err := familySubnet(ctx, cl, s.svcSubnetID, "", s.family); err == nil {
			add(id)
		}
	}
	return out
}

// GetLoadBalancer implements cloudprovider.LoadBalancer: it exists if the first family's does.
// A load balancer the Service names but does not own (or that does not exist) is not its: it
// "exists" only while it holds listeners of the Service, so that deleting the Service takes
// them back and never blocks on it; else the Service's own load balancer, by its name, is
// looked for, so that one made before the annotation was set is deleted with the Service.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (_ *v1.LoadBalancerStatus, _ bool, err error) {
	defer func() { err = l.c.cfg.sanitize(err) }()
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return nil, false, err
	}
	id := ownership.Of(clusterName, svc)
	var addrs []string
	for i, f := range families(svc) {
		existing := svc.Annotations[annLoadBalancerID]
		if i > 0 {
			existing = "" // it names the first family's load balancer
		}
		name := l.familyName(clusterName, svc, f)
		lb, _, err := l.find(ctx, cl, id, name, existing)
		if isNotOwned(err) && lb != nil {
			if n, err := l.ourListeners(ctx, cl, lb.ID, id); err != nil || n > 0 {
				return nil, n > 0, err
			}
		}
		if existing != "" && (errors.Is(err, errNamedMissing) || isNotOwned(err)) {
			// The one named is not the Service's, or gone: its own, by name, may be there.
			lb, _, err = l.find(ctx, cl, id, name, "")
		}
		switch {
		case isNotOwned(err):
			lb = nil
		case err != nil:
			return nil, false, err
		}
		if lb == nil {
			if i == 0 {
				return nil, false, nil
			}
			continue
		}
		addr := lb.VipAddress
		if fip, err := l.portFIP(ctx, cl, lb.VipPortID); err != nil {
			return nil, true, err
		} else if fip != nil {
			addr = fip.FloatingIP
		}
		addrs = append(addrs, addr)
	}
	return lbStatus(addrs, svc, l.statusOpts(svc)), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	defer func() { err = l.c.cfg.sanitize(err) }()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	return l.sync(ctx, clusterName, svc, nodes, false)
}

// errNotCreatedYet: UpdateLoadBalancer found no load balancer to update.
var errNotCreatedYet = errors.New("does not exist yet")

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: the same reconcile, which writes
// only the pools whose members changed (one batch call each).
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	defer func() { err = l.c.cfg.sanitize(err) }()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	_, err = l.sync(ctx, clusterName, svc, nodes, true)
	if errors.Is(err, errNotCreatedYet) && len(svc.Status.LoadBalancer.Ingress) == 0 {
		// A Node change met a Service whose load balancer is still being created (or failed to
		// be): the Service's own requeued sync creates it with the Nodes of that moment. A
		// Service that has an address but no load balancer (deleted out of band) gets it back
		// here already (syncOne), as a repair.
		klog.V(2).InfoS("No load balancer to update yet; its pending creation uses the current Nodes", "service", klog.KObj(svc))
		return nil
	}
	return err
}

// retry is a planned re-check (the library still reports it as a SyncLoadBalancerFailed
// Warning, so the message says it is one).
func (l *loadBalancers) retry(msg string) error {
	d := l.c.cfg.LoadBalancer.PendingRetry.Duration
	return api.NewRetryError(fmt.Sprintf("%s; checking again in %v", msg, d), d)
}

// retries gathers the RetryErrors of the families of one Service: one RetryError saying all,
// after the soonest delay any of them asks for.
type retries struct {
	msgs  []string
	after time.Duration
}

// add takes err if it is a RetryError.
func (r *retries) add(err error) bool {
	var re *api.RetryError
	if !errors.As(err, &re) {
		return false
	}
	r.msgs = append(r.msgs, err.Error())
	if len(r.msgs) == 1 || re.RetryAfter() < r.after {
		r.after = re.RetryAfter()
	}
	return true
}

func (r *retries) err() error {
	if len(r.msgs) == 0 {
		return nil
	}
	return api.NewRetryError(strings.Join(r.msgs, "; "), r.after)
}

// syncReport is what one sync found besides its result: the out-of-band changes it repaired
// (reported as one Warning Event), and whether the Service's spec changed (then a difference
// in the cloud is the spec's, not drift) or an object was created for the first time.
type syncReport struct {
	repairs              []string
	specChanged, created bool
	// recreated: listeners replaced because their protocol changed (a Normal Event each).
	recreated []string
	// serving: the first family's load balancer serves the Service alone (singlefamily.go).
	serving familyServing
	// seen is the bulk read this sync may compare with (nil: each object is read).
	seen *snapshot
	// lbID is the first family's load balancer, for the Service's load-balancer-id annotation.
	lbID string
	// stuck: objects Octavia has held pending for longer than stuckAfter (a Warning each).
	stuck []string
	// left: listeners no CCM made on the Service's load balancer, left alone (a Warning each,
	// given as advice: they are there at every sync).
	left []string
}

// sync reconciles one load balancer per IP family. Families provision in parallel: a pending
// one does not stop the other from being created in the same pass.
func (l *loadBalancers) sync(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node, mustExist bool) (*v1.LoadBalancerStatus, error) {
	all := nodes                    // the VIP subnet is detected from every Node, as upstream
	nodes = l.membersOf(svc, nodes) // node-selector: the members
	rep := &syncReport{}
	if !mustExist {
		l.deleted.Delete(svc.UID) // the Service's own sync wants it (again)
	}
	// What was repaired is reported even when a later step fails: those writes were made.
	defer func() {
		l.c.events.Repaired(svc, rep.repairs)
		for _, s := range rep.stuck {
			l.c.event(svc, v1.EventTypeWarning, reasonStuck, s)
		}
		for _, r := range rep.recreated {
			l.c.event(svc, v1.EventTypeNormal, "ListenerRecreated", r+" (Octavia cannot change a listener's protocol; the port was briefly closed)")
		}
		for _, m := range rep.left {
			l.c.events.Advise(svc, reasonListenerLeft, m)
		}
	}()
	base, err := l.spec(l.GetLoadBalancerName(ctx, clusterName, svc), svc)
	if err != nil {
		l.c.event(svc, v1.EventTypeWarning, "InvalidLoadBalancerConfig", l.c.cfg.sanitize(err).Error())
		return nil, err
	}
	for _, w := range base.warnings {
		l.c.events.Advise(svc, "UnsupportedAnnotation", w) // once an hour per Service, not every resync
	}
	for _, a := range base.advice {
		l.c.events.Advise(svc, a.reason, a.msg)
	}
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	defer l.snaps.syncEnded(clusterName, svcKey(svc)) // runs after this sync's writes
	if rep.seen, err = l.snaps.get(ctx, cl, clusterName, svcKey(svc), l.c.cfg.LoadBalancer.ManageSecurityGroups); err != nil {
		// A bulk list refused (a policy, a fault): read object by object instead.
		klog.V(2).InfoS("No bulk read of the load balancers; reading each", "service", klog.KObj(svc), "err", l.c.cfg.sanitize(err))
	}
	r := l.newRun(cl, clusterName, svc, nodes, rep)
	specs, err := r.familySpecs(ctx, all, base)
	if err != nil {
		l.c.event(svc, v1.EventTypeWarning, "InvalidLoadBalancerConfig", l.c.cfg.sanitize(err).Error())
		return nil, err
	}
	// What the Service names is checked before anything is written.
	if err := l.checkTLSRef(ctx, cl, base); err != nil {
		l.c.event(svc, v1.EventTypeWarning, "InvalidLoadBalancerConfig", l.c.cfg.sanitize(err).Error())
		return nil, err
	}
	for _, spec := range specs {
		if err := l.checkRequestedFIP(ctx, cl, r.id, spec, rep.seen); err != nil {
			return nil, err
		}
	}
	var addrs []string
	var pending retries
	for i, spec := range specs {
		if i > 0 && rep.serving.only {
			specs = specs[:i] // the other families have no load balancer (singlefamily.go)
			break
		}
		addr, err := r.syncOne(ctx, spec, mustExist)
		switch {
		case err == nil:
			addrs = append(addrs, addr)
		case !pending.add(err):
			return nil, err
		}
	}
	if err := r.dropFamilies(ctx); err != nil {
		return nil, err
	}
	if l.c.cfg.LoadBalancer.ManageSecurityGroups {
		if err := r.syncSecurityGroup(ctx, specs); err != nil {
			l.c.event(svc, v1.EventTypeWarning, "SecurityGroupSyncFailed", l.c.cfg.sanitize(err).Error())
			return nil, err
		}
	}
	if err := pending.err(); err != nil {
		return nil, err
	}
	if len(addrs) > 0 {
		if err := l.c.annotator.annotate(ctx, svc, rep.lbID, addrs[0]); err != nil {
			l.c.events.Advise(svc, reasonAnnotationsNotWritten, l.c.cfg.sanitize(err).Error())
		}
	}
	return lbStatus(addrs, svc, l.statusOpts(svc)), nil
}

// dropFamilies deletes the load balancer of a family the Service had (its status holds an
// address of it) and no longer asks for: dual-stack turned off.
func (r *svcRun) dropFamilies(ctx context.Context) error {
	for _, a := range statusAddrs(r.svc) {
		f := v1.IPv4Protocol
		if a.Is6() {
			f = v1.IPv6Protocol
		}
		if slices.Contains(families(r.svc), f) {
			continue
		}
		if err := r.deleteOne(ctx, r.l.familyName(r.clusterName, r.svc, f), "", false); err != nil {
			return err
		}
	}
	return nil
}

// syncOne reconciles the load balancer of one family and returns its address.
func (r *svcRun) syncOne(ctx context.Context, spec *lbSpec, mustExist bool) (string, error) {
	l, cl, id, svc, rep := r.l, r.cl, r.id, r.svc, r.rep
	name := spec.name
	lb, adopted, err := r.locate(ctx, spec)
	if err != nil {
		return "", err
	}
	if spec.family == families(svc)[0] {
		rep.serving = servingOf(id, svc, lb, adopted)
	}
	if lb == nil {
		if _, gone := l.deleted.Load(svc.UID); mustExist && (gone || !hadAddress(svc, spec.family)) {
			return "", fmt.Errorf("load balancer %s %w", name, errNotCreatedYet)
		}
		if err := l.checkVIPPort(ctx, cl, id, spec); err != nil {
			return "", err
		}
		members, err := l.members(ctx, r.nodes, spec)
		if err != nil {
			return "", err
		}
		if err := l.checkFIPSubnetMatches(ctx, cl, id, spec); err != nil {
			return "", err
		}
		if err := l.checkFIPShare(ctx, cl, id, spec); err != nil {
			return "", err
		}
		if lb, err = r.create(ctx, spec, members); err != nil {
			return "", err
		}
		if hadAddress(svc, spec.family) && spec.existingID == "" {
			// The Service has an address of this family: its load balancer existed and was
			// deleted out of band. Its floating IP is given back to it below (ensureFIP).
			rep.repairs = append(rep.repairs, fmt.Sprintf("load balancer %s was deleted; created again", name))
		} else {
			rep.created = true
		}
	}
	switch st := lb.ProvisioningStatus; {
	case st == "ACTIVE":
	case st == "ERROR" && !adopted:
		return "", r.syncErrored(ctx, name, lb) // kept if it serves (lberror.go)
	case st == "ERROR":
		return "", fmt.Errorf("the load balancer named by annotation %s is in ERROR", annLoadBalancerID)
	default:
		return "", l.pending(lb.ID, fmt.Sprintf("load balancer %s is %s", name, st), rep)
	}
	for _, a := range notApplied(spec, lb, adopted) {
		l.c.events.Advise(svc, a.reason, a.msg) // once an hour, not every sync
	}
	if adopted && lbOfCluster(id.Cluster, lb) {
		if err := l.joinShared(ctx, cl, id, spec, lb); err != nil {
			return "", err
		}
	}
	if !adopted && (lbNeedsTags(id, lb) || lb.Name != name) {
		// Written before the ownership tags held the Service's UID (or by the upstream CCM,
		// perhaps under its early name: the current one is given with the tags).
		tags := withOwnerTags(lb.Tags, id)
		mark := rep.serving.mark && spec.family == families(svc)[0]
		if mark {
			tags = append(tags, tagSingleFamily)
			sort.Strings(tags)
		}
		if _, err := loadbalancers.Update(ctx, cl.lb, lb.ID, loadbalancers.UpdateOpts{Name: &name, Tags: &tags}).Extract(); err != nil {
			return "", l.conflict(err, "tagging load balancer "+name)
		}
		if mark {
			l.c.event(svc, v1.EventTypeNormal, "SingleFamilyLoadBalancer", singleFamilyMessage(svc, lb))
		}
		if err := l.waitActive(ctx, cl, lb.ID); err != nil {
			return "", err
		}
	}
	members, err := l.members(ctx, r.nodes, spec)
	if err != nil {
		return "", err
	}
	if rep.lbID == "" {
		rep.lbID = lb.ID // specs come first family first
	}
	if err := r.syncListeners(ctx, lb.ID, spec, members, adopted); err != nil {
		return "", err
	}
	addr, err := r.address(ctx, spec, lb, adopted)
	if err != nil {
		return "", err
	}
	// A Service that moved off a load balancer it used by load-balancer-id (repoint.go).
	if err := r.leaveFormer(ctx, spec, lb.ID, addr); err != nil {
		return "", err
	}
	return addr, nil
}

// address is the address lb serves the Service at, given the floating IP it needs.
func (r *svcRun) address(ctx context.Context, spec *lbSpec, lb *loadbalancers.LoadBalancer, adopted bool) (string, error) {
	switch {
	case adopted:
		return r.l.adoptedAddress(ctx, r.cl, spec, lb)
	case spec.internal || spec.family == v1.IPv6Protocol:
		return lb.VipAddress, nil
	case spec.internalUnclear:
		return r.l.keptExposure(ctx, r.cl, lb, r.rep)
	}
	return r.ensureFIP(ctx, spec, lb)
}

// locate finds the load balancer of spec's family for the Service, nil if it has none yet:
// the one its load-balancer-id names or records, else its own by name. adopted: it is not the
// Service's own (find).
func (r *svcRun) locate(ctx context.Context, spec *lbSpec) (*loadbalancers.LoadBalancer, bool, error) {
	l, cl, id := r.l, r.cl, r.id
	name := spec.name
	// load-balancer-id naming the Service's own load balancer (the upstream CCM writes it onto
	// every Service it manages) is found in the snapshot like one found by name.
	if s := r.rep.seen; s != nil && s.lbs[name] != nil && (spec.existingID == "" || s.lbs[name].ID == spec.existingID) && lbOwned(id, s.lbs[name]) == nil {
		l.remember(name, s.lbs[name].ID)
		return s.lbs[name], false, nil
	}
	lb, adopted, err := l.find(ctx, cl, id, name, or(spec.existingID, spec.recordedID))
	switch {
	case err != nil && (spec.recordedID == "" || !errors.Is(err, errNamedMissing)):
		return nil, false, err
	case err != nil:
		// The load balancer the Service's annotations record is gone (deleted out of band, or
		// in ERROR and deleted): its own is found by name, or made again as a repair.
		return l.find(ctx, cl, id, name, "")
	case adopted:
		return r.keepOwn(ctx, spec, lb) // its own, if it has one, stays it (repoint.go)
	}
	return lb, false, nil
}

// keptExposure is the address of lb, whose Service's internal annotation is unclear
// (internalUnclear): its floating IP if it has one, else its VIP. Nothing is written.
func (l *loadBalancers) keptExposure(ctx context.Context, cl *clients, lb *loadbalancers.LoadBalancer, rep *syncReport) (string, error) {
	var cur *floatingips.FloatingIP
	if rep.seen.has(lb.ID) {
		cur = rep.seen.fips[lb.VipPortID]
	}
	if cur == nil {
		var err error
		if cur, err = l.portFIP(ctx, cl, lb.VipPortID); err != nil {
			return "", err
		}
	}
	if cur != nil {
		return cur.FloatingIP, nil
	}
	return lb.VipAddress, nil
}

// hadAddress: the Service's status holds an address of family f.
func hadAddress(svc *v1.Service, f v1.IPFamily) bool {
	for _, a := range statusAddrs(svc) {
		if a.Is6() == (f == v1.IPv6Protocol) {
			return true
		}
	}
	return false
}

// create makes the load balancer with its listeners, pools, members and monitors in one call
// (Octavia's fully populated create) and returns it, usually PENDING_CREATE.
func (r *svcRun) create(ctx context.Context, spec *lbSpec, members []member) (*loadbalancers.LoadBalancer, error) {
	l, cl, id, svc := r.l, r.cl, r.id, r.svc
	if spec.existingID != "" {
		return nil, fmt.Errorf("annotation %s: load balancer %q %w", annLoadBalancerID, spec.existingID, errNamedMissing)
	}
	if spec.internalUnclear {
		return nil, fmt.Errorf("annotation %s: %q is not true or false (the upstream CCM reads it as false, earlier ccm versions as true): no load balancer is created until it says which", annInternal, svc.Annotations[annInternal])
	}
	opts := loadbalancers.CreateOpts{
		Name: spec.name, Description: legacyLBDescription(id), Provider: spec.provider,
		VipSubnetID: spec.subnetID, VipAddress: spec.vipAddress, Tags: ownerTags(id),
	}
	spec.createOnly.fill(&opts)
	if !l.c.cfg.serialCalls() {
		for _, ls := range spec.listeners {
			opts.Listeners = append(opts.Listeners, listenerCreateOpts(spec, ls, members, listenerDescription(id, ls)))
		}
	}
	lb, err := loadbalancers.Create(ctx, cl.lb, opts).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusBadRequest) && len(opts.Listeners) > 0 {
		// The Octavia provider cannot create this one populated (its provider, flavor or
		// protocols): create it bare; once it is ACTIVE, syncListeners adds the listeners one by
		// one. Only this load balancer: another Service's create may well be accepted.
		klog.InfoS("Fully populated create refused; creating the load balancer bare", "name", spec.name, "err", err)
		opts.Listeners = nil
		lb, err = loadbalancers.Create(ctx, cl.lb, opts).Extract()
	}
	if err != nil {
		return nil, fmt.Errorf("creating load balancer %s: %w", spec.name, err)
	}
	l.remember(spec.name, lb.ID)
	klog.InfoS("Created load balancer", "service", klog.KObj(svc), "name", spec.name, "id", lb.ID, "status", lb.ProvisioningStatus)
	// One look right away, no waiting: fast providers (OVN) may be ACTIVE already.
	if now, err := loadbalancers.Get(ctx, cl.lb, lb.ID).Extract(); err == nil {
		lb = now
	}
	return lb, nil
}

// waitActive polls a load balancer between the writes of one update; still pending after
// updateWait is a RetryError, never a blocked worker for minutes.
func (l *loadBalancers) waitActive(ctx context.Context, cl *clients, id string) error {
	deadline := time.Now().Add(updateWait)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		lb, err := loadbalancers.Get(ctx, cl.lb, id).Extract()
		if err != nil {
			return fmt.Errorf("getting load balancer %s: %w", id, err)
		}
		switch {
		case lb.ProvisioningStatus == "ACTIVE":
			return nil
		case !strings.HasPrefix(lb.ProvisioningStatus, "PENDING_"):
			return fmt.Errorf("load balancer %s went %s during an update", id, lb.ProvisioningStatus)
		case time.Now().After(deadline):
			return l.retry(fmt.Sprintf("load balancer %s is still %s", id, lb.ProvisioningStatus))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// conflict turns Octavia's 409 (the load balancer is busy) into a RetryError.
func (l *loadBalancers) conflict(err error, what string) error {
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		return l.retry(fmt.Sprintf("%s: load balancer busy (409), retrying", what))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer: the load balancers of both
// families. It returns nil only once Octavia no longer has them.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	defer func() { err = l.c.cfg.sanitize(err) }()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	// A snapshot read before this delete must not serve a Service of the same name later.
	defer l.snaps.syncEnded(clusterName, svcKey(svc))
	l.markDeleted(svc.UID)
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return err
	}
	keep := upstreamBool(svc, annKeepFloatingIP, false, nil) // the sync before warned of a bad value
	names := []string{l.GetLoadBalancerName(ctx, clusterName, svc)}
	for _, f := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		if f != families(svc)[0] {
			names = append(names, l.familyName(clusterName, svc, f))
		}
	}
	r := l.newRun(cl, clusterName, svc, nil, &syncReport{})
	if l.c.cfg.LoadBalancer.ManageSecurityGroups {
		if err := r.deleteSecurityGroup(ctx); err != nil {
			return err
		}
	}
	// The upstream CCM's group for the Service goes with it, whatever the setting (upstreamsg.go).
	if err := r.retireUpstreamSG(ctx, nil); err != nil {
		return err
	}
	var pending retries
	for i, name := range names {
		existing := ""
		if i == 0 {
			existing = svc.Annotations[annLoadBalancerID] // it names the first family's
		}
		if err := r.deleteOne(ctx, name, existing, keep); err != nil && !pending.add(err) {
			return err
		}
	}
	return pending.err()
}

// deleteOne deletes the Service's own load balancer of one family, after its floating IP if
// we allocated it and keep is false. From a load balancer the Service named by
// load-balancer-id and does not own, it removes only the listeners (with their pools) whose
// description proves they are the Service's; its VIP, floating IP and other listeners stay.
//
// A Service whose load-balancer-id names a load balancer that is not its own (or that is
// gone) may still have its own under its name (made before the annotation was set: see
// repoint.go): that one is deleted too, so that re-pointing never leaves one behind.
func (r *svcRun) deleteOne(ctx context.Context, name, existing string, keep bool) error {
	l, cl, id, svc := r.l, r.cl, r.id, r.svc
	lb, adopted, err := l.find(ctx, cl, id, name, existing)
	switch {
	case existing != "" && (errors.Is(err, errNamedMissing) || isNotOwned(err) && lb == nil):
		return r.deleteOne(ctx, name, "", keep)
	case isNotOwned(err) && lb != nil:
		adopted = true // refused (no longer allowed?): still take back what is provably ours
	case isNotOwned(err):
		klog.InfoS("Leaving a load balancer this Service does not own", "service", klog.KObj(svc), "name", name, "reason", err)
		return nil
	case err != nil || lb == nil:
		return err
	}
	if adopted {
		klog.InfoS("A load balancer the Service shares or was allowed to use: removing its listeners", "service", klog.KObj(svc), "id", lb.ID)
		if err := r.leaveNamed(ctx, name, lb); err != nil {
			return err
		}
		return r.deleteOne(ctx, name, "", keep) // by name: never adopted
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
		return l.retry(fmt.Sprintf("load balancer %s is %s", lb.Name, lb.ProvisioningStatus))
	}
	if others, err := l.usedByOthers(ctx, cl, id, name, lb); err != nil || others {
		if err != nil {
			return err
		}
		klog.InfoS("Other Services use the load balancer; removing only this Service's listeners", "service", klog.KObj(svc), "id", lb.ID)
		return r.leaveOwn(ctx, name, lb, keep)
	}
	if err := r.releaseFIP(ctx, lb.VipPortID, keep); err != nil {
		return err
	}
	err = loadbalancers.Delete(ctx, cl.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return l.conflict(err, "deleting load balancer "+lb.Name)
	}
	_, err = loadbalancers.Get(ctx, cl.lb, lb.ID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		l.forget(name)
		klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "name", name, "id", lb.ID)
		return nil
	}
	if err != nil {
		return err
	}
	return l.retry(fmt.Sprintf("load balancer %s is being deleted", lb.Name))
}

// leaveNamed takes the Service's listeners (and its name) back from lb, a load balancer it
// does not own and used by load-balancer-id.
func (r *svcRun) leaveNamed(ctx context.Context, name string, lb *loadbalancers.LoadBalancer) error {
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
		if n, err := r.l.ourListeners(ctx, r.cl, lb.ID, r.id); err != nil || n == 0 {
			return err
		}
		return r.l.retry(fmt.Sprintf("the load balancer named by annotation %s is %s", annLoadBalancerID, lb.ProvisioningStatus))
	}
	return r.leaveShared(ctx, name, lb)
}

func observe(op string, start time.Time, err *error) {
	e := *err
	var retry *api.RetryError
	if errors.As(e, &retry) {
		e = nil // waiting for Octavia is not a failure
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, e)
}
