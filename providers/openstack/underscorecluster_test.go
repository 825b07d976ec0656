package openstack

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestUpstreamName(t *testing.T) {
	long := string(make([]byte, 240))
	for _, tc := range []struct {
		cluster, ns, name, want string
	}{
		{"kubernetes", "default", "web", ""}, // ccm's name is upstream's
		{"my_cluster", "default", "web", "kube_service_my_cluster_default_web"},
		{"my_cluster" + long, "default", "web", ""}, // upstream cut it: ambiguous
	} {
		id := ownership.Identity{Cluster: tc.cluster, Namespace: tc.ns, Name: tc.name, UID: "u"}
		if got := upstreamName(id); got != tc.want {
			t.Errorf("%s/%s/%s: %q, want %q", tc.cluster, tc.ns, tc.name, got, tc.want)
		}
	}
	id := ownership.Identity{Cluster: "my_cluster", Namespace: "default", Name: "web", UID: "u"}
	name := "kube_service_ccm-hashed"
	for _, tc := range []struct {
		tags        []string
		mine, other bool
	}{
		{[]string{"kube_service_my_cluster_default_web"}, true, false},
		{[]string{name}, true, false},
		{[]string{"kube_service_my_cluster_default_api"}, false, true},
		{[]string{"kube_service_my_cluster_other_web"}, false, true},
		{nil, false, false},
	} {
		if mine, other := upstreamListenerTags(id, tc.tags, name); mine != tc.mine || other != tc.other {
			t.Errorf("%v: mine %v other %v, want %v %v", tc.tags, mine, other, tc.mine, tc.other)
		}
	}
}

const underscoreCluster = "my_cluster"

