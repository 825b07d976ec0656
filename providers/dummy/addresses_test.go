package dummy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/ippool"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func lbOf(t *testing.T, cfg string) *loadBalancers {
	t.Helper()
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c.lb
}

func svcWith(name string, ann map[string]string, ports ...int32) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Port: p, Protocol: v1.ProtocolTCP})
	}
	return s
}

func ips(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func TestSharedIP(t *testing.T) {
	lb := lbOf(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n")
	ctx := context.Background()
	share := map[string]string{AnnotationSharedIP: "web"}
	a, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("a", share, 80), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("b", share, 443), nil)
	if err != nil || ips(b)[0] != ips(a)[0] {
		t.Fatalf("b did not share a's address: %v vs %v (%v)", ips(b), ips(a), err)
	}
	// Same key but a colliding port: a new address.
	c, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("c", share, 80), nil)
	if err != nil || ips(c)[0] == ips(a)[0] {
		t.Fatalf("c collides on port 80 but got %v (%v)", ips(c), err)
	}
	// No key: never shares, even when asking for the address.
	_, err = lb.EnsureLoadBalancer(ctx, "c", svcWith("d", map[string]string{AnnotationLoadBalancerIPs: ips(a)[0]}, 8080), nil)
	if err == nil || !strings.Contains(err.Error(), "already in use by Service ns/a, ns/b") || !strings.Contains(err.Error(), AnnotationSharedIP) {
		t.Fatalf("d: %v", err)
	}
	// Deleting one sharer keeps the address for the other.
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svcWith("a", share, 80)); err != nil {
		t.Fatal(err)
	}
	if got := lb.owner[ippool.ParseAddrs(ips(b))[0]]; len(got) != 1 || got[0] != "dummy_c_ns_b" {
		t.Errorf("holders after delete: %v", got)
	}
}

func TestRequestedAndDualStack(t *testing.T) {
	lb := lbOf(t, "[Pool \"p\"]\ncidr = 192.0.2.0/29\ncidr = 2001:db8::/125\n")
	ctx := context.Background()
	s := svcWith("ds", map[string]string{AnnotationKubeVIPLoadBalancerIPs: "192.0.2.5,2001:db8::3"}, 80)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
	st, err := lb.EnsureLoadBalancer(ctx, "c", s, nil)
	if err != nil || strings.Join(ips(st), ",") != "192.0.2.5,2001:db8::3" {
		t.Fatalf("dual-stack requested: %v %v", ips(st), err)
	}
	if st.Ingress[0].Ports[0].Port != 80 {
		t.Errorf("ingress ports %v", st.Ingress[0].Ports)
	}
	v6first := svcWith("v6", nil, 80)
	v6first.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
	if st, err := lb.EnsureLoadBalancer(ctx, "c", v6first, nil); err != nil || !strings.Contains(ips(st)[0], ":") {
		t.Fatalf("IPv6 single-stack: %v %v", st, err)
	}
	for _, bad := range []map[string]string{
		{AnnotationLoadBalancerIPs: "192.0.2.1,192.0.2.2"},
		{AnnotationLoadBalancerIPs: "nope"},
	} {
		if _, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("bad", bad, 80), nil); err == nil || !strings.Contains(err.Error(), AnnotationLoadBalancerIPs) {
			t.Errorf("%v: error %v should name the annotation", bad, err)
		}
	}
}

func TestPreferDualStackWithoutV6Pool(t *testing.T) {
	lb := lbOf(t, "[Pool \"p\"]\ncidr = 192.0.2.0/29\n")
	s := svcWith("pds", nil, 80)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyPreferDualStack)
	st, err := lb.EnsureLoadBalancer(context.Background(), "c", s, nil)
	if err != nil || len(st.Ingress) != 1 {
		t.Fatalf("PreferDualStack without an IPv6 pool: %v %v", st, err)
	}
	s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
	s.Name = "rds"
	if _, err := lb.EnsureLoadBalancer(context.Background(), "c", s, nil); err == nil {
		t.Fatal("RequireDualStack without an IPv6 pool succeeded")
	}
}

