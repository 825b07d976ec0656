package dummy

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
)

// twoClouds returns two clouds of different clusters over one store: two clusters in one
// "cloud" (the conformance harness's NewCloudFor does the same).
func twoClouds(t *testing.T, cfg string) (a, b *loadBalancers, store *MemStore) {
	t.Helper()
	store = NewMemStore()
	for _, lb := range []**loadBalancers{&a, &b} {
		c, err := New(strings.NewReader(cfg))
		if err != nil {
			t.Fatal(err)
		}
		c.UseStore(store)
		*lb = c.lb
	}
	return a, b, store
}

func svcUID(ns, name, uid string, ann map[string]string, port int32) *v1.Service {
	s := svcWith(name, ann, port)
	s.Namespace, s.UID = ns, types.UID(uid)
	return s
}

// Two clusters sharing one store, both running before either allocates, with the same
// Service names: each gets its own record and its own address, and neither can take, change
// or delete the other's.
func TestTwoClustersShareOneStore(t *testing.T) {
	ctx := context.Background()
	a, b, store := twoClouds(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.13\n")
	// Both have read the (empty) store already.
	for _, lb := range []*loadBalancers{a, b} {
		if _, _, err := lb.GetLoadBalancer(ctx, "x", svcWith("none", nil, 80)); err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := svcUID("ns", "web", "uid-a", nil, 80), svcUID("ns", "web", "uid-b", nil, 80)
	sta, err := a.EnsureLoadBalancer(ctx, "alpha", sa, nil)
	if err != nil {
		t.Fatal(err)
	}
	stb, err := b.EnsureLoadBalancer(ctx, "beta", sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ips(sta)[0] == ips(stb)[0] {
		t.Fatalf("both clusters got %s", ips(sta)[0])
	}
	recs, _ := store.Load(ctx)
	ra, rb := recs["dummy_alpha_ns_web"], recs["dummy_beta_ns_web"]
	if len(recs) != 2 || !ownership.Is(ownership.Of("alpha", sa), ra.Tags) || !ownership.Is(ownership.Of("beta", sb), rb.Tags) {
		t.Fatalf("want one owned record per cluster, got %v", recs)
	}
	// b asks for a's address in every field: refused, without naming a's cluster.
	for _, ask := range []*v1.Service{
		svc("ns", "grab", ips(sta)[0]),
		svcWith("grab", map[string]string{AnnotationLoadBalancerIPs: ips(sta)[0]}, 81),
		svcWith("grab", map[string]string{AnnotationKubeVIPLoadBalancerIPs: ips(sta)[0]}, 81),
	} {
		_, err := b.EnsureLoadBalancer(ctx, "beta", ask, nil)
		if err == nil || !strings.Contains(err.Error(), "already in use by another Service") || strings.Contains(err.Error(), "alpha") {
			t.Errorf("beta asking for alpha's address: %v", err)
		}
	}
	// Fill the pool from b: a's address is never handed out.
	for i := range 3 {
		st, err := b.EnsureLoadBalancer(ctx, "beta", svcUID("ns", fmt.Sprintf("fill-%d", i), "", nil, 80), nil)
		if err == nil && ips(st)[0] == ips(sta)[0] {
			t.Fatalf("alpha's %s handed to beta's fill-%d", ips(sta)[0], i)
		}
	}
	// b's update and delete of its own same-named Service leave a's record alone.
	before := store.Writes()
	if err := b.EnsureLoadBalancerDeleted(ctx, "beta", sb); err != nil {
		t.Fatal(err)
	}
	recs, _ = store.Load(ctx)
	if _, ok := recs["dummy_beta_ns_web"]; ok || store.Writes() != before+1 {
		t.Errorf("beta's delete: records %v, %d writes", recs, store.Writes()-before)
	}
	if got := recs["dummy_alpha_ns_web"]; got.Fingerprint != ra.Fingerprint || got.IPs[0] != ra.IPs[0] {
		t.Errorf("alpha's record changed: %+v -> %+v", ra, got)
	}
	// a's own ensure finds nothing to write.
	before = store.Writes()
	if _, err := a.EnsureLoadBalancer(ctx, "alpha", sa, nil); err != nil || store.Writes() != before {
		t.Errorf("alpha's ensure after beta's work: %v, %d writes", err, store.Writes()-before)
	}
}

// A record under the Service's name that is not provably its own is never updated, reused or
// deleted for it; a record written before UIDs were recorded is adopted and gets the UID.
func TestOwnershipCheckedBeforeEveryWrite(t *testing.T) {
	ctx := context.Background()
	s := svcUID("ns", "web", "uid-new", nil, 80)
	const k = "dummy_c_ns_web"
	for _, tc := range []struct {
		name   string
		tags   map[string]string
		reason string
	}{
		{"made by hand", nil, "no ownership mark"},
		{"another cluster", ownership.Identity{Cluster: "other", Namespace: "ns", Name: "web", UID: "uid-new"}.Tags(), "no ownership mark"},
		{"another Service", ownership.Identity{Cluster: "c", Namespace: "ns", Name: "api", UID: "uid-api"}.Tags(), "another Service"},
		{"an earlier Service of the same name", ownership.Identity{Cluster: "c", Namespace: "ns", Name: "web", UID: "uid-old"}.Tags(), "earlier Service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(strings.NewReader("[Pool \"p\"]\ncidr = 192.0.2.0/28\n"))
			if err != nil {
				t.Fatal(err)
			}
			store := NewMemStore()
			c.UseStore(store)
			foreign := Record{Name: k, IPs: []string{"192.0.2.5"}, Ports: []string{"TCP/80"}, Tags: tc.tags, Fingerprint: "f"}
			_ = store.Put(ctx, k, foreign)
			before := store.Writes()
			if _, err := c.lb.EnsureLoadBalancer(ctx, "c", s, nil); err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), k) {
				t.Errorf("ensure: %v, want a refusal saying %q", err, tc.reason)
			}
			if err := c.lb.UpdateLoadBalancer(ctx, "c", s, []*v1.Node{nodeNamed("n")}); err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("update: %v, want a refusal saying %q", err, tc.reason)
			}
			if _, exists, err := c.lb.GetLoadBalancer(ctx, "c", s); exists || err != nil {
				t.Errorf("get: exists %v, %v; a record not the Service's is not its load balancer", exists, err)
			}
			if err := c.lb.EnsureLoadBalancerDeleted(ctx, "c", s); err != nil {
				t.Errorf("delete: %v; nothing of the Service's to delete is no error", err)
			}
			recs, _ := store.Load(ctx)
			if store.Writes() != before || recs[k].Fingerprint != "f" {
				t.Errorf("the foreign record was written (%d writes): %+v", store.Writes()-before, recs[k])
			}
			// Its address stays held after the refused delete.
			other := svcUID("ns", "grab", "uid-g", map[string]string{AnnotationLoadBalancerIPs: "192.0.2.5"}, 81)
			if _, err := c.lb.EnsureLoadBalancer(ctx, "c", other, nil); err == nil || !strings.Contains(err.Error(), "already in use") {
				t.Errorf("the foreign record's address: %v", err)
			}
		})
	}
	t.Run("legacy record without a UID", func(t *testing.T) {
		c, _ := New(strings.NewReader("[Pool \"p\"]\ncidr = 192.0.2.0/28\n"))
		store := NewMemStore()
		c.UseStore(store)
		legacy := c.lb.record(ownership.Identity{Cluster: "c", Namespace: "ns", Name: "web"}, s, []netip.Addr{netip.MustParseAddr("192.0.2.5")}, "", ippool.NodeNames(nil))
		_ = store.Put(ctx, k, legacy)
		before := store.Writes()
		st, err := c.lb.EnsureLoadBalancer(ctx, "c", s, nil)
		if err != nil || ips(st)[0] != "192.0.2.5" {
			t.Fatalf("adopting a legacy record: %v %v", st, err)
		}
		recs, _ := store.Load(ctx)
		if store.Writes() != before+1 || recs[k].Tags[ownership.ServiceUIDTag] != "uid-new" {
			t.Errorf("the legacy record did not get the UID in one write: %d writes, %v", store.Writes()-before, recs[k].Tags)
		}
		if _, err := c.lb.EnsureLoadBalancer(ctx, "c", s, nil); err != nil || store.Writes() != before+1 {
			t.Errorf("second ensure: %v, %d writes", err, store.Writes()-before)
		}
	})
}

