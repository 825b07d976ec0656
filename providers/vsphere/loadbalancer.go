package vsphere

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/sourceranges"
	"github.com/ccm-project/ccm/common/svcevents"
)

// names: vSphere tag names may be long; the Octavia-style scheme stays readable. The cluster
// name is part of it, so two clusters' records of Services with the same namespace/name are
// two tags (vCenter keeps tag names unique in a category).
var names = lbname.Scheme{Prefix: "k8s_", Sep: "_", MaxLen: 255}

// Event reasons of this provider (the shared ones are in common/svcevents).
const (
	// reasonTakenOver: a Service that already served an address got its record with that address.
	reasonTakenOver = "LoadBalancerTakenOver"
	// reasonAddressChanged: the address in the Service's status could not be kept.
	reasonAddressChanged = "LoadBalancerAddressChanged"
)

// conflicted marks an address that two records claim: it is nobody's to take or keep.
const conflicted = "\x00two records"

// loadBalancers hands out bare-metal-style virtual IPs from the [Pool] sections, as the dummy
// provider does (the same ippool allocator). Announcing the address (ARP/BGP) is left to a
// speaker such as kube-vip or MetalLB in speaker-only mode, which reads the Service status.
//
// Every record of the category counts, whichever cluster wrote it (or a person): an address
// recorded anywhere is never handed out again, so clusters that share a vCenter and a pool
// range do not collide. Before handing out an address a Service does not hold yet, the records
// made since the last read are read (one list call).
type loadBalancers struct {
	pools []*ippool.Pool
	store *lbStore
	rec   *svcevents.Recorder

	mu      sync.Mutex
	loaded  bool
	records map[string]lbRecord   // by tag name, as last read or written
	byID    map[string]string     // tag ID -> tag name
	used    map[netip.Addr]string // address -> tag name of the record holding it, or conflicted
	// fresh: records a listing read and no sync compared yet, with when they were read. After a
	// restart one listing serves every Service's first sync; any other sync reads its record
	// again, so a change made in vCenter is seen by the next sync.
	fresh map[string]time.Time
	// applied is the fingerprint this process last found or wrote in each record: a record that
	// differs while the desired state is still that one was changed behind ccm's back.
	applied map[string]string
}

// freshFor bounds how long a listed record stands for vCenter's copy without being read again.
const freshFor = time.Minute

type lbDesired struct {
	Name  string
	IPs   []string
	Ports []string
	Nodes []string
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	l := &loadBalancers{records: map[string]lbRecord{}, byID: map[string]string{}, used: map[netip.Addr]string{},
		fresh: map[string]time.Time{}, applied: map[string]string{}, rec: svcevents.New(c.redact)}
	for _, n := range sortedKeys(c.cfg.Pool) {
		p, _ := ippool.New(n, c.cfg.Pool[n]) // validated by the factory
		l.pools = append(l.pools, p)
	}
	if len(c.conns) > 0 {
		l.store = &lbStore{c: c.conns[0], z: c.zones}
	}
	return l
}

// load reads every record once per process.
func (l *loadBalancers) load(ctx context.Context) error {
	if l.loaded {
		return nil
	}
	if err := l.refresh(ctx); err != nil {
		return err
	}
	l.loaded = true
	return nil
}

// refresh lists the category and reads the records it does not know yet; records gone from
// vCenter are forgotten.
func (l *loadBalancers) refresh(ctx context.Context) error {
	ids, err := l.store.list(ctx)
	if err != nil {
		return err
	}
	var unknown []string
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
		if _, ok := l.byID[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	for id, name := range l.byID {
		if !seen[id] {
			delete(l.byID, id)
			delete(l.records, name)
		}
	}
	recs, err := l.store.get(ctx, unknown)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, r := range recs {
		l.records[r.name] = r.lbRecord
		l.byID[r.tagID] = r.name
		l.fresh[r.name] = now
	}
	l.reindex()
	return nil
}

// reindex rebuilds the address index from the records.
func (l *loadBalancers) reindex() {
	clear(l.used)
	for name, r := range l.records {
		for _, a := range ippool.ParseAddrs(r.IPs) {
			if prev, taken := l.used[a]; taken && prev != name {
				l.used[a] = conflicted
			} else {
				l.used[a] = name
			}
		}
	}
	l.poolMetrics()
}

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return names.Name(clusterName, svc.Namespace, svc.Name)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer: only a record this Service owns.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return nil, false, eventSafe("reading", err)
	}
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	r, ok := l.records[name]
	if !ok || ownership.Check(ownership.Of(clusterName, svc), recordKind, name, r.tags()) != nil {
		return nil, false, nil
	}
	return ippool.Status(r.IPs, svc), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer: it reconciles the Service's record
