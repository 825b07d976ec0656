package vsphere

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
)

// names: vSphere tag names may be long; the Octavia-style scheme stays readable.
var names = lbname.Scheme{Prefix: "k8s_", Sep: "_", MaxLen: 255}

// loadBalancers hands out bare-metal-style virtual IPs from the [Pool] sections, as the dummy
// provider does (the same ippool allocator). Announcing the address (ARP/BGP) is left to a
// speaker such as kube-vip or MetalLB in speaker-only mode, which reads the Service status.
type loadBalancers struct {
	pools []*ippool.Pool
	store *lbStore

	mu      sync.Mutex
	loaded  bool
	records map[string]lbRecord // by tag name
	used    map[netip.Addr]string
	writes  int // records written (created, updated, deleted) by this process
}

type lbDesired struct {
	Name  string
	IPs   []string
	Ports []string
	Nodes []string
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	l := &loadBalancers{records: map[string]lbRecord{}, used: map[netip.Addr]string{}}
	for _, n := range sortedKeys(c.cfg.Pool) {
		p, _ := ippool.New(n, c.cfg.Pool[n]) // validated by the factory
		l.pools = append(l.pools, p)
	}
	if len(c.conns) > 0 {
		l.store = &lbStore{c: c.conns[0], z: c.zones}
	}
	return l
}

func (l *loadBalancers) load(ctx context.Context) error {
	if l.loaded {
		return nil
	}
	recs, err := l.store.load(ctx)
	if err != nil {
		return err
	}
	for name, r := range recs {
		l.records[name] = r
		for _, a := range ippool.ParseAddrs(r.IPs) {
			l.used[a] = name
		}
	}
	l.loaded = true
	return nil
}

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
	r, ok := l.records[names.Name(clusterName, svc.Namespace, svc.Name)]
	if !ok {
		return nil, false, nil
	}
	return ippool.Status(r.IPs, svc), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer: it writes the record only when
// the desired state's fingerprint differs from the stored one.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return nil, err
	}
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	have, exists := l.records[name]
	ips, err := l.addressesFor(name, svc, have)
	if err != nil {
		return nil, err
	}
	r, err := l.write(ctx, clusterName, name, svc, ips, nodes, have, exists)
	if err != nil {
		return nil, err
	}
	return ippool.Status(r.IPs, svc), nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the members change.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return err
	}
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	have, exists := l.records[name]
	if !exists {
		return fmt.Errorf("load balancer for %s/%s does not exist yet", svc.Namespace, svc.Name)
	}
	_, err = l.write(ctx, clusterName, name, svc, ippool.ParseAddrs(have.IPs), nodes, have, true)
	return err
}

func (l *loadBalancers) write(ctx context.Context, cluster, name string, svc *v1.Service, ips []netip.Addr, nodes []*v1.Node, have lbRecord, exists bool) (lbRecord, error) {
	want := lbRecord{Cluster: cluster, Service: svc.Namespace + "/" + svc.Name, tagID: have.tagID}
	for _, a := range ips {
		want.IPs = append(want.IPs, a.String())
	}
	want.Fingerprint = fingerprint.Of(lbDesired{Name: name, IPs: want.IPs, Ports: ippool.Ports(svc), Nodes: ippool.NodeNames(nodes)})
	if exists && !fingerprint.Changed(have.Fingerprint, want.Fingerprint) {
		return have, nil
	}
	r, err := l.store.put(ctx, name, want)
	if err != nil {
		return lbRecord{}, err
	}
	l.writes++
	for _, a := range ippool.ParseAddrs(have.IPs) {
		delete(l.used, a)
	}
	for _, a := range ips {
		l.used[a] = name
	}
	l.records[name] = r
	l.poolMetrics()
	return r, nil
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer; a missing one is fine, and
// a record another cluster owns is never deleted.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(ctx); err != nil {
		return err
	}
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	r, ok := l.records[name]
	if !ok {
		return nil
	}
	if ns, n, owned := lbname.Owner(clusterName, r.tags()); !owned || ns != svc.Namespace || n != svc.Name {
		return fmt.Errorf("load balancer record %s is not owned by Service %s/%s of cluster %s; not deleting it", name, svc.Namespace, svc.Name, clusterName)
	}
	if err := l.store.delete(ctx, r); err != nil {
		return err
	}
	l.writes++
	for _, a := range ippool.ParseAddrs(r.IPs) {
		delete(l.used, a)
	}
	delete(l.records, name)
	l.poolMetrics()
	return nil
}

// addressesFor picks one address per IP family the Service asks for: the requested one
// (spec.loadBalancerIP), else the one it holds, else the one in its status (after a restart),
// else the first free one of a pool serving its namespace.
func (l *loadBalancers) addressesFor(name string, svc *v1.Service, have lbRecord) ([]netip.Addr, error) {
	pools := ippool.For(l.pools, svc.Namespace)
	if len(pools) == 0 {
		return nil, fmt.Errorf("no address pool serves namespace %q: add a [Pool] with namespace = %s, or one without namespaces", svc.Namespace, svc.Namespace)
	}
	usable := func(a netip.Addr, v6 bool) bool {
		owner, taken := l.used[a]
		return a.Is6() == v6 && (!taken || owner == name) && slicesAny(pools, func(p *ippool.Pool) bool { return p.Contains(a) })
	}
	families := svc.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	var requested []netip.Addr
	if svc.Spec.LoadBalancerIP != "" {
		a, err := netip.ParseAddr(svc.Spec.LoadBalancerIP)
		if err != nil {
			return nil, fmt.Errorf("spec.loadBalancerIP: %q is not an IP address", svc.Spec.LoadBalancerIP)
		}
		if !usable(a, a.Is6()) {
			return nil, fmt.Errorf("spec.loadBalancerIP: %s is not free in a pool serving namespace %q", a, svc.Namespace)
		}
		requested = append(requested, a)
	}
	var out []netip.Addr
	for i, fam := range families {
		v6 := fam == v1.IPv6Protocol
		var got netip.Addr
		for _, a := range append(append(requested, ippool.ParseAddrs(have.IPs)...), ippool.StatusAddrs(svc)...) {
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
		if !got.IsValid() {
			if i > 0 && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack {
				continue
			}
			return nil, fmt.Errorf("address pool exhausted: no free %s address in the pools serving namespace %q", fam, svc.Namespace)
		}
		out = append(out, got)
	}
	return out, nil
}

func (l *loadBalancers) poolMetrics() { ippool.ReportUsage(ProviderName, l.pools, l.used) }

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}

func slicesAny[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}