func TestExtraLabels(t *testing.T) {
	c, err := New(strings.NewReader("[Instance \"n\"]\nlabel = rack=r1\nlabel = example.com/tier=gold\n"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := instances{c}.InstanceMetadata(context.Background(), nodeNamed("n"))
	if err != nil || md.AdditionalLabels["rack"] != "r1" || md.AdditionalLabels["example.com/tier"] != "gold" {
		t.Fatalf("labels %v %v", md.AdditionalLabels, err)
	}
	if _, err := New(strings.NewReader("[Instance \"n\"]\nlabel = bad key=x\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad label: %v", err)
	}
}

func FuzzInventory(f *testing.F) {
	f.Add("[Instance \"a\"]\ninternal-ip = 10.0.0.1\nstate = running\nlabel = a=b\n")
	f.Add("[Instance \"b\"]\nexternal-ip = ::1\nzone = z\n")
	f.Add("[Instance]\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := New(strings.NewReader(src))
		if err != nil {
			return
		}
		// Whatever loads must answer look-ups without panicking.
		for name := range c.cfg.Instance {
			if _, err := (instances{c}).InstanceMetadata(context.Background(), nodeNamed(name)); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
		}
	})
}

// failingStore refuses every write.
type failingStore struct{ *MemStore }

func (failingStore) Put(context.Context, string, Record) error { return errors.New("store down") }

// A failed write keeps the addresses a Service already held (here adopted from its status
// after a restart) and gives back the new ones.
func TestFailedWriteKeepsHeldAddresses(t *testing.T) {
	c, err := New(strings.NewReader("[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.UseStore(failingStore{NewMemStore()})
	lb := c.lb
	ctx := context.Background()
	if err := lb.load(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	held := netip.MustParseAddr("192.0.2.11")
	lb.owner.claim(held, "dummy_c_ns_a") // as load does for an address in a Service's status
	a := svcWith("a", map[string]string{AnnotationLoadBalancerIPs: "192.0.2.12"}, 80)
	if _, err := lb.EnsureLoadBalancer(ctx, "c", a, nil); err == nil {
		t.Fatal("write to a failing store succeeded")
	}
	if got := lb.owner[held]; len(got) != 1 || got[0] != "dummy_c_ns_a" {
		t.Errorf("held address after a failed write: %v", got)
	}
	if got := lb.owner[netip.MustParseAddr("192.0.2.12")]; len(got) != 0 {
		t.Errorf("new address still claimed after a failed write: %v", got)
	}
	if _, ok := lb.records.get("dummy_c_ns_a"); ok {
		t.Error("record kept after a failed write")
	}
}

// The pool settings of a pool moved from kube-vip-cloud-provider (ends handed out, highest
// first) and of one whose addresses are only asked for (auto-assign false).
func TestPoolSettingsInTheConfig(t *testing.T) {
	lb := lbOf(t, "[Pool \"kubevip\"]\ncidr = 192.0.2.0/30\nskip-end-addresses = false\norder = descending\n\n"+
		"[Pool \"manual\"]\nrange = 198.51.100.5-198.51.100.6\nauto-assign = false\n")
	ctx := context.Background()
	a, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("a", nil, 80), nil)
	if err != nil || ips(a)[0] != "192.0.2.3" {
		t.Fatalf("a got %v (%v), want the CIDR's last address 192.0.2.3", ips(a), err)
	}
	b, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("b", map[string]string{AnnotationLoadBalancerIPs: "198.51.100.6"}, 80), nil)
	if err != nil || ips(b)[0] != "198.51.100.6" {
		t.Fatalf("b asked for an address of the auto-assign false pool: %v (%v)", ips(b), err)
	}
	for _, name := range []string{"c", "d", "e"} {
		s, err := lb.EnsureLoadBalancer(ctx, "c", svcWith(name, nil, 80), nil)
		if err != nil || strings.HasPrefix(ips(s)[0], "198.51.100.") {
			t.Fatalf("%s got %v (%v): an auto-assign false pool must not hand out addresses", name, ips(s), err)
		}
	}
	if _, err := New(strings.NewReader("[Pool \"p\"]\ncidr = 192.0.2.0/30\norder = random\n")); err == nil || !strings.Contains(err.Error(), "order") {
		t.Errorf("order random: %v", err)
	}
}

// MetalLB's annotations, as a Service moved from MetalLB carries them: the requested address
// and the sharing key are read as ccm's own, with the same checks.
func TestMetalLBAnnotations(t *testing.T) {
	lb := lbOf(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n")
	ctx := context.Background()
	a, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("a", map[string]string{AnnotationMetalLBLoadBalancerIPs: "192.0.2.12", AnnotationMetalLBSharedIP: "web"}, 80), nil)
	if err != nil || ips(a)[0] != "192.0.2.12" {
		t.Fatalf("a asked for 192.0.2.12 through %s: %v (%v)", AnnotationMetalLBLoadBalancerIPs, ips(a), err)
	}
	b, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("b", map[string]string{AnnotationMetalLBLegacyLoadBalancerIPs: "192.0.2.12", AnnotationMetalLBLegacySharedIP: "web"}, 443), nil)
	if err != nil || ips(b)[0] != "192.0.2.12" {
		t.Fatalf("b shares a's address through MetalLB's older names: %v (%v)", ips(b), err)
	}
	_, err = lb.EnsureLoadBalancer(ctx, "c", svcWith("c", map[string]string{AnnotationMetalLBLoadBalancerIPs: "192.0.2.12"}, 8080), nil)
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("c asked for a's address without the sharing key: %v", err)
	}
	_, err = lb.EnsureLoadBalancer(ctx, "c", svcWith("d", map[string]string{AnnotationSharedIP: "x", AnnotationMetalLBSharedIP: "y"}, 80), nil)
	if err == nil || !strings.Contains(err.Error(), "differs from") {
		t.Errorf("two sharing keys that differ: %v", err)
	}
	_, err = lb.EnsureLoadBalancer(ctx, "c", svcWith("e", map[string]string{AnnotationMetalLBLoadBalancerIPs: "192.0.2.99"}, 80), nil)
	if err == nil || !strings.Contains(err.Error(), AnnotationMetalLBLoadBalancerIPs) {
		t.Errorf("an address of no pool through %s: %v", AnnotationMetalLBLoadBalancerIPs, err)
	}
}