// (desired record, the record as vCenter holds it now, their difference, then the write if
// any), so a record changed or deleted in vCenter is put back by the next sync.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	if err := checker.Values(svc); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg, ok := sourceranges.Unenforced(svc); ok { // no firewall here: say so, once an hour
		l.rec.Advise(svc, sourceranges.ReasonNotEnforced, msg)
	}
	if err := l.load(ctx); err != nil {
		return nil, eventSafe("reading", err)
	}
	id := ownership.Of(clusterName, svc)
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	have, exists, listed, err := l.current(ctx, name)
	if err != nil {
		return nil, eventSafe("reading", err)
	}
	if exists {
		if err := owns(id, name, have); err != nil {
			return nil, err
		}
	}
	ips, moved, err := l.addressesFor(name, svc, have)
	if (err != nil || !holds(have, ips)) && !listed {
		// A new address, or none to give: records other clusters (or people) made since the
		// last read decide which are free, and a tag of this name may have appeared.
		if err := l.refresh(ctx); err != nil {
			return nil, eventSafe("reading", err)
		}
		if have, exists = l.records[name]; exists {
			delete(l.fresh, name) // just read
			if err := owns(id, name, have); err != nil {
				return nil, err
			}
		}
		ips, moved, err = l.addressesFor(name, svc, have)
	}
	if err != nil {
		return nil, err
	}
	r, err := l.reconcile(ctx, svc, desired(id, name, svc, ips, nodes, have), have, exists)
	if err != nil {
		return nil, eventSafe("writing", err)
	}
	if len(moved) > 0 { // clients of the old address lose the Service: say why
		l.rec.Event(svc, v1.EventTypeWarning, reasonAddressChanged, fmt.Sprintf("the Service now has %v: %s", r.IPs, strings.Join(moved, "; ")))
	}
	return ippool.Status(r.IPs, svc), nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the members change; the
// record is compared with vCenter's as in EnsureLoadBalancer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return eventSafe("reading", err)
	}
	id := ownership.Of(clusterName, svc)
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	have, exists, _, err := l.current(ctx, name)
	if err != nil {
		return eventSafe("reading", err)
	}
	if !exists {
		return fmt.Errorf("load balancer for %s/%s does not exist yet", svc.Namespace, svc.Name)
	}
	if err := owns(id, name, have); err != nil {
		return err
	}
	if _, err := l.reconcile(ctx, svc, desired(id, name, svc, ippool.ParseAddrs(have.IPs), nodes, have), have, true); err != nil {
		return eventSafe("writing", err)
	}
	return nil
}

// owns is nil when record name is id's; else the refusal, with what an admin can do.
func owns(id ownership.Identity, name string, r lbRecord) error {
	err := ownership.Check(id, recordKind, name, r.tags())
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w; ccm never changes, reuses or deletes it for this Service (if it is stale, a vSphere admin can delete tag %q in category %s)",
		err, name, lbCategory)
}

// holds reports whether the record already holds exactly ips.
func holds(r lbRecord, ips []netip.Addr) bool {
	have := ippool.ParseAddrs(r.IPs)
	return len(have) == len(ips) && slices.Equal(have, ips)
}

