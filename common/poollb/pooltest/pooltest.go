// Package pooltest is the behaviour of a pool load balancer (common/poollb) through a
// provider's cloudprovider.LoadBalancer: written once, run by every provider that hands out
// addresses from [Pool] sections against its own store, so that they behave alike.
package pooltest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/ptr"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/poollb"
)

// Cluster is the cluster name the suite's Services are of.
const Cluster = "pools"

// Harness is a provider as the suite sees it.
type Harness struct {
	Names poollb.Names
	// New returns a new cloud, on a store of its own, whose only pools are the [Pool] sections
	// of pools (INI), with its cluster name set to Cluster, initialised with events (its Events
	// and its API client, whose Services it learns addresses from).
	New func(t *testing.T, pools string, events *cloudtest.EventSink) Cloud
}

// Cloud is a provider's cloud as the suite sees it.
type Cloud struct {
	LB cloudprovider.LoadBalancer
	// Reload hands the cloud a changed cloud config whose pools are pools (INI [Pool]
	// sections), as livecfg does: it reports whether the pools changed.
	Reload func(pools string) (bool, error)
}

// Run runs every behaviour as a subtest.
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"SharedIP", sharedIP},
		{"SharedIPNeedsTheSameBackends", sharedBackends},
		{"RequestedAndDualStack", requestedAndDualStack},
		{"PreferDualStackWithoutIPv6Pool", preferDualStack},
		{"PoolSettings", poolSettings},
		{"MetalLBAndKubeVIPNames", migrationNames},
		{"AddressPoolAnnotation", addressPool},
		{"ServiceSelectorsAndPriorities", selectorsAndPriorities},
		{"LearnsAddressesFromStatus", learnsFromStatus},
		{"TakeoverKeepsTheNetworkAddress", takeoverEnds},
		{"LivePools", livePools},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

// Service is a LoadBalancer Service of namespace ns with TCP ports.
func Service(ns, name string, ann map[string]string, ports ...int32) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	for i, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Port: p, Protocol: v1.ProtocolTCP, NodePort: 30000 + int32(i)})
	}
	return s
}

// IPs are the addresses of a status.
func IPs(st *v1.LoadBalancerStatus) []string {
	var out []string
	if st != nil {
		for _, in := range st.Ingress {
			out = append(out, in.IP)
		}
	}
	return out
}

func ensure(t *testing.T, lb cloudprovider.LoadBalancer, s *v1.Service) ([]string, error) {
	t.Helper()
	st, err := lb.EnsureLoadBalancer(context.Background(), Cluster, s, nil)
	return IPs(st), err
}

// Services of one namespace with the same sharing key share an address while their ports do
// not collide; one without the key is refused it, naming the holders; deleting one sharer
// keeps the address for the other.
func sharedIP(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n")
	share := map[string]string{h.Names.SharedIP[0]: "web"}
	a, err := ensure(t, lb, Service("ns", "a", share, 80))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ensure(t, lb, Service("ns", "b", share, 443)); err != nil || b[0] != a[0] {
		t.Fatalf("b did not share a's address: %v vs %v (%v)", b, a, err)
	}
	if c, err := ensure(t, lb, Service("ns", "c", share, 80)); err != nil || c[0] == a[0] {
		t.Fatalf("c collides on port 80 but got %v (%v)", c, err)
	}
	_, err = ensure(t, lb, Service("ns", "d", map[string]string{h.Names.LoadBalancerIPs[0]: a[0]}, 8080))
	if err == nil || !strings.Contains(err.Error(), "already in use by Service ns/a, ns/b") || !strings.Contains(err.Error(), h.Names.SharedIP[0]) {
		t.Fatalf("d asked for the shared address without the key: %v", err)
	}
	if err := lb.EnsureLoadBalancerDeleted(context.Background(), Cluster, Service("ns", "a", share, 80)); err != nil {
		t.Fatal(err)
	}
	_, err = ensure(t, lb, Service("ns", "d", map[string]string{h.Names.LoadBalancerIPs[0]: a[0]}, 8080))
	if err == nil || !strings.Contains(err.Error(), "already in use by Service ns/b ") {
		t.Fatalf("after a's delete, b alone holds the address: %v", err)
	}
	if e, err := ensure(t, lb, Service("ns", "e", share, 8443)); err != nil || e[0] != a[0] {
		t.Fatalf("e joins b: %v (%v), want %s", e, err, a[0])
	}
}