// Every spelling of an address another Service holds is refused, in every field that asks for
// one, with an error naming the field (bad spelling) or saying it is in use.
func TestRequestedAddressSpellings(t *testing.T) {
	ctx := context.Background()
	lb := lbOf(t, "[Pool \"p\"]\ncidr = 192.0.2.0/28\ncidr = 2001:db8::/124\n")
	lb.c.UseStore(NewMemStore())
	holder := svcUID("ns", "holder", "uid-h", map[string]string{AnnotationLoadBalancerIPs: "192.0.2.5,2001:db8::5"}, 80)
	holder.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	holder.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
	if _, err := lb.EnsureLoadBalancer(ctx, "c", holder, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ spelling, want string }{
		{"192.0.2.5", "already in use"},
		{" 192.0.2.5 ", "already in use"},
		{"192.0.2.05", "is not an IP address"},
		{"192.000.002.005", "is not an IP address"},
		{"0xc0.0.2.5", "is not an IP address"},
		{"192.0.2.5%eth0", "has a zone"},
		{"::ffff:192.0.2.5", "IPv4-mapped"},
		{"::FFFF:C000:205", "IPv4-mapped"},
		{"0:0:0:0:0:ffff:c000:0205", "IPv4-mapped"},
		{"2001:db8::5", "already in use"},
		{"2001:DB8::5", "already in use"},
		{"2001:0db8:0000:0000:0000:0000:0000:0005", "already in use"},
		{"2001:db8:0::0:5", "already in use"},
		{"2001:db8::5%x", "has a zone"},
		{"2001:db8::5%25x", "has a zone"},
		{"2001:db8::5%", "has a zone"},
		{"[2001:db8::5]", "is not an IP address"},
	} {
		for _, field := range []string{"spec.loadBalancerIP", AnnotationLoadBalancerIPs, AnnotationKubeVIPLoadBalancerIPs} {
			s := svcUID("ns", "taker", "uid-t", nil, 81)
			s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
			s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
			if field == "spec.loadBalancerIP" {
				s.Spec.LoadBalancerIP = tc.spelling
			} else {
				s.Annotations = map[string]string{field: tc.spelling}
			}
			_, err := lb.EnsureLoadBalancer(ctx, "c", s, nil)
			switch {
			case err == nil:
				t.Errorf("%s = %q took the address", field, tc.spelling)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("%s = %q: %v, want %q", field, tc.spelling, err, tc.want)
			case tc.want != "already in use" && !strings.Contains(err.Error(), field):
				t.Errorf("%s = %q: %v does not name the field", field, tc.spelling, err)
			}
		}
	}
	// A canonical spelling of a free address is accepted and recorded canonically.
	s := svcUID("ns", "free", "uid-f", map[string]string{AnnotationLoadBalancerIPs: "2001:DB8:0::0006"}, 80)
	s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol}
	if st, err := lb.EnsureLoadBalancer(ctx, "c", s, nil); err != nil || ips(st)[0] != "2001:db8::6" {
		t.Errorf("a free address in upper case: %v %v", st, err)
	}
}

