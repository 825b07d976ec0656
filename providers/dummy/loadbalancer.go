package dummy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/keylock"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
)

// names follows the Octavia-style scheme: readable, and reversible to namespace/name.
var names = lbname.Scheme{Prefix: "dummy_", Sep: "_", MaxLen: 255}

// loadBalancers is the dummy cloud's load balancer service: it hands out addresses from the
// configured pools and keeps one Record per Service in its Store.
type loadBalancers struct {
	c     *Cloud
	pools []*ippool.Pool
	store Store
	keys  keylock.Locks // one operation per Service at a time (see keylock)

	mu      sync.Mutex
	loaded  bool
	records map[string]Record // by namespace/name, as in the store
	owner   holders           // address -> the Services using it
	writes  int
}

// desiredState is what a Record's fingerprint covers.
type desiredState struct {
	Name  string
	IPs   []string
	Ports []string
	Nodes []string
	// SharingKey is in the fingerprint so that turning sharing on or off is a change.
	SharingKey string
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	lb := &loadBalancers{c: c, records: map[string]Record{}, owner: holders{}}
	poolNames := make([]string, 0, len(c.cfg.Pool))
	for n := range c.cfg.Pool {
		poolNames = append(poolNames, n)
	}
	sort.Strings(poolNames)
	for _, n := range poolNames {
		p, _ := ippool.New(n, c.cfg.Pool[n]) // validated by the factory
		lb.pools = append(lb.pools, p)
	}
	return lb
}

func key(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return names.Name(clusterName, svc.Namespace, svc.Name)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return nil, false, err
	}
	rec, ok := l.records[key(svc)]
	if !ok {
		return nil, false, nil
	}
	return ippool.Status(rec.IPs, svc), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer. It writes only when the desired
// state's fingerprint differs from the one stored on the record: a restart, a failover or a
// resync with nothing changed costs no write.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	defer l.keys.Lock(key(svc))()
	l.mu.Lock()
	if err := l.load(ctx); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	k := key(svc)
	have, exists := l.records[k]
	ips, err := l.addressesFor(svc, have)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	want := l.record(clusterName, svc, ips, ippool.NodeNames(nodes))
	if exists && !fingerprint.Changed(have.Fingerprint, want.Fingerprint) {
		l.mu.Unlock()
		return ippool.Status(have.IPs, svc), nil
	}
	if err := l.put(ctx, k, want); err != nil {
		return nil, err
	}
	return ippool.Status(want.IPs, svc), nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the backends change.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	defer l.keys.Lock(key(svc))()
	l.mu.Lock()
	if err := l.load(ctx); err != nil {
		l.mu.Unlock()
		return err
	}
	k := key(svc)
	have, ok := l.records[k]
	if !ok {
		l.mu.Unlock()
		return fmt.Errorf("load balancer for %s does not exist yet", k)
	}
	want := l.record(clusterName, svc, ippool.ParseAddrs(have.IPs), ippool.NodeNames(nodes))
	if !fingerprint.Changed(have.Fingerprint, want.Fingerprint) {
		l.mu.Unlock()
		return nil
	}
	return l.put(ctx, k, want)
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer; deleting a missing one is fine.
// The addresses are released only once the store has forgotten the record.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	defer l.keys.Lock(key(svc))()
	l.mu.Lock()
	if err := l.load(ctx); err != nil {
		l.mu.Unlock()
		return err
	}
	k := key(svc)
	_, exists := l.records[k]
	l.mu.Unlock()
	if exists {
		if err := l.store.Delete(ctx, k); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if exists {
		delete(l.records, k)
	}
	l.owner.releaseAll(k)
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) record(clusterName string, svc *v1.Service, ips []netip.Addr, nodes []string) Record {
	r := Record{Name: names.Name(clusterName, svc.Namespace, svc.Name), Tags: lbname.Tags(clusterName, svc.Namespace, svc.Name)}
	for _, ip := range ips {
		r.IPs = append(r.IPs, ip.String())
	}
	r.Ports, r.SharingKey = ippool.Ports(svc), svc.Annotations[AnnotationSharedIP]
	r.Fingerprint = fingerprint.Of(desiredState{Name: r.Name, IPs: r.IPs, Ports: r.Ports, Nodes: nodes, SharingKey: r.SharingKey})
	return r
}

// put claims r's addresses, writes r to the store and records it. It is called with l.mu
// held and releases it during the store write, so that writes for different Services can be
// batched by the store (the caller holds the Service's key lock, so no other operation on it
// runs meanwhile).
// While the write is in flight, r is already the record others see (sharing decisions read
// it); if the write fails, the previous record and addresses come back.
func (l *loadBalancers) put(ctx context.Context, k string, r Record) error {
	old, hadOld := l.records[k]
	oldIPs, newIPs := l.owner.of(k), ippool.ParseAddrs(r.IPs) // held now: recorded, or adopted from status
	for _, ip := range newIPs {
		l.owner.claim(ip, k)
	}
	l.records[k] = r
	l.mu.Unlock()
	err := l.store.Put(ctx, k, r)
	l.mu.Lock()
	defer l.mu.Unlock()
	drop := oldIPs // on success, the addresses the Service no longer uses
	if err != nil {
		drop = newIPs // on failure, the ones it did not have
		if hadOld {
			l.records[k] = old
		} else {
			delete(l.records, k)
		}
	}
	for _, ip := range drop {
		if !slices.Contains(oldIPs, ip) || !slices.Contains(newIPs, ip) {
			l.owner.release(ip, k)
		}
	}
	if err != nil {
		return err
	}
	l.updatePoolMetrics()
	return nil
}

// load reads the store once, and learns which addresses Services already hold from their
// status in the API server, so that a Service created by another ccm (or before the store
// existed) never sees its address handed to another Service. Callers hold l.mu.
func (l *loadBalancers) load(ctx context.Context) error {
	if l.loaded {
		return nil
	}
	if l.store == nil {
		l.store = l.c.newStore()
	}
	records, err := l.store.Load(ctx)
	if err != nil {
		return err
	}
	for k, r := range records {
		l.records[k] = r
		for _, ip := range ippool.ParseAddrs(r.IPs) {
			l.owner.claim(ip, k)
		}
	}
	if l.c.client != nil {
		list, err := l.c.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("learning the addresses Services already hold: %w", err)
		}
		for i := range list.Items {
			svc := &list.Items[i]
			if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
				continue
			}
			for _, a := range ippool.StatusAddrs(svc) {
				if len(l.owner[a]) == 0 {
					l.owner.claim(a, key(svc))
				}
			}
		}
	}
	l.loaded = true
	klog.InfoS("Loaded load balancer records", "records", len(l.records), "addressesInUse", len(l.owner))
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) updatePoolMetrics() { ippool.ReportUsage(ProviderName, l.pools, l.owner) }

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}
