package dummy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
)

// names follows the Octavia-style scheme: readable, and reversible to namespace/name.
var names = lbname.Scheme{Prefix: "dummy_", Sep: "_", MaxLen: 255}

// loadBalancers is the dummy cloud's load balancer service: it hands out addresses from the
// configured pools and remembers which Service holds which address and backends.
type loadBalancers struct {
	c     *Cloud
	pools []*pool

	mu      sync.Mutex
	records map[string]*lbRecord // by namespace/name
	owner   map[netip.Addr]string
	writes  int
	seeded  bool
}

// lbRecord is one load balancer as the dummy cloud stores it.
type lbRecord struct {
	name  string
	ips   []netip.Addr
	ports []string // "TCP/80", sorted
	nodes []string // sorted node names
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	lb := &loadBalancers{c: c, records: map[string]*lbRecord{}, owner: map[netip.Addr]string{}}
	poolNames := make([]string, 0, len(c.cfg.Pool))
	for n := range c.cfg.Pool {
		poolNames = append(poolNames, n)
	}
	sort.Strings(poolNames)
	for _, n := range poolNames {
		p, _ := newPool(n, c.cfg.Pool[n]) // validated by the factory
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
	if err := l.seed(ctx); err != nil {
		return nil, false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.records[key(svc)]
	if rec == nil {
		return nil, false, nil
	}
	return rec.status(svc), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer. It writes only when the address,
// ports or backends differ from what the dummy cloud already holds.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	if err := l.seed(ctx); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key(svc)
	want := &lbRecord{name: names.Name(clusterName, svc.Namespace, svc.Name), ports: portsOf(svc), nodes: nodeNames(nodes)}
	have := l.records[k]
	ips, err := l.addressesFor(svc, have)
	if err != nil {
		return nil, err
	}
	want.ips = ips
	if have != nil && have.equal(want) {
		return have.status(svc), nil
	}
	for _, ip := range want.ips {
		l.owner[ip] = k
	}
	if have != nil {
		for _, ip := range have.ips {
			if !slices.Contains(want.ips, ip) {
				delete(l.owner, ip)
			}
		}
	}
	l.records[k] = want
	l.writes++
	l.updatePoolMetrics()
	return want.status(svc), nil
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: only the backends change.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.records[key(svc)]
	if rec == nil {
		return fmt.Errorf("load balancer for %s does not exist yet", key(svc))
	}
	if n := nodeNames(nodes); !slices.Equal(n, rec.nodes) {
		rec.nodes = n
		l.writes++
	}
	return nil
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer; deleting a missing one is fine.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	if err := l.seed(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key(svc)
	rec := l.records[k]
	for ip, owner := range l.owner {
		if owner == k {
			delete(l.owner, ip)
		}
	}
	if rec != nil {
		delete(l.records, k)
		l.writes++
	}
	l.updatePoolMetrics()
	return nil
}

// addressesFor picks the Service's addresses, one per IP family it asks for. It keeps what the
// Service already has, honours spec.loadBalancerIP, and never hands out an address twice.
func (l *loadBalancers) addressesFor(svc *v1.Service, have *lbRecord) ([]netip.Addr, error) {
	k := key(svc)
	families := svc.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	requested := map[bool]netip.Addr{}
	if s := strings.TrimSpace(svc.Spec.LoadBalancerIP); s != "" {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("spec.loadBalancerIP %q is not an IP address", s)
		}
		requested[a.Is6()] = a
	}
	pools := l.poolsFor(svc.Namespace)
	if len(pools) == 0 {
		return nil, fmt.Errorf("no address pool serves namespace %q: add a [Pool] with namespace = %s, or one without namespaces", svc.Namespace, svc.Namespace)
	}
	free := func(a netip.Addr) bool { o, used := l.owner[a]; return !used || o == k }
	inPools := func(a netip.Addr) bool {
		return slices.ContainsFunc(pools, func(p *pool) bool { return p.contains(a) })
	}
	var out []netip.Addr
	for i, fam := range families {
		v6 := fam == v1.IPv6Protocol
		var got netip.Addr
		if a, ok := requested[v6]; ok {
			if !inPools(a) {
				return nil, fmt.Errorf("spec.loadBalancerIP %s is not in a pool that serves namespace %q", a, svc.Namespace)
			}
			if !free(a) {
				return nil, fmt.Errorf("spec.loadBalancerIP %s is already used by Service %s", a, l.owner[a])
			}
			got = a
		}
		if !got.IsValid() && have != nil { // keep the current address while it is still valid
			for _, a := range have.ips {
				if a.Is6() == v6 && inPools(a) && free(a) {
					got = a
				}
			}
		}
		if !got.IsValid() {
			for _, a := range statusIPs(svc) { // re-adopt after a restart
				if a.Is6() == v6 && inPools(a) && free(a) {
					got = a
				}
			}
		}
		for _, p := range pools {
			if got.IsValid() {
				break
			}
			got, _ = p.next(v6, func(a netip.Addr) bool { _, used := l.owner[a]; return used })
		}
		if !got.IsValid() {
			if i > 0 && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack {
				continue // the second family is a wish, not a must
			}
			return nil, &PoolExhaustedError{Namespace: svc.Namespace, Family: string(fam)}
		}
		out = append(out, got)
	}
	return out, nil
}

// PoolExhaustedError says no pool serving the Service has a free address of a family.
type PoolExhaustedError struct{ Namespace, Family string }

func (e *PoolExhaustedError) Error() string {
	return fmt.Sprintf("address pool exhausted: no free %s address in the pools serving namespace %q", e.Family, e.Namespace)
}

func (l *loadBalancers) poolsFor(namespace string) []*pool {
	anyNamed := slices.ContainsFunc(l.pools, func(p *pool) bool { return slices.Contains(p.namespaces, namespace) })
	var out []*pool
	for _, p := range l.pools {
		if p.serves(namespace, anyNamed) {
			out = append(out, p)
		}
	}
	return out
}

// seed learns, once, which addresses Services already hold, from their status in the API
// server. The dummy cloud keeps its records in memory; without this a restarted CCM could hand
// a new Service an address an existing one still uses.
func (l *loadBalancers) seed(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seeded || l.c.client == nil {
		return nil
	}
	list, err := l.c.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("learning the addresses Services already hold: %w", err)
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		for _, a := range statusIPs(svc) {
			if _, taken := l.owner[a]; !taken {
				l.owner[a] = key(svc)
			}
		}
	}
	l.seeded = true
	klog.V(2).InfoS("Learned load balancer addresses from the API server", "addresses", len(l.owner))
	l.updatePoolMetrics()
	return nil
}

func (l *loadBalancers) updatePoolMetrics() {
	for _, p := range l.pools {
		used := 0
		for a := range l.owner {
			if p.contains(a) {
				used++
			}
		}
		metrics.IPPoolAddresses.WithLabelValues(ProviderName, p.name, "total").Set(p.size())
		metrics.IPPoolAddresses.WithLabelValues(ProviderName, p.name, "used").Set(float64(used))
	}
}

// Writes is how many times the dummy cloud changed a load balancer: the conformance suite and
// the integration tests read it to prove that unchanged Services cost no writes.
func (l *loadBalancers) Writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

func observe(op string, start time.Time, err *error) {
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, *err)
}

func statusIPs(svc *v1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a)
		}
	}
	return out
}

func portsOf(svc *v1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s/%d", p.Protocol, p.Port))
	}
	sort.Strings(out)
	return out
}

func nodeNames(nodes []*v1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

func (r *lbRecord) equal(o *lbRecord) bool {
	return r.name == o.name && slices.Equal(r.ips, o.ips) && slices.Equal(r.ports, o.ports) && slices.Equal(r.nodes, o.nodes)
}

func (r *lbRecord) status(svc *v1.Service) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	vip := v1.LoadBalancerIPModeVIP
	for _, ip := range r.ips {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip.String(), IPMode: &vip})
	}
	return st
}