// With the same sharing key and distinct ports, Services share an address only when their
// traffic can go to the same place: both externalTrafficPolicy Cluster, or both selecting the
// same pods. Otherwise each gets its own, and asking for the other's is refused.
func sharedBackends(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.14\n")
	share := map[string]string{h.Names.SharedIP[0]: "web"}
	svc := func(name string, local bool, app string, port int32, ann map[string]string) *v1.Service {
		s := Service("ns", name, ann, port)
		s.Spec.Selector = map[string]string{"app": app}
		if local {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
		return s
	}
	a, err := ensure(t, lb, svc("a", true, "web", 80, share))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ensure(t, lb, svc("b", true, "web", 443, share)); err != nil || b[0] != a[0] {
		t.Errorf("b selects a's pods (both Local): %v (%v), want %s", b, err, a[0])
	}
	if c, err := ensure(t, lb, svc("c", true, "api", 8080, share)); err != nil || c[0] == a[0] {
		t.Errorf("c is Local with other pods: %v (%v), want an address of its own", c, err)
	}
	if d, err := ensure(t, lb, svc("d", false, "db", 8081, share)); err != nil || d[0] == a[0] {
		t.Errorf("d is Cluster beside Local sharers of other pods: %v (%v), want an address of its own", d, err)
	}
	if e, err := ensure(t, lb, svc("e", false, "cache", 8082, share)); err != nil || e[0] == a[0] {
		t.Errorf("e is Cluster: %v (%v), want d's, not a's", e, err)
	} else if d, _ := ensure(t, lb, svc("d", false, "db", 8081, share)); e[0] != d[0] {
		t.Errorf("e and d are both Cluster: %v and %v, want one address", e, d)
	}
	asked := map[string]string{h.Names.SharedIP[0]: "web", h.Names.LoadBalancerIPs[0]: a[0]}
	if _, err := ensure(t, lb, svc("f", true, "other", 9090, asked)); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("f asks for a's address with other pods: %v, want a refusal", err)
	}
}

func dual(s *v1.Service, policy v1.IPFamilyPolicy, fams ...v1.IPFamily) *v1.Service {
	s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = fams, ptr.To(policy)
	return s
}

func requestedAndDualStack(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"p\"]\ncidr = 192.0.2.0/29\ncidr = 2001:db8::/125\n")
	s := dual(Service("ns", "ds", map[string]string{h.Names.LoadBalancerIPs[1]: "192.0.2.5,2001:db8::3"}, 80), v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	if got, err := ensure(t, lb, s); err != nil || strings.Join(got, ",") != "192.0.2.5,2001:db8::3" {
		t.Fatalf("dual-stack requested: %v %v", got, err)
	}
	if got, err := ensure(t, lb, dual(Service("ns", "v6", nil, 80), v1.IPFamilyPolicySingleStack, v1.IPv6Protocol)); err != nil || len(got) != 1 || !strings.Contains(got[0], ":") {
		t.Fatalf("IPv6 single-stack: %v %v", got, err)
	}
	own := h.Names.LoadBalancerIPs[0]
	for _, bad := range []map[string]string{{own: "192.0.2.1,192.0.2.2"}, {own: "nope"}, {own: "::ffff:192.0.2.1"}} {
		if _, err := ensure(t, lb, Service("ns", "bad", bad, 80)); err == nil || !strings.Contains(err.Error(), own) {
			t.Errorf("%v: error %v should name the annotation", bad, err)
		}
	}
	if got, err := ensure(t, lb, Service("ns", "spec", nil, 80)); err != nil || got[0] == "192.0.2.5" {
		t.Errorf("a Service asking for nothing got %v (%v): 192.0.2.5 is held", got, err)
	}
}

func preferDualStack(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"p\"]\ncidr = 192.0.2.0/29\n")
	if got, err := ensure(t, lb, dual(Service("ns", "pds", nil, 80), v1.IPFamilyPolicyPreferDualStack, v1.IPv4Protocol, v1.IPv6Protocol)); err != nil || len(got) != 1 {
		t.Fatalf("PreferDualStack without an IPv6 pool: %v %v", got, err)
	}
	if _, err := ensure(t, lb, dual(Service("ns", "rds", nil, 80), v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("RequireDualStack without an IPv6 pool: %v", err)
	}
}

