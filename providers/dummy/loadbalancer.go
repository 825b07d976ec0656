package dummy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/keylock"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// names follows the Octavia-style scheme: readable, and reversible to namespace/name.
var names = lbname.Scheme{Prefix: "dummy_", Sep: "_", MaxLen: 255}

// loadBalancers is the dummy cloud's load balancer service: it hands out addresses from the
// configured pools and keeps one Record per Service in its Store.
type loadBalancers struct {
	c *Cloud
	// pools (parsed from poolCfg) change when the cloud config does (Reload); under mu.
	pools   []*ippool.Pool
	poolCfg map[string]*PoolConfig
	store   Store
	keys    keylock.Locks // one operation per Service at a time (see keylock)

	mu      sync.Mutex
	loaded  bool
	records recordSet      // by record key (the load balancer name), as in the store
	owner   poollb.Holders // address -> the record keys of the Services using it
	// seen is the shared store's change count as known: when last read, plus our own writes
	// since (revisioned). inflight counts our store writes under way: a read meanwhile may or
	// may not count them, so it leaves seen unknown (-1) and the next operation reads again.
	seen     int
	inflight int
	// fresh: records the first load read and no sync compared yet, with when they were read.
	fresh map[string]time.Time
	// applied is the fingerprint this process last found or wrote in each record: a record that
	// differs while the desired state is still that one was changed by another writer.
	applied map[string]string
}

// freshFor bounds how long a loaded record stands for the store's copy without being read again.
const freshFor = time.Minute

// desiredState is what a Record's fingerprint covers.
type desiredState struct {
	Name  string
	IPs   []string
	Ports []string
	Nodes []string
	// SharingKey is in the fingerprint so that turning sharing on or off is a change.
	SharingKey string
	// The backends of a record that shares (omitted otherwise, so other fingerprints hold).
	Local bool   `json:",omitempty"`
	Pods  string `json:",omitempty"`
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	lb := &loadBalancers{c: c, records: newRecordSet(), owner: poollb.Holders{}, fresh: map[string]time.Time{}, applied: map[string]string{}}
	lb.pools, _ = ippool.All(c.cfg.Pool) // validated by the factory
	lb.poolCfg = c.cfg.Pool
	return lb
}

// recordKey is the store key of the Service's record: its load balancer name, which holds the
// cluster, so that clusters sharing one store (or one address plan) never meet on a key.
func recordKey(clusterName string, svc *v1.Service) string {
	return names.Name(clusterName, svc.Namespace, svc.Name)
}

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return recordKey(clusterName, svc)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer. A record under the Service's name that
// is not provably its own (made by hand, or for an earlier Service of the same name) is not its
// load balancer. The library asks before a delete and skips the delete on "does not exist", so
// the answer comes from the store's copy (one read), not from what this process remembers.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	k := recordKey(clusterName, svc)
	defer l.keys.Lock(k)()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.loadCurrent(ctx, clusterName, k, false); err != nil {
		return nil, false, err
	}
	rec, ok := l.records.get(k)
	if !ok || !ownership.Is(ownership.Of(clusterName, svc), rec.Tags) {
		return nil, false, nil
	}
	return ippool.Status(rec.IPs, svc), true, nil
}

// mine returns the Service's record, if any, and refuses one that is not provably the
// Service's: made outside ccm, of another Service or of an earlier Service of the same name.
// Callers hold l.mu.
func (l *loadBalancers) mine(id ownership.Identity, k string) (Record, bool, error) {
	r, ok := l.records.get(k)
	if !ok {
		return Record{}, false, nil
	}
	if err := ownership.Check(id, "load balancer", k, r.Tags); err != nil {
		return Record{}, true, err
	}
	return r, true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer. It reconciles the Service's record:
// the desired record, the record as the store holds it now, their difference, then the write if
// any. A resync with nothing changed writes nothing; a record another writer changed or
// deleted is put back (with a Warning Event), keeping the address the Service has.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	id, k := ownership.Of(clusterName, svc), recordKey(clusterName, svc)
	if err := checker.Values(svc); err != nil {
		return nil, err
	}
	if msg, ok := sourceranges.Unenforced(svc); ok { // no firewall here: say so, once an hour
		l.c.rec.Advise(svc, sourceranges.ReasonNotEnforced, msg)
	}
	defer l.keys.Lock(k)()
	var want Record
	var choice poollb.Choice
	err = l.optimistically(func(peek bool) error {
		l.mu.Lock()
		v, err := l.loadCurrent(ctx, clusterName, k, peek)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		have, exists, err := l.mine(id, k)
		if err == nil {
			if choice, err = l.addressesFor(svc, id, k, have); err == nil {
				want = l.record(id, svc, choice.Addrs, choice.SharingKey, ippool.NodeNames(nodes))
				return l.reconcile(ctx, svc, id, k, want, have, exists, v)
			}
		}
		l.mu.Unlock()
		return confirmed(err, v)
	})
	if err != nil {
		return nil, err
	}
	choice.Record(l.c.rec, svc) // once the sync stands: clients of a lost address lose the Service
	if err := poollb.AnnotateForSpeaker(ctx, l.c.client, svc, want.IPs); err != nil {
		return nil, err
	}
	return ippool.Status(want.IPs, svc), nil
}