func ensureIn(t *testing.T, lb cloudprovider.LoadBalancer, clusterName string, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := lb.EnsureLoadBalancer(context.Background(), clusterName, svc, nodes)
		if err == nil {
			return st
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatalf("EnsureLoadBalancer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The upstream CCM names the load balancer of a cluster "my_cluster" literally
// (kube_service_my_cluster_<ns>_<name>) and tags its listeners with that name; ccm hashes such
// a name. The takeover finds upstream's by its literal name (without the load-balancer-id
// record) or by ID (with it), proves it the Service's by upstream's description, and takes
// its listeners tagged with the literal name as the Service's: no load balancer or floating
// IP created, nothing deleted, the same address; a restart writes nothing; delete leaves
// nothing.
func TestUnderscoreClusterTakeover(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		t.Run(map[bool]string{false: "by name", true: "with load-balancer-id"}[recorded], func(t *testing.T) {
			f := newFake(t, fake.Options{})
			u := seedUpstreamCluster(t, f, 0, false)
			svc := upstreamSvc("web", v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
				v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
			us := toUpstream(svc, u.nodes, nil)
			us.Cluster = underscoreCluster
			id, addr := f.SeedUpstream(us)
			svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
			if recorded {
				adoptedByUpstream(svc, id, addr)
			}
			lb, sink := migrationCloud(t, f, "")
			if st := ensureIn(t, lb, underscoreCluster, svc, u.nodes); st.Ingress[0].IP != addr {
				t.Errorf("address %s, want upstream's %s", st.Ingress[0].IP, addr)
			}
			if c, d := servingChanges(f.Calls()); c != 0 || d != 0 || f.Calls()["octavia.CreateListener"] != 0 {
				t.Errorf("takeover: %d creates, %d deletes (%s)", c, d, f.CallSummary())
			}
			all := f.LoadBalancers()
			if len(all) != 1 || all[0].ID != id || len(all[0].Listeners) != 2 {
				t.Fatalf("load balancers after the takeover: %+v", all)
			}
			if want := lbOf(t, newTestCloud(t, f, "")).GetLoadBalancerName(context.Background(), underscoreCluster, svc); all[0].Name != want {
				t.Errorf("name %q, want ccm's %q", all[0].Name, want)
			}
			writes := f.Writes()
			lb2, _ := migrationCloud(t, f, "") // a restart
			ensureIn(t, lb2, underscoreCluster, svc, u.nodes)
			if w := f.Writes() - writes; w != 0 {
				t.Errorf("the sync after a restart made %d writes (%s)", w, f.CallSummary())
			}
			time.Sleep(100 * time.Millisecond)
			if w := warnings(sink, svc); len(w) != 0 {
				t.Errorf("Warnings %q", w)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				err := lb2.EnsureLoadBalancerDeleted(context.Background(), underscoreCluster, svc)
				if err == nil {
					break
				}
				if !isRetry(err) || time.Now().After(deadline) {
					t.Fatalf("delete: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if lbs, fips := f.LoadBalancers(), f.FloatingIPs(); len(lbs) != 0 || len(fips) != 0 {
				t.Errorf("after delete: load balancers %+v, floating IPs %+v", lbs, fips)
			}
		})
	}
}

// A listener on the Service's load balancer tagged with upstream's literal name of another
// Service of the "_" cluster stays another Service's: its port is refused, not taken.
func TestUnderscoreClusterOtherServiceListener(t *testing.T) {
	id := ownership.Identity{Cluster: underscoreCluster, Namespace: "default", Name: "web", UID: "u"}
	have := []listeners.Listener{{ID: "l1", Protocol: "TCP", ProtocolPort: 80, DefaultPoolID: "p1", Tags: []string{"kube_service_my_cluster_default_api"}}}
	want := []listenerSpec{{Protocol: "TCP", Port: 80, NodePort: 30080, PoolProtocol: "TCP", Method: "ROUND_ROBIN"}}
	if _, err := planListeners(id, &lbSpec{name: "kube_service_hashed", listeners: want}, have, nil, false); err == nil {
		t.Error("another Service's upstream listener taken")
	}
	have[0].Tags = []string{"kube_service_my_cluster_default_web"}
	if _, err := planListeners(id, &lbSpec{name: "kube_service_hashed", listeners: want}, have, nil, false); err != nil {
		t.Errorf("the Service's own upstream listener refused: %v", err)
	}
}

// Upstream's sharing in a "_" cluster: the guest's listeners and the load balancer's tags
// carry the guest's literal name. Both Services are taken over with no create or delete and
// 0 writes after; the owner's delete leaves the guest's listener, the guest's delete the
// rest.
func TestUnderscoreClusterSharedTakeover(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	owner := upstreamSvc("owner")
	us := toUpstream(owner, u.nodes, nil)
	us.Cluster = underscoreCluster
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(owner, id, addr)
	guest := upstreamSvc("guest", v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	gs := toUpstream(guest, u.nodes, nil)
	gs.Cluster = underscoreCluster
	f.ShareUpstream(id, gs)
	adoptedByUpstream(guest, id, addr)
	lb, _ := migrationCloud(t, f, "")
	for round := range 2 {
		writes := f.Writes()
		for _, svc := range []*v1.Service{owner, guest} {
			if st := ensureIn(t, lb, underscoreCluster, svc, u.nodes); st.Ingress[0].IP != addr {
				t.Errorf("round %d, %s: address %s, want %s", round, svc.Name, st.Ingress[0].IP, addr)
			}
		}
		if round == 1 && f.Writes() != writes {
			t.Errorf("the syncs after the takeover made %d writes (%s)", f.Writes()-writes, f.CallSummary())
		}
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 || f.Calls()["octavia.CreateListener"] != 0 {
		t.Errorf("takeover: %d creates, %d deletes (%s)", c, d, f.CallSummary())
	}
	del := func(svc *v1.Service) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := lb.EnsureLoadBalancerDeleted(context.Background(), underscoreCluster, svc)
			if err == nil {
				return
			}
			if !isRetry(err) || time.Now().After(deadline) {
				t.Fatalf("delete %s: %v", svc.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	del(owner)
	if all := f.LoadBalancers(); len(all) != 1 || len(all[0].Listeners) != 1 || all[0].Listeners[0].Port != 443 {
		t.Errorf("after the owner's delete: %+v", all)
	}
	del(guest)
	if lbs, fips := f.LoadBalancers(), f.FloatingIPs(); len(lbs) != 0 || len(fips) != 0 {
		t.Errorf("after the last delete: load balancers %+v, floating IPs %+v", lbs, fips)
	}
}

// A shared load balancer taken over from upstream under a cluster name with "_" and renamed
// keeps the owner's literal name among its tags: the owner counts once for max-shared-lb.
func TestRenamedSharedLBCountsItsOwnerOnce(t *testing.T) {
	owner := ownership.Identity{Cluster: "my_cluster", Namespace: "ns", Name: "owner", UID: "u1"}
	guest := ownership.Identity{Cluster: "my_cluster", Namespace: "ns", Name: "guest", UID: "u2"}
	third := ownership.Identity{Cluster: "my_cluster", Namespace: "ns", Name: "third", UID: "u3"}
	tags := []string{upstreamName(owner), upstreamName(guest)}
	for k, v := range owner.Tags() {
		tags = append(tags, k+"="+v)
	}
	lb := &loadbalancers.LoadBalancer{ID: "lb-1", Name: lbname.Octavia.Name(owner.Cluster, owner.Namespace, owner.Name), Tags: tags}
	if u := users(lb); len(u) != 2 {
		t.Errorf("users %q, want the owner and the guest once each", u)
	}
	name3 := lbname.Octavia.Name(third.Cluster, third.Namespace, third.Name)
	if err := checkShare(third, &lbSpec{name: name3}, name3, lb, 3); err != nil {
		t.Errorf("a third Service with max-shared-lb = 3: %v", err)
	}
	if err := checkShare(third, &lbSpec{name: name3}, name3, lb, 2); err == nil {
		t.Error("a third Service with max-shared-lb = 2 was let in")
	}
}
