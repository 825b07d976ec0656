package cloudtest

import (
	"fmt"
	"sort"
	"strings"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Orphan collection (common/servicecontroller): a provider lists the load balancers carrying
// its cluster's ownership marks, and nothing else, without writing; and deletes one only while
// the cloud's marks still name the owner the listing saw.

const (
	orphanCluster      = "cloudtest-orphan-a"
	otherOrphanCluster = "cloudtest-orphan-b"
	orphanNamespace    = "orphan-ns"
)

func ownedLister(t T, cloud cloudprovider.Interface) servicecontroller.OwnedLister {
	t.Helper()
	l, ok := cloud.(servicecontroller.OwnedLister)
	if !ok {
		t.Fatalf("the cloud does not implement servicecontroller.OwnedLister: ccm cannot find its orphaned load balancers")
	}
	return l
}

func listOwned(t T, l servicecontroller.OwnedLister, cluster string) []servicecontroller.OwnedLoadBalancer {
	t.Helper()
	lbs, err := l.OwnedLoadBalancers(ctx, cluster)
	if err != nil {
		t.Fatalf("OwnedLoadBalancers(%s): %v", cluster, err)
	}
	return lbs
}

// owners is the sorted "cluster ns/name uid" of each listed load balancer.
func owners(lbs []servicecontroller.OwnedLoadBalancer) []string {
	var out []string
	for _, lb := range lbs {
		out = append(out, fmt.Sprintf("%s %s %s", lb.Owner.Cluster, lb.Owner.Service(), lb.Owner.UID))
	}
	sort.Strings(out)
	return out
}

func orphansListedAndChecked(t T, c Config) {
	h := hostile(t, c)
	a, b := h.NewCloudFor(t, orphanCluster), h.NewCloudFor(t, otherOrphanCluster)
	nodes := twoNodes(t, c, "cloudtest-orphans")
	web, api := sameNamedService(orphanNamespace, "web", "uid-web"), sameNamedService(orphanNamespace, "api", "uid-api")
	ensure(t, loadBalancer(t, a), Config{Harness: h, ClusterName: orphanCluster, Pending: c.Pending}, web, nodes)
	ensure(t, loadBalancer(t, a), Config{Harness: h, ClusterName: orphanCluster, Pending: c.Pending}, api, nodes)
	// The other cluster has a Service of the same namespace/name.
	ensure(t, loadBalancer(t, b), Config{Harness: h, ClusterName: otherOrphanCluster, Pending: c.Pending}, sameNamedService(orphanNamespace, "web", "uid-b-web"), nodes)

	la := ownedLister(t, a)
	writes := h.Writes()
	listed := listOwned(t, la, orphanCluster)
	if n := h.Writes() - writes; n != 0 {
		t.Errorf("listing owned load balancers made %d writes", n)
	}
	want := []string{orphanCluster + " orphan-ns/api uid-api", orphanCluster + " orphan-ns/web uid-web"}
	if got := owners(listed); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cluster %s lists %q, want exactly its own load balancers %q", orphanCluster, got, want)
	}
	if got := owners(listOwned(t, ownedLister(t, b), otherOrphanCluster)); len(got) != 1 || got[0] != otherOrphanCluster+" orphan-ns/web uid-b-web" {
		t.Errorf("cluster %s lists %q, want its one load balancer", otherOrphanCluster, got)
	}
	var webLB, apiLB servicecontroller.OwnedLoadBalancer
	for _, lb := range listed {
		if lb.Owner.Name == "web" {
			webLB = lb
		} else {
			apiLB = lb
		}
	}

	// Deletes whose owner the cloud's marks do not prove: web as if the listing had seen
	// another Service of that name, web's entry as another cluster's. Refused, nothing touched.
	before := h.Snapshot(t)
	replaced := webLB
	replaced.Owner.UID = "uid-web-made-again"
	foreign := webLB
	foreign.Owner.Cluster = otherOrphanCluster
	for _, tc := range []struct {
		name, cluster string
		lb            servicecontroller.OwnedLoadBalancer
	}{
		{"a load balancer whose marks name another UID", orphanCluster, replaced},
		{"this cluster's load balancer, deleted as another cluster's", otherOrphanCluster, foreign},
	} {
		if err := ownedLister(t, h.NewCloudFor(t, tc.cluster)).DeleteOwnedLoadBalancer(ctx, tc.cluster, tc.lb); err == nil {
			t.Errorf("DeleteOwnedLoadBalancer of %s succeeded; it must check the marks again and refuse", tc.name)
		}
	}
	if after := h.Snapshot(t); after != before {
		t.Fatalf("refused deletes changed the cloud:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Its own: deleted, from a new process (as the collector after a restart) too.
	lister := ownedLister(t, h.NewCloudFor(t, orphanCluster))
	if err := again(c, func() error { return lister.DeleteOwnedLoadBalancer(ctx, orphanCluster, apiLB) }); err != nil {
		t.Fatalf("DeleteOwnedLoadBalancer(%s): %v", apiLB.ID, err)
	}
	if _, ok := h.LoadBalancerTags(t, orphanCluster, api); ok {
		t.Errorf("the deleted orphan %s is still in the cloud", apiLB.ID)
	}
	if got := owners(listOwned(t, la, orphanCluster)); len(got) != 1 || got[0] != want[1] {
		t.Errorf("after the delete %s lists %q, want %q", orphanCluster, got, want[1:])
	}
	if _, ok := h.LoadBalancerTags(t, otherOrphanCluster, sameNamedService(orphanNamespace, "web", "uid-b-web")); !ok {
		t.Errorf("the other cluster's load balancer is gone")
	}
	// Deleting it again (a second round, another replica) is not an error.
	if err := again(c, func() error { return la.DeleteOwnedLoadBalancer(ctx, orphanCluster, apiLB) }); err != nil {
		t.Errorf("deleting the orphan again: %v", err)
	}
	if _, ok := h.LoadBalancerTags(t, orphanCluster, web); !ok {
		t.Errorf("%s's own load balancer web is gone", orphanCluster)
	}
}