// confirmed is err of a sync before its write, or errConfirm when the sync was judged on the
// store's copy (v set): the error stands only once the store's own record says so.
func confirmed(err error, v *version) error {
	if v != nil {
		return errConfirm
	}
	return err
}

// optimistically runs one sync of a Service (the caller holds its key lock) first against the
// store's copy of its record (peek), then, if the store's record turned out to differ from
// that copy (errStale) or the copy showed nothing to write (errConfirm), against the record
// read from the store. A sync that writes thus costs one conditional write and no read; one
// with nothing to write still compares with the store itself, as a sync after another writer's
// change must.
func (l *loadBalancers) optimistically(sync func(peek bool) error) error {
	if err := sync(true); !errors.Is(err, errStale) && !errors.Is(err, errConfirm) {
		return err
	}
	return sync(false)
}

// errConfirm: a sync compared with the store's copy found nothing to write, or an error before
// writing; it compares with the store's own record before saying so.
var errConfirm = errors.New("nothing to write according to the store's copy")

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the backends change, and only
// on the Service's own record, compared with the store's as in EnsureLoadBalancer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	id, k := ownership.Of(clusterName, svc), recordKey(clusterName, svc)
	defer l.keys.Lock(k)()
	return l.optimistically(func(peek bool) error {
		l.mu.Lock()
		v, err := l.loadCurrent(ctx, clusterName, k, peek)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		have, ok, err := l.mine(id, k)
		switch {
		case err != nil:
			l.mu.Unlock()
			return confirmed(err, v)
		case !ok:
			l.mu.Unlock()
			return confirmed(fmt.Errorf("load balancer %s does not exist yet", k), v)
		}
		// The sharing key stays the one the addresses were picked with: a change of it is an
		// EnsureLoadBalancer's to check.
		want := l.record(id, svc, poollb.CanonicalAddrs(have.IPs), have.SharingKey, ippool.NodeNames(nodes))
		return l.reconcile(ctx, svc, id, k, want, have, true, v)
	})
}

// reconcile writes the difference between want and have (the store's record): nothing when
// there is none, else one put of the record. v, when set, is the version of the store's copy
// have came from: the put is then conditional on it, and no difference only says errConfirm.
// Called with l.mu held; it releases it.
func (l *loadBalancers) reconcile(ctx context.Context, svc *v1.Service, id ownership.Identity, k string, want, have Record, exists bool, v *version) error {
	plan := planRecord(id, want, have, exists, l.applied[k], len(ippool.StatusAddrs(svc)) > 0)
	if !plan.write {
		l.mu.Unlock()
		if v != nil {
			return errConfirm
		}
		l.mu.Lock()
		l.applied[k] = have.Fingerprint
		l.mu.Unlock()
		return nil
	}
	if err := l.put(ctx, k, want, v); err != nil {
		return err
	}
	if plan.drift {
		l.c.rec.Repaired(svc, plan.diffs)
	}
	return nil
}

// loadCurrent loads the cluster's records (the first time) and reads k's record as the store
// holds it (see current). The caller holds l.mu.
func (l *loadBalancers) loadCurrent(ctx context.Context, clusterName, k string, peek bool) (*version, error) {
	if err := l.load(ctx, clusterName); err != nil {
		return nil, err
	}
	return l.current(ctx, k, peek)
}