// current returns record name as vCenter holds it now. A record a listing read less than
// freshFor ago and no sync compared yet is used as read; any other known record is read again
// (one call). listed reports that the category was listed meanwhile (the record was gone, and
// a tag of that name may have been made since). A record not known at all is left to the
// listing EnsureLoadBalancer makes before handing out an address.
func (l *loadBalancers) current(ctx context.Context, name string) (r lbRecord, exists, listed bool, err error) {
	r, ok := l.records[name]
	if !ok {
		return lbRecord{}, false, false, nil
	}
	if at, fresh := l.fresh[name]; fresh {
		delete(l.fresh, name)
		if time.Since(at) < freshFor {
			return r, true, false, nil
		}
	}
	got, found, err := l.store.getOne(ctx, r.tagID)
	if err != nil {
		return lbRecord{}, false, false, err
	}
	if found && got.name == name {
		l.records[name] = got.lbRecord
		if !slices.Equal(got.IPs, r.IPs) {
			l.reindex()
		}
		return got.lbRecord, true, false, nil
	}
	// Deleted (or renamed) in vCenter: forget it, and look for a tag of that name made since.
	delete(l.records, name)
	delete(l.byID, r.tagID)
	if err := l.refresh(ctx); err != nil {
		return lbRecord{}, false, true, err
	}
	r, ok = l.records[name]
	delete(l.fresh, name)
	return r, ok, true, nil
}

// desired is the record the Service should have: pure.
func desired(id ownership.Identity, name string, svc *v1.Service, ips []netip.Addr, nodes []*v1.Node, have lbRecord) lbRecord {
	want := lbRecord{Cluster: id.Cluster, Service: id.Service(), UID: id.UID, Ports: ippool.Ports(svc), tagID: have.tagID}
	if want.UID == "" {
		want.UID = have.UID
	}
	for _, a := range ips {
		want.IPs = append(want.IPs, a.String())
	}
	want.Fingerprint = fingerprint.Of(lbDesired{Name: name, IPs: want.IPs, Ports: want.Ports, Nodes: ippool.NodeNames(nodes)})
	return want
}

// reconcile writes the difference between want and have (as vCenter holds it): nothing when
// there is none, else one create or update of the tag. A repair of a change made out of band
// is recorded as a Warning Event on the Service.
func (l *loadBalancers) reconcile(ctx context.Context, svc *v1.Service, want, have lbRecord, exists bool) (lbRecord, error) {
	name := names.Name(want.Cluster, svc.Namespace, svc.Name)
	plan := planRecord(want, have, exists, l.applied[name], len(ippool.StatusAddrs(svc)) > 0)
	if !plan.write {
		l.applied[name] = have.Fingerprint
		return have, nil
	}
	r, err := l.store.put(ctx, name, want)
	if err != nil {
		return lbRecord{}, err
	}
	l.records[name] = r
	l.byID[r.tagID] = name
	l.applied[name] = r.Fingerprint
	l.reindex()
	if plan.drift {
		l.rec.Repaired(svc, plan.diffs)
	}
	if plan.adopt {
		l.rec.Event(svc, v1.EventTypeNormal, reasonTakenOver, fmt.Sprintf(
			"kept address %v, which the Service served before ccm held a record of it: recorded as tag %q in category %s", r.IPs, name, lbCategory))
	}
	return r, nil
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer. Only this Service's own
// record is deleted: a missing one, or one this Service does not own (another cluster's, a
// tag made by hand, an earlier Service's of the same name), means there is nothing of its to
// delete.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return eventSafe("reading", err)
	}
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	r, ok := l.records[name]
	if !ok {
		return nil
	}
	if err := ownership.Check(ownership.Of(clusterName, svc), recordKind, name, r.tags()); err != nil {
		klog.InfoS("Not deleting a load balancer record the Service does not own", "service", klog.KObj(svc), "record", name, "reason", err)
		return nil
	}
	if err := l.store.delete(ctx, r); err != nil {
		return eventSafe("deleting", err)
	}
	delete(l.records, name)
	delete(l.byID, r.tagID)
	delete(l.applied, name)
	delete(l.fresh, name)
	l.reindex()
	return nil
}