// A record or status that spells an address another way still holds it.
func TestNonCanonicalRecordHoldsItsAddress(t *testing.T) {
	ctx := context.Background()
	lb := lbOf(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.11\n")
	store := NewMemStore()
	lb.c.UseStore(store)
	_ = store.Put(ctx, "hand", Record{Name: "hand", IPs: []string{"::ffff:192.0.2.10"}})
	st, err := lb.EnsureLoadBalancer(ctx, "c", svcUID("ns", "a", "u", nil, 80), nil)
	if err != nil || ips(st)[0] != "192.0.2.11" {
		t.Errorf("got %v %v; 192.0.2.10 is held by a record spelling it IPv4-mapped", st, err)
	}
}

// A sharing key is scoped to the Service's cluster and namespace: the same key elsewhere never
// shares an address; asking for such an address is refused without naming its holder.
func TestSharingScopedToClusterAndNamespace(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoClouds(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.19\n")
	share := map[string]string{AnnotationSharedIP: "web"}
	first, err := a.EnsureLoadBalancer(ctx, "alpha", svcUID("team-a", "front", "u1", share, 80), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := ips(first)[0]
	// Same cluster and namespace, same key: shares.
	if st, err := a.EnsureLoadBalancer(ctx, "alpha", svcUID("team-a", "api", "u2", share, 443), nil); err != nil || ips(st)[0] != addr {
		t.Errorf("same namespace and key: %v %v, want %s", st, err, addr)
	}
	for _, tc := range []struct {
		name    string
		lb      *loadBalancers
		cluster string
		ns      string
	}{
		{"another namespace", a, "alpha", "team-b"},
		{"another cluster", b, "beta", "team-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The key alone: its own address (a coincidence of keys is no error).
			st, err := tc.lb.EnsureLoadBalancer(ctx, tc.cluster, svcUID(tc.ns, "own", "u3", share, 8080), nil)
			if err != nil || ips(st)[0] == addr {
				t.Errorf("same key elsewhere: %v %v; must not share %s", st, err, addr)
			}
			// The key and the address: refused, naming no Service.
			ask := map[string]string{AnnotationSharedIP: "web", AnnotationLoadBalancerIPs: addr}
			_, err = tc.lb.EnsureLoadBalancer(ctx, tc.cluster, svcUID(tc.ns, "grab", "u4", ask, 8081), nil)
			if err == nil || !strings.Contains(err.Error(), "shared only among Services of one namespace and cluster") {
				t.Fatalf("asking to share across scopes: %v", err)
			}
			for _, secret := range []string{"team-a", "front", "api", "alpha"} {
				if strings.Contains(err.Error(), secret) && !(tc.ns == "team-a" && secret == "team-a") && !(tc.cluster == "alpha" && secret == "alpha") {
					t.Errorf("the refusal names %q: %v", secret, err)
				}
			}
		})
	}
}

// Errors of the LoadBalancer methods become Warning Events that the Service's tenant reads:
// they never name a Service of another namespace or another cluster.
func TestErrorsNameNoOtherServiceOrCluster(t *testing.T) {
	ctx := context.Background()
	a, b, store := twoClouds(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n")
	secret := svcUID("secret-ns", "secret-svc", "uid-s", map[string]string{AnnotationSharedIP: "k"}, 80)
	st, err := a.EnsureLoadBalancer(ctx, "secret-cluster", secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := ips(st)[0]
	neighbour, err := b.EnsureLoadBalancer(ctx, "mine", svcUID("other-ns", "hidden-svc", "uid-n", nil, 80), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = store.Put(ctx, "dummy_mine_tenant_squat", Record{Name: "dummy_mine_tenant_squat", Tags: ownership.Identity{Cluster: "secret-cluster", Namespace: "secret-ns", Name: "secret-svc"}.Tags()})
	var errs []error
	for _, s := range []*v1.Service{
		svc("tenant", "a", held),
		svc("tenant", "b", ips(neighbour)[0]),
		svcUID("tenant", "c", "u", map[string]string{AnnotationSharedIP: "k", AnnotationLoadBalancerIPs: held}, 81),
		svcUID("tenant", "squat", "u", nil, 80),
	} {
		_, err := b.EnsureLoadBalancer(ctx, "mine", s, nil)
		errs = append(errs, err, b.UpdateLoadBalancer(ctx, "mine", s, nil))
	}
	// Exhaust the pool: the last free address goes, then the error.
	_, _ = b.EnsureLoadBalancer(ctx, "mine", svc("tenant", "fill", ""), nil)
	_, err = b.EnsureLoadBalancer(ctx, "mine", svc("tenant", "late", ""), nil)
	errs = append(errs, err)
	n := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		n++
		for _, name := range []string{"secret-ns", "secret-svc", "secret-cluster", "other-ns", "hidden-svc"} {
			if strings.Contains(err.Error(), name) {
				t.Errorf("error names %q: %v", name, err)
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d refusals; every attempt should have failed: %v", n, errs)
	}
}

// The ConfigMap store keeps this cluster's records where earlier versions did (data key
// namespace_name, same shard), so an upgrade finds them; other keys are kept verbatim.
func TestConfigMapKeysCompatible(t *testing.T) {
	s := newConfigMapStore(nil, "kube-system", "prod")
	for _, tc := range []struct{ key, data, legacyShardOf string }{
		{"dummy_prod_ns_web", "ns_web", "ns/web"},
		{"dummy_prod_kube-system_a.b", "kube-system_a.b", "kube-system/a.b"},
		{"dummy_other_ns_web", "dummy_other_ns_web", "dummy_other_ns_web"},
		{"handmade", "handmade", "handmade"},
	} {
		if got := s.dataKey(tc.key); got != tc.data {
			t.Errorf("dataKey(%s) = %s, want %s", tc.key, got, tc.data)
		}
		if got := s.storeKey(tc.data); got != tc.key {
			t.Errorf("storeKey(%s) = %s, want %s", tc.data, got, tc.key)
		}
		old := newConfigMapStore(nil, "kube-system", "") // the hash over the legacy key
		if got, want := s.shardOf(tc.key), old.shardOf(tc.legacyShardOf); got != want {
			t.Errorf("shardOf(%s) = %s, want %s (where earlier versions kept it)", tc.key, got, want)
		}
	}
}

// FuzzEnsureNeverTakesAHeldAddress: whatever a tenant writes in the address and sharing
// fields, its Service never gets an address another cluster's, another namespace's or a
// hand-made record holds, the records of others are never written, and a refusal names none
// of them.
func FuzzEnsureNeverTakesAHeldAddress(f *testing.F) {
	for _, s := range [][4]string{
		{"192.0.2.1", "", "", ""}, {"", "2001:db8::1", "", ""}, {"", "", "192.0.2.2", "k"},
		{"2001:db8::1%x", "", "", ""}, {"::ffff:192.0.2.3", "", "", ""}, {"", "192.0.2.2", "", "k"},
		{"", "", "", "k"}, {"", "2001:DB8::2", "", "hand"}, {"192.0.2.4", "2001:db8::4", "", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, lbIP, ann, kv, share string) {
		ctx := context.Background()
		victim, attacker, store := twoClouds(t, "[Pool \"p\"]\ncidr = 192.0.2.0/29\ncidr = 2001:db8::/125\n")
		dual := func(s *v1.Service) *v1.Service {
			s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
			s.Spec.IPFamilyPolicy = ptr.To(v1.IPFamilyPolicyRequireDualStack)
			return s
		}
		if _, err := victim.EnsureLoadBalancer(ctx, "victim-cluster", dual(svcUID("tenant", "web", "uid-v", map[string]string{AnnotationSharedIP: "k"}, 80)), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := attacker.EnsureLoadBalancer(ctx, "mine", dual(svcUID("neighbour-ns", "web", "uid-n", map[string]string{AnnotationSharedIP: "k"}, 80)), nil); err != nil {
			t.Fatal(err)
		}
		_ = store.Put(ctx, "hand", Record{Name: "hand", IPs: []string{"192.0.2.6", "2001:db8::6"}, SharingKey: "hand"})
		before, _ := store.Load(ctx)
		held := map[netip.Addr]bool{}
		for _, r := range before {
			for _, a := range poollb.CanonicalAddrs(r.IPs) {
				held[a] = true
			}
		}
		s := dual(svcUID("tenant", "web", "uid-a", map[string]string{AnnotationLoadBalancerIPs: ann, AnnotationKubeVIPLoadBalancerIPs: kv, AnnotationSharedIP: share}, 8080))
		s.Spec.LoadBalancerIP = lbIP
		st, err := attacker.EnsureLoadBalancer(ctx, "mine", s, nil)
		if err != nil {
			for _, name := range []string{"victim-cluster", "neighbour-ns"} {
				if strings.Contains(err.Error(), name) {
					t.Fatalf("refusal names %q: %v", name, err)
				}
			}
		} else {
			for _, in := range st.Ingress {
				if a := netip.MustParseAddr(in.IP); held[poollb.Canonical(a)] || a != poollb.Canonical(a) {
					t.Fatalf("got %s, held by another record (asked %q %q %q key %q)", in.IP, lbIP, ann, kv, share)
				}
			}
		}
		after, _ := store.Load(ctx)
		for k, r := range before {
			if snapshotOf(map[string]Record{k: r}) != snapshotOf(map[string]Record{k: after[k]}) {
				t.Fatalf("record %s changed: %+v -> %+v", k, r, after[k])
			}
		}
	})
}