// current brings the Service's record k in l.records up to date with the store. A record the
// first load read less than freshFor ago and no sync compared yet is used as read (after a
// restart one load serves every Service's first sync). With peek, a store that keeps a copy
// of what it read and wrote (optimisticStore) gives the record from that copy, with its
// version: a write the sync then makes is conditional on it (see optimistically). Otherwise
// the record is read again (one call), so a change another writer made is seen by the next
// sync. Called with l.mu held (released during the read); the caller holds k's key lock.
func (l *loadBalancers) current(ctx context.Context, k string, peek bool) (*version, error) {
	if at, fresh := l.fresh[k]; fresh {
		delete(l.fresh, k)
		if time.Since(at) < freshFor {
			return nil, nil
		}
	}
	if st, ok := l.store.(optimisticStore); ok && peek {
		// The copy stands for the store only where it agrees with what this process knows:
		// a record it lacks or holds otherwise (another writer's change, a copy older than a
		// read, or a record stored in other words than this version writes) is read from the
		// store before anything, addresses above all, changes.
		v, ok := st.cached(k)
		have, known := l.records.get(k)
		if ok && v.exists == known && (!known || versionOfRecord(have) == v) {
			return &v, nil
		}
	}
	l.mu.Unlock()
	got, found, err := l.readRecord(ctx, k)
	l.mu.Lock()
	if err != nil {
		return nil, err
	}
	have, known := l.records.get(k)
	switch {
	case found && known && equality.Semantic.DeepEqual(have, got):
	case found:
		l.forget(k)
		l.add(k, got)
		l.updatePoolMetrics()
	case known:
		// Deleted by another writer: its addresses are free again, unless the Service's status
		// (re-adopted by addressesFor) or another record holds them.
		l.forget(k)
		l.updatePoolMetrics()
	}
	return nil, nil
}

// optimisticStore is a store that keeps a copy of what it last read and wrote and can write a
// record on the condition that the store still holds what a sync compared with
// (configMapStore).
type optimisticStore interface {
	// cached is the version of key's record in the copy; ok is false without a copy.
	cached(key string) (v version, ok bool)
	// putIf writes r if key's record is still v (nil: in any case); else errStale.
	putIf(ctx context.Context, key string, r Record, v *version) error
}

// recordReader is a store that reads one record with one call.
type recordReader interface {
	Get(ctx context.Context, key string) (Record, bool, error)
}

