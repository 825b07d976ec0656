package vsphere

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
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
	reasonAddressChanged = poollb.ReasonAddressChanged
)

// loadBalancers hands out bare-metal-style virtual IPs from the [Pool] sections, as the dummy
// provider does (the same decision, common/poollb). Announcing the address (ARP/BGP) is left to a
// speaker such as kube-vip or MetalLB in speaker-only mode, which reads the Service status.
//
// Every record of the category counts, whichever cluster wrote it (or a person): an address
// recorded anywhere is never handed out again, so clusters that share a vCenter and a pool
// range do not collide. Before handing out an address a Service does not hold yet, the records
// made since the last read are read (one list call).
type loadBalancers struct {
	// pools (parsed from poolCfg) change when the cloud config does (Reload); under mu.
	pools   []*ippool.Pool
	poolCfg map[string]*PoolConfig
	store   *lbStore
	rec     *svcevents.Recorder
	client  kubernetes.Interface // set by Initialize: the Services' statuses are learned through it

	mu      sync.Mutex
	loaded  bool
	records map[string]lbRecord // by tag name, as last read or written
	byID    map[string]string   // tag ID -> tag name
	held    poollb.Holders      // address -> the tag names of the records holding it, and learned ones
	learned poollb.Holders      // addresses in Services' statuses, under their record names
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
	// SharingKey is in the fingerprint so that turning sharing on or off is a change; a record
	// without one keeps the fingerprint it had before sharing existed.
	SharingKey string `json:",omitempty"`
	// The backends of a record that shares (omitted otherwise, so other fingerprints hold).
	Local bool   `json:",omitempty"`
	Pods  string `json:",omitempty"`
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	l := &loadBalancers{records: map[string]lbRecord{}, byID: map[string]string{}, held: poollb.Holders{}, learned: poollb.Holders{},
		fresh: map[string]time.Time{}, applied: map[string]string{}, rec: svcevents.New(c.redact)}
	l.pools, _ = ippool.All(c.cfg.Pool) // validated by the factory
	l.poolCfg = c.cfg.Pool
	if len(c.conns) > 0 {
		l.store = &lbStore{c: c.conns[0], z: c.zones}
	}
	return l
}

// load reads every record once per process, and learns which addresses Services already hold
// from their status in the API server, so that a Service served by another ccm or load
// balancer implementation never sees its address handed to another Service.
func (l *loadBalancers) load(ctx context.Context, clusterName string) error {
	if l.loaded {
		return nil
	}
	if l.client != nil {
		list, err := l.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("learning the addresses Services already hold: %w", err)
		}
		poollb.Learn(l.learned, list.Items, func(svc *v1.Service) string { return names.Name(clusterName, svc.Namespace, svc.Name) })
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

// reindex rebuilds the address index from the records, and the learned addresses no record
// holds.
func (l *loadBalancers) reindex() {
	clear(l.held)
	for name, r := range l.records {
		for _, a := range poollb.CanonicalAddrs(r.IPs) {
			l.held.Claim(a, name)
		}
	}
	for a, ks := range l.learned {
		if len(l.held[a]) == 0 {
			for _, k := range ks {
				l.held.Claim(a, k)
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
	if err := l.load(ctx, clusterName); err != nil {
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
	if err := l.load(ctx, clusterName); err != nil {
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
	c, err := l.addressesFor(id, name, svc, have)
	if (err != nil || !holds(have, c.Addrs)) && !listed {
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
		c, err = l.addressesFor(id, name, svc, have)
	}
	if err != nil {
		return nil, err
	}
	r, err := l.reconcile(ctx, svc, desired(id, name, svc, c.Addrs, c.SharingKey, nodes, have), have, exists)
	if err != nil {
		return nil, eventSafe("writing", err)
	}
	c.Record(l.rec, svc) // clients of a lost address lose the Service: say why
	if err := poollb.AnnotateForSpeaker(ctx, l.client, svc, r.IPs); err != nil {
		return nil, err
	}
	return ippool.Status(r.IPs, svc), nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the members change; the
// record is compared with vCenter's as in EnsureLoadBalancer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx, clusterName); err != nil {
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
	if _, err := l.reconcile(ctx, svc, desired(id, name, svc, poollb.CanonicalAddrs(have.IPs), have.SharingKey, nodes, have), have, true); err != nil {
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
	return slices.Equal(poollb.CanonicalAddrs(r.IPs), ips)
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
func desired(id ownership.Identity, name string, svc *v1.Service, ips []netip.Addr, shareKey string, nodes []*v1.Node, have lbRecord) lbRecord {
	want := lbRecord{Cluster: id.Cluster, Service: id.Service(), UID: id.UID, Ports: ippool.Ports(svc), SharingKey: shareKey, tagID: have.tagID}
	if want.UID == "" {
		want.UID = have.UID
	}
	for _, a := range ips {
		want.IPs = append(want.IPs, a.String())
	}
	if shareKey != "" {
		b := poollb.BackendsOf(svc)
		want.Local, want.Pods = b.Local, b.Pods
	}
	want.Fingerprint = fingerprint.Of(lbDesired{Name: name, IPs: want.IPs, Ports: want.Ports, Nodes: ippool.NodeNames(nodes), SharingKey: shareKey, Local: want.Local, Pods: want.Pods})
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
	l.learned.ReleaseAll(name) // the record holds the Service's addresses now
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
	if err := l.load(ctx, clusterName); err != nil {
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
	l.learned.ReleaseAll(name)
	l.reindex()
	return nil
}

// addressesFor picks the Service's addresses (poollb.View.Choose) from the records of the
// category (every cluster's, and those made by hand: an address recorded anywhere is never
// handed to a Service that did not opt into sharing it) and the addresses learned from
// Services' statuses. name is the Service's own record (already checked to be its own).
func (l *loadBalancers) addressesFor(id ownership.Identity, name string, svc *v1.Service, have lbRecord) (poollb.Choice, error) {
	v := poollb.View{Names: poolNames, Pools: l.pools, Held: l.held, Holder: l.holderFor(id)}
	return v.Choose(poollb.Request{Service: svc, Key: name, Own: poollb.CanonicalAddrs(have.IPs)})
}

// holderFor describes a tag name for a Service of id: a record ccm made for a Service of
// id's cluster and namespace is in scope; one of another cluster, or unreadable, is not; an
// address learned from a Service's status is held under the name ccm computes for it.
func (l *loadBalancers) holderFor(id ownership.Identity) func(k string) poollb.Holder {
	return func(k string) poollb.Holder {
		if r, ok := l.records[k]; ok {
			owner, owned := ownership.Owner(id.Cluster, r.tags())
			return poollb.Holder{Record: true, InScope: owned && owner.Namespace == id.Namespace && names.Name(id.Cluster, owner.Namespace, owner.Name) == k,
				Service: owner.Service(), SharingKey: r.SharingKey, Ports: r.Ports, Backends: poollb.Backends{Local: r.Local, Pods: r.Pods}}
		}
		ns, name, ok := names.Parse(id.Cluster, k)
		return poollb.Holder{InScope: ok && ns == id.Namespace, Service: ns + "/" + name}
	}
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

func (l *loadBalancers) poolMetrics() { ippool.ReportUsage(ProviderName, l.pools, l.held) }

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}