// A pool moved from kube-vip-cloud-provider (ends handed out, highest first) and one whose
// addresses are only asked for (auto-assign false).
func poolSettings(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"kubevip\"]\ncidr = 192.0.2.0/30\nskip-end-addresses = false\norder = descending\n\n"+
		"[Pool \"manual\"]\nrange = 198.51.100.5-198.51.100.6\nauto-assign = false\n")
	if a, err := ensure(t, lb, Service("ns", "a", nil, 80)); err != nil || a[0] != "192.0.2.3" {
		t.Fatalf("a got %v (%v), want the CIDR's last address 192.0.2.3", a, err)
	}
	if b, err := ensure(t, lb, Service("ns", "b", map[string]string{h.Names.LoadBalancerIPs[0]: "198.51.100.6"}, 80)); err != nil || b[0] != "198.51.100.6" {
		t.Fatalf("b asked for an address of the auto-assign false pool: %v (%v)", b, err)
	}
	for _, name := range []string{"c", "d", "e"} {
		if s, err := ensure(t, lb, Service("ns", name, nil, 80)); err != nil || strings.HasPrefix(s[0], "198.51.100.") {
			t.Fatalf("%s got %v (%v): an auto-assign false pool must not hand out addresses", name, s, err)
		}
	}
	if _, err := ensure(t, lb, Service("ns", "f", nil, 80)); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("a fifth Service: %v, want the pool exhausted", err)
	}
}

// The names of MetalLB (current and older) and kube-vip read as the provider's own.
func migrationNames(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n")
	n := h.Names
	if a, err := ensure(t, lb, Service("ns", "a", map[string]string{n.LoadBalancerIPs[2]: "192.0.2.12", n.SharedIP[1]: "web"}, 80)); err != nil || a[0] != "192.0.2.12" {
		t.Fatalf("a asked for 192.0.2.12 through %s: %v (%v)", n.LoadBalancerIPs[2], a, err)
	}
	if b, err := ensure(t, lb, Service("ns", "b", map[string]string{n.LoadBalancerIPs[3]: "192.0.2.12", n.SharedIP[2]: "web"}, 443)); err != nil || b[0] != "192.0.2.12" {
		t.Fatalf("b shares a's address through MetalLB's older names: %v (%v)", b, err)
	}
	if _, err := ensure(t, lb, Service("ns", "c", map[string]string{n.LoadBalancerIPs[1]: "192.0.2.12"}, 8080)); err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("c asked for a's address without the sharing key: %v", err)
	}
	if _, err := ensure(t, lb, Service("ns", "d", map[string]string{n.SharedIP[0]: "x", n.SharedIP[1]: "y"}, 80)); err == nil || !strings.Contains(err.Error(), "differs from") {
		t.Errorf("two sharing keys that differ: %v", err)
	}
	if _, err := ensure(t, lb, Service("ns", "e", map[string]string{n.LoadBalancerIPs[2]: "192.0.2.99"}, 80)); err == nil || !strings.Contains(err.Error(), n.LoadBalancerIPs[2]) {
		t.Errorf("an address of no pool through %s: %v", n.LoadBalancerIPs[2], err)
	}
}

// A Service picks its pool by name among the pools serving its namespace; a pool with
// auto-assign = false hands out to a Service naming it.
func addressPool(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"a\"]\nrange = 192.0.2.10-192.0.2.12\n\n[Pool \"b\"]\nrange = 198.51.100.5-198.51.100.6\nauto-assign = false\n\n"+
		"[Pool \"theirs\"]\nrange = 203.0.113.1-203.0.113.2\nnamespace = other\n")
	n := h.Names
	if s, err := ensure(t, lb, Service("ns", "s", map[string]string{n.AddressPool[1]: "b"}, 80)); err != nil || s[0] != "198.51.100.5" {
		t.Fatalf("s named pool b (auto-assign false): %v (%v)", s, err)
	}
	if d, err := ensure(t, lb, Service("ns", "d", nil, 80)); err != nil || d[0] != "192.0.2.10" {
		t.Fatalf("d names no pool: %v (%v)", d, err)
	}
	if o, err := ensure(t, lb, Service("other", "o", nil, 80)); err != nil || o[0] != "203.0.113.1" {
		t.Fatalf("namespace other gets its own pool: %v (%v)", o, err)
	}
	for _, c := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{n.AddressPool[0]: "theirs"}, fmt.Sprintf(`annotation %s: no pool named "theirs" serves namespace "ns"`, n.AddressPool[0])},
		{map[string]string{n.AddressPool[2]: "nope"}, fmt.Sprintf(`annotation %s: no pool named "nope"`, n.AddressPool[2])},
		{map[string]string{n.AddressPool[0]: "a", n.AddressPool[1]: "b"}, "differs from"},
		{map[string]string{n.AddressPool[0]: "a", n.LoadBalancerIPs[0]: "198.51.100.6"}, "is not in a pool"},
	} {
		if _, err := ensure(t, lb, Service("ns", "x", c.ann, 80)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.ann, err, c.want)
		}
	}
}