// readRecord reads record k from the store: one Get, or a whole Load for a store without one.
func (l *loadBalancers) readRecord(ctx context.Context, k string) (Record, bool, error) {
	if rr, ok := l.store.(recordReader); ok {
		return rr.Get(ctx, k)
	}
	recs, err := l.store.Load(ctx)
	if err != nil {
		return Record{}, false, err
	}
	r, ok := recs[k]
	return r, ok, nil
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer; deleting a missing one is fine.
// A record under the Service's name that is not provably its own is left alone: there is
// nothing of this Service's to delete. Existence and ownership are decided on the store's copy
// (one read), so a record this process did not know of is not left behind. The addresses are
// released only once the store has forgotten the record.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	id, k := ownership.Of(clusterName, svc), recordKey(clusterName, svc)
	defer l.keys.Lock(k)()
	l.mu.Lock()
	if _, err := l.loadCurrent(ctx, clusterName, k, false); err != nil {
		l.mu.Unlock()
		return err
	}
	_, exists, notMine := l.mine(id, k)
	if exists && notMine == nil {
		l.inflight++
	}
	l.mu.Unlock()
	if notMine != nil {
		klog.InfoS("Not deleting a load balancer record that is not the Service's", "service", klog.KObj(svc), "record", k, "reason", notMine)
		l.mu.Lock()
		defer l.mu.Unlock()
		// Give up only what the Service held itself (adopted from its status), not the
		// foreign record's addresses.
		kr, _ := l.records.get(k)
		foreign := poollb.CanonicalAddrs(kr.IPs)
		for _, a := range l.owner.Of(k) {
			if !slices.Contains(foreign, a) {
				l.owner.Release(a, k)
			}
		}
		l.updatePoolMetrics()
		return nil
	}
	if exists {
		err = l.store.Delete(ctx, k)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if exists {
		l.inflight--
		if err != nil {
			return err
		}
		l.records.delete(k)
		delete(l.applied, k)
		delete(l.fresh, k)
		l.seen++ // our own write: no need to re-read a shared store for it
	}
	l.owner.ReleaseAll(k)
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) record(id ownership.Identity, svc *v1.Service, ips []netip.Addr, shareKey string, nodes []string) Record {
	r := Record{Name: names.Name(id.Cluster, id.Namespace, id.Name), Tags: id.Tags()}
	for _, ip := range ips {
		r.IPs = append(r.IPs, ip.String())
	}
	r.Ports, r.SharingKey = ippool.Ports(svc), shareKey
	if shareKey != "" {
		b := poollb.BackendsOf(svc)
		r.Local, r.Pods = b.Local, b.Pods
	}
	r.Fingerprint = fingerprint.Of(desiredState{Name: r.Name, IPs: r.IPs, Ports: r.Ports, Nodes: nodes, SharingKey: r.SharingKey, Local: r.Local, Pods: r.Pods})
	return r
}

// put claims r's addresses, writes r to the store and records it. It is called with l.mu
// held and releases it during the store write, so that writes for different Services can be
// batched by the store (the caller holds the Service's key lock, so no other operation on it
// runs meanwhile).
// While the write is in flight, r is already the record others see (sharing decisions read
// it); if the write fails, the previous record and addresses come back.
func (l *loadBalancers) put(ctx context.Context, k string, r Record, v *version) error {
	old, hadOld := l.records.get(k)
	oldIPs, newIPs := l.owner.Of(k), poollb.CanonicalAddrs(r.IPs) // held now: recorded, or adopted from status
	for _, ip := range newIPs {
		l.owner.Claim(ip, k)
	}
	l.records.set(k, r)
	l.inflight++
	l.mu.Unlock()
	var err error
	if v != nil {
		err = l.store.(optimisticStore).putIf(ctx, k, r, v)
	} else {
		err = l.store.Put(ctx, k, r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	drop := oldIPs // on success, the addresses the Service no longer uses
	if err != nil {
		drop = newIPs // on failure, the ones it did not have
		if hadOld {
			l.records.set(k, old)
		} else {
			l.records.delete(k)
		}
	}
	for _, ip := range drop {
		if !slices.Contains(oldIPs, ip) || !slices.Contains(newIPs, ip) {
			l.owner.Release(ip, k)
		}
	}
	if err != nil {
		return err
	}
	l.seen++ // our own write: no need to re-read a shared store for it
	l.applied[k] = r.Fingerprint
	l.updatePoolMetrics()
	return nil
}

// revisioned is a store that other writers share and that counts its changes: the MemStore,
// which the tests use to play two clusters in one cloud. When its count moved, the records of
// other writers are read again before an address is picked. The ConfigMap store is written by
// this cluster's leader only and is not re-read.
type revisioned interface{ Writes() int }

// load reads the store once, and learns which addresses Services already hold from their
// status in the API server, so that a Service created by another ccm (or before the store
// existed) never sees its address handed to another Service. With a shared store it then
// re-reads the records of other writers when the store changed. Callers hold l.mu.
func (l *loadBalancers) load(ctx context.Context, clusterName string) error {
	if l.loaded {
		return l.sync(ctx, clusterName)
	}
	if l.store == nil {
		l.store = l.c.newStore(clusterName)
	}
	if rs, ok := l.store.(revisioned); ok {
		l.seen = rs.Writes()
	}
	records, err := l.store.Load(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	for k, r := range records {
		l.add(k, r)
		l.fresh[k] = now
	}
	if l.c.client != nil {
		list, err := l.c.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("learning the addresses Services already hold: %w", err)
		}
		poollb.Learn(l.owner, list.Items, func(svc *v1.Service) string { return recordKey(clusterName, svc) })
	}
	l.loaded = true
	klog.InfoS("Loaded load balancer records", "records", l.records.len(), "addressesInUse", len(l.owner))
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) add(k string, r Record) {
	l.records.set(k, r)
	for _, ip := range poollb.CanonicalAddrs(r.IPs) {
		l.owner.Claim(ip, k)
	}
}

func (l *loadBalancers) forget(k string) {
	l.records.delete(k)
	l.owner.ReleaseAll(k)
}

// sync brings in the changes other writers made to a shared store: records that appeared, and
// records not of this cluster that changed or went away. This cluster's own records are
// written by this process only (some may be in flight): they are only added, never replaced.
func (l *loadBalancers) sync(ctx context.Context, clusterName string) error {
	rs, ok := l.store.(revisioned)
	if !ok || rs.Writes() == l.seen {
		return nil
	}
	l.seen = rs.Writes()
	if l.inflight > 0 {
		l.seen = -1
	}
	records, err := l.store.Load(ctx)
	if err != nil {
		return err
	}
	ours := func(r Record) bool { _, ok := ownership.Owner(clusterName, r.Tags); return ok }
	for k, r := range records {
		have, known := l.records.get(k)
		switch {
		case !known:
			l.add(k, r)
		case !ours(have) && !equality.Semantic.DeepEqual(have, r):
			l.forget(k)
			l.add(k, r)
		}
	}
	for k, kr := range l.records.m {
		if _, still := records[k]; !still && !ours(kr.record(k)) {
			l.forget(k)
		}
	}
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) updatePoolMetrics() { ippool.ReportUsage(ProviderName, l.pools, l.owner) }

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}