// A Service picks its pool by name (ccm's or MetalLB's annotation), among the pools serving
// its namespace; a pool with auto-assign = false hands out to a Service naming it.
func TestAddressPoolAnnotation(t *testing.T) {
	lb := lbOf(t, "[Pool \"a\"]\nrange = 192.0.2.10-192.0.2.12\n\n[Pool \"b\"]\nrange = 198.51.100.5-198.51.100.6\nauto-assign = false\n\n"+
		"[Pool \"theirs\"]\nrange = 203.0.113.1-203.0.113.2\nnamespace = other\n")
	ctx := context.Background()
	s, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("s", map[string]string{AnnotationMetalLBAddressPool: "b"}, 80), nil)
	if err != nil || ips(s)[0] != "198.51.100.5" {
		t.Fatalf("s named pool b (auto-assign false): %v (%v)", ips(s), err)
	}
	d, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("d", nil, 80), nil)
	if err != nil || ips(d)[0] != "192.0.2.10" {
		t.Fatalf("d names no pool: %v (%v)", ips(d), err)
	}
	for _, c := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{AnnotationAddressPool: "theirs"}, `annotation dummy.ccm.io/address-pool: no pool named "theirs" serves namespace "ns"`},
		{map[string]string{AnnotationMetalLBLegacyAddressPool: "nope"}, `annotation metallb.universe.tf/address-pool: no pool named "nope"`},
		{map[string]string{AnnotationAddressPool: "a", AnnotationMetalLBAddressPool: "b"}, "differs from"},
		{map[string]string{AnnotationAddressPool: "a", AnnotationLoadBalancerIPs: "198.51.100.6"}, "is not in a pool"},
	} {
		if _, err := lb.EnsureLoadBalancer(ctx, "c", svcWith("x", c.ann, 80), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.ann, err, c.want)
		}
	}
}