// Pools chosen by the Service's labels and tried by priority: a Service matching a selector's
// pool uses it (the lowest priority first) and not the unrestricted pools; one matching none
// uses the unrestricted pools, the one with a priority first; naming a pool it does not match
// is refused.
func selectorsAndPriorities(t *testing.T, h Harness) {
	lb := newLB(t, h, "[Pool \"any\"]\nrange = 192.0.2.10-192.0.2.11\n\n[Pool \"any-first\"]\nrange = 192.0.2.20-192.0.2.21\npriority = 5\n\n"+
		"[Pool \"web\"]\nrange = 198.51.100.5-198.51.100.6\nservice-selector = app=web\n\n"+
		"[Pool \"edge\"]\nrange = 203.0.113.1-203.0.113.2\nservice-selector = app in (web,api)\nservice-selector = tier=edge\npriority = 1\n")
	labelled := func(name string, labels map[string]string, ann map[string]string) *v1.Service {
		s := Service("ns", name, ann, 80)
		s.Labels = labels
		return s
	}
	for _, c := range []struct {
		svc  *v1.Service
		want string
	}{
		{labelled("w1", map[string]string{"app": "web"}, nil), "203.0.113.1"},
		{labelled("w2", map[string]string{"app": "web"}, nil), "203.0.113.2"},
		{labelled("w3", map[string]string{"app": "web"}, nil), "198.51.100.5"},
		{labelled("db", map[string]string{"app": "db"}, nil), "192.0.2.20"},
		{labelled("none", nil, nil), "192.0.2.21"},
		{labelled("last", nil, nil), "192.0.2.10"},
		{labelled("named", map[string]string{"app": "web"}, map[string]string{h.Names.AddressPool[0]: "web"}), "198.51.100.6"},
	} {
		if got, err := ensure(t, lb, c.svc); err != nil || got[0] != c.want {
			t.Errorf("%s %v: %v (%v), want %s", c.svc.Name, c.svc.Labels, got, err, c.want)
		}
	}
	s := labelled("x", map[string]string{"app": "db"}, map[string]string{h.Names.AddressPool[0]: "web"})
	if _, err := ensure(t, lb, s); err == nil || !strings.Contains(err.Error(), `no pool named "web"`) {
		t.Errorf("a Service naming a pool whose selectors it does not match: %v", err)
	}
}

func newLB(t *testing.T, h Harness, pools string) cloudprovider.LoadBalancer {
	return h.New(t, pools, cloudtest.NewEventSink()).LB
}