// addressesFor picks one address per IP family the Service asks for: the requested one
// (spec.loadBalancerIP), else the one in its status (what its clients use), else the one its
// record holds, else the first free one of a pool serving its namespace. name is the Service's own record
// (already checked to be its own); an address any other record holds is never picked.
func (l *loadBalancers) addressesFor(name string, svc *v1.Service, have lbRecord) ([]netip.Addr, []string, error) {
	pools := ippool.For(l.pools, svc.Namespace)
	if len(pools) == 0 {
		return nil, nil, fmt.Errorf("no address pool serves namespace %q: add a [Pool] with namespace = %s, or one without namespaces", svc.Namespace, svc.Namespace)
	}
	// An address two records claim is handed to nobody, but the Service whose own record holds
	// it keeps it: a duplicate made by hand or by a race must not move a live address.
	ours := ippool.ParseAddrs(have.IPs)
	free := func(a netip.Addr) bool {
		owner, taken := l.used[a]
		return !taken || owner == name || owner == conflicted && slices.Contains(ours, a)
	}
	inPools := func(a netip.Addr) bool {
		return slices.ContainsFunc(pools, func(p *ippool.Pool) bool { return p.Contains(a) })
	}
	usable := func(a netip.Addr, v6 bool) bool { return a.Is6() == v6 && free(a) && inPools(a) }
	families := svc.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	requested, err := requestedIP(svc.Spec.LoadBalancerIP)
	if err != nil {
		return nil, nil, err
	}
	if requested.IsValid() {
		switch {
		case !inPools(requested):
			return nil, nil, fmt.Errorf("spec.loadBalancerIP: %s is not in a pool serving namespace %q", requested, svc.Namespace)
		case !free(requested):
			// Never say whose: it may be another cluster's or another namespace's.
			return nil, nil, fmt.Errorf("spec.loadBalancerIP: %s is held by another load balancer", requested)
		}
	}
	var out []netip.Addr
	var moved []string // why an address of the Service's status was not kept
	for i, fam := range families {
		v6 := fam == v1.IPv6Protocol
		var got netip.Addr
		var candidates []netip.Addr
		if requested.IsValid() {
			candidates = append(candidates, requested)
		}
		// The status first: it is the address the Service's clients use, so a record whose
		// address was changed in vCenter gets the Service's back.
		candidates = append(append(candidates, ippool.StatusAddrs(svc)...), ippool.ParseAddrs(have.IPs)...)
		for _, a := range candidates {
			if usable(a, v6) {
				got = a
				break
			}
		}
		for _, p := range pools {
			if got.IsValid() {
				break
			}
			got, _ = p.Next(v6, func(a netip.Addr) bool { _, taken := l.used[a]; return taken })
		}
		for _, a := range ippool.StatusAddrs(svc) {
			switch {
			case a.Is6() != v6 || a == got || requested.IsValid(): // kept, or the user asked for another
			case !inPools(a):
				moved = append(moved, fmt.Sprintf("%s is in no pool serving namespace %q", a, svc.Namespace))
			case !free(a):
				moved = append(moved, fmt.Sprintf("%s is held by another load balancer record", a))
			}
		}
		if !got.IsValid() {
			if i > 0 && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack {
				continue
			}
			return nil, nil, fmt.Errorf("address pool exhausted: no free %s address in the pools serving namespace %q", fam, svc.Namespace)
		}
		out = append(out, got)
	}
	return out, moved, nil
}

// requestedIP parses spec.loadBalancerIP ("" asks for none).
func requestedIP(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("spec.loadBalancerIP: %q is not an IP address", s)
	}
	return a.Unmap(), nil
}

// eventSafe is what a Service's Events may show of a vCenter failure: errors of the LoadBalancer
// methods become Warning Events that the Service's tenants read, and a vCenter error can carry
// the vCenter user name (a refused login), the name of the credentials Secret or a response
// body. The whole error goes to the ccm log; the Event says what failed and where to look.
func eventSafe(op string, err error) error {
	if err == nil || errors.Is(err, ownership.ErrNotOwned) {
		return err
	}
	klog.ErrorS(err, "vCenter call for a load balancer record failed", "op", op)
	cause := "the vCenter call failed"
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		cause = "the vCenter call timed out"
	case isLoginErr(err):
		cause = "ccm cannot log in to vCenter"
	}
	return &safeError{msg: fmt.Sprintf("%s the load balancer record in vCenter: %s (the cloud-controller-manager's log has the details)", opText(op), cause), err: err}
}

func opText(op string) string {
	switch op {
	case "reading":
		return "reading"
	case "deleting":
		return "deleting"
	}
	return "writing"
}

// safeError shows msg; errors.Is/As still reach the vCenter error.
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

func isLoginErr(err error) bool {
	var le *loginError
	return errors.As(err, &le)
}

func (l *loadBalancers) poolMetrics() { ippool.ReportUsage(ProviderName, l.pools, l.used) }

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}