// An address in a LoadBalancer Service's status (served by MetalLB, kube-vip or another ccm
// before) is never handed to another Service, though no record holds it.
func learnsFromStatus(t *testing.T, h Harness) {
	events := cloudtest.NewEventSink()
	client, _ := events.Client("")
	served := Service("ns", "served", nil, 80)
	served.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if _, err := client.CoreV1().Services("ns").Create(context.Background(), served, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lb := h.New(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n", events).LB
	if got, err := ensure(t, lb, Service("ns", "new", nil, 80)); err != nil || got[0] == "192.0.2.10" {
		t.Fatalf("a new Service got %v (%v): 192.0.2.10 is in another Service's status", got, err)
	}
	if _, err := ensure(t, lb, Service("ns", "asks", map[string]string{h.Names.LoadBalancerIPs[0]: "192.0.2.10"}, 81)); err == nil || !strings.Contains(err.Error(), "already in use by Service ns/served") {
		t.Fatalf("asking for the served address: %v", err)
	}
	if got, err := ensure(t, lb, served); err != nil || got[0] != "192.0.2.10" {
		t.Fatalf("the Service that serves it keeps it: %v (%v)", got, err)
	}
}

// kube-vip-cloud-provider and MetalLB hand out a CIDR's first address, so the first Service
// they served often holds it. Under the pool ccm convert writes for them (skip-end-addresses
// false) the Service keeps it, whether it was asked for by kube-vip's annotation or is only in
// the status (MetalLB); under a pool that skips the ends it gets another, with a Warning.
func takeoverEnds(t *testing.T, h Harness) {
	for _, tc := range []struct {
		pool string
		keep bool
	}{
		{"[Pool \"converted\"]\ncidr = 192.0.2.0/29\nskip-end-addresses = false\n", true},
		{"[Pool \"default\"]\ncidr = 192.0.2.0/29\n", false},
	} {
		events := cloudtest.NewEventSink()
		client, _ := events.Client("")
		metallb := Service("ns", "metallb", nil, 80)
		metallb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.0"}}
		if _, err := client.CoreV1().Services("ns").Create(context.Background(), metallb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		lb := h.New(t, tc.pool, events).LB
		got, err := ensure(t, lb, metallb)
		if kept := err == nil && len(got) == 1 && got[0] == "192.0.2.0"; kept != tc.keep {
			t.Errorf("%q: the Service served 192.0.2.0 got %v (%v), kept %v, want %v", tc.pool, got, err, kept, tc.keep)
		}
		if !tc.keep {
			if found, evs := events.Await(metallb, 5*time.Second, v1.EventTypeWarning, poollb.ReasonAddressChanged, "192.0.2.0"); !found {
				t.Errorf("%q: no Warning %s; Events %q", tc.pool, poollb.ReasonAddressChanged, evs)
			}
			continue
		}
		kubevip := Service("ns", "kubevip", map[string]string{h.Names.LoadBalancerIPs[1]: "192.0.2.7"}, 80)
		kubevip.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.7"}}
		if got, err := ensure(t, lb, kubevip); err != nil || got[0] != "192.0.2.7" {
			t.Errorf("the Service kube-vip-cloud-provider gave the last address: %v (%v)", got, err)
		}
	}
}

// The pools change under a running cloud: no address handed out moves; a Service whose
// address left every pool keeps it, with a Warning; the next Service gets an address of the
// new pools; a bad change keeps the old pools.
func livePools(t *testing.T, h Harness) {
	events := cloudtest.NewEventSink()
	c := h.New(t, "[Pool \"old\"]\nrange = 192.0.2.10-192.0.2.11\n", events)
	a, b := Service("ns", "a", nil, 80), Service("ns", "b", nil, 80)
	ipA, err := ensure(t, c.LB, a)
	if err != nil {
		t.Fatal(err)
	}
	ipB, err := ensure(t, c.LB, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reload("[Pool \"old\"]\nrange = 192.0.2.10-192.0.2.11\n"); err != nil {
		t.Fatalf("the same pools again: %v", err)
	}
	// a's address leaves every pool; b's stays in the shrunk one; a new pool comes.
	changed, err := c.Reload("[Pool \"old\"]\nrange = 192.0.2.11-192.0.2.11\n\n[Pool \"new\"]\nrange = 198.51.100.1-198.51.100.2\n")
	if err != nil || !changed {
		t.Fatalf("reload: %v (changed %v)", err, changed)
	}
	if found, evs := events.Await(a, 2*time.Second, v1.EventTypeWarning, poollb.ReasonOutsidePools, ipA[0]); !found {
		t.Errorf("no Warning %s on a at the reload: %q", poollb.ReasonOutsidePools, evs)
	}
	for _, s := range []struct {
		svc  *v1.Service
		want []string
	}{{a, ipA}, {b, ipB}} {
		s.svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: s.want[0]}}
		if got, err := ensure(t, c.LB, s.svc); err != nil || got[0] != s.want[0] {
			t.Errorf("%s after the reload: %v (%v), want %v kept", s.svc.Name, got, err, s.want)
		}
	}
	if got, err := ensure(t, c.LB, Service("ns", "c", nil, 80)); err != nil || got[0] != "198.51.100.1" {
		t.Errorf("the next Service: %v (%v), want 198.51.100.1 of the new pool", got, err)
	}
	if _, err := c.Reload("[Pool \"new\"]\ncidr = not-a-cidr\n"); err == nil || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), `[Pool "new"] cidr`) {
		t.Errorf("a bad change: %v, want an error naming the line and the key", err)
	}
	if got, err := ensure(t, c.LB, Service("ns", "d", nil, 80)); err != nil || got[0] != "198.51.100.2" {
		t.Errorf("after the bad change: %v (%v), want 198.51.100.2 of the pools before it", got, err)
	}
}
