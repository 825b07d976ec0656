package cloudtest

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// MigrationHarness is what the migration group needs from a simulator on top of Harness: it
// can seed the state the cloud's upstream CCM leaves behind, and count at the simulator what
// a takeover must never do. Optional while providers adopt it: a harness without it is
// reported and the check does nothing.
type MigrationHarness interface {
	Harness
	// Events is the sink every cloud of the harness was initialised with.
	Events() *EventSink
	// SeedUpstream writes into the simulator, through its own API and never through the
	// provider, what the upstream CCM leaves for svcs of cluster clusterName with members
	// nodes: load balancers with upstream's names, tags and descriptions, listeners, pools,
	// health checks, target groups, security groups and rules, floating IPs, following
	// upstream's code. It returns each Service as the API server then holds it: the
	// annotations upstream writes, and the status with the address or host name it served.
	SeedUpstream(t T, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service
	// MigrationCounts are the simulator's counts so far of load balancer creates, and of
	// deletes of what serves traffic (load balancers, listeners, pools or target groups,
	// members, floating or elastic IPs, DNS records).
	MigrationCounts() (lbCreates, servingDeletes int)
	// Leftovers lists what upstream made for svc that the provider no longer uses (a
	// security group it replaced with its own, ...): empty once the provider's replacement
	// serves. Each item names the object.
	Leftovers(t T, clusterName string, svc *v1.Service) []string
	// Remains lists everything the cloud holds for svc, made by upstream or the provider.
	Remains(t T, clusterName string, svc *v1.Service) []string
}

// migrationServices is K, the Services seeded the upstream way.
const migrationServices = 3

// migrationTakesOver: from the state upstream's CCM leaves for K Services, the first syncs of
// a fresh process create no load balancer, delete nothing that serves, keep every address and
// host name, report no Warning, and leave nothing of upstream's unused; the next syncs write
// nothing. Then one Service gets a second port (same address, nothing of upstream's left) and
// one is deleted (nothing of it left in the cloud).
func migrationTakesOver(t T, c Config) {
	h, ok := c.Harness.(MigrationHarness)
	if !ok {
		t.Logf("the harness does not implement cloudtest.MigrationHarness yet: migration not checked")
		return
	}
	nodes := twoNodes(t, c, "cloudtest-migrate")
	var svcs []*v1.Service
	for range migrationServices {
		svcs = append(svcs, newService("migrate"))
	}
	svcs = h.SeedUpstream(t, c.ClusterName, svcs, nodes)
	if len(svcs) != migrationServices {
		t.Fatalf("SeedUpstream returned %d Services, want %d", len(svcs), migrationServices)
	}
	want := make([]string, len(svcs))
	for i, svc := range svcs {
		if want[i] = address(&svc.Status.LoadBalancer); want[i] == "" {
			t.Fatalf("SeedUpstream left %s without an address in its status", svc.Name)
		}
	}
	lb := loadBalancer(t, h.NewCloud(t))
	creates0, deletes0 := h.MigrationCounts()
	for i, svc := range svcs {
		st := ensure(t, lb, c, svc, nodes)
		if got := address(st); got != want[i] {
			t.Errorf("%s: the takeover moved the address from %s to %s", svc.Name, want[i], got)
		}
		svc.Status.LoadBalancer = *st
	}
	creates, deletes := h.MigrationCounts()
	if creates != creates0 || deletes != deletes0 {
		t.Errorf("the takeover of %d Services made %d load balancer creates and %d deletes of serving resources, want 0 and 0",
			len(svcs), creates-creates0, deletes-deletes0)
	}
	for _, svc := range svcs {
		if left := h.Leftovers(t, c.ClusterName, svc); len(left) != 0 {
			t.Errorf("%s: after the takeover, upstream's %q are still there though unused", svc.Name, left)
		}
	}
	before := h.Writes()
	for _, svc := range svcs {
		ensure(t, lb, c, svc, nodes)
	}
	if w := h.Writes() - before; w != 0 {
		t.Errorf("the syncs after the takeover made %d writes, want 0", w)
	}
	time.Sleep(100 * time.Millisecond) // the Event broadcaster
	for _, svc := range svcs {
		for _, e := range h.Events().On(svc) {
			if strings.HasPrefix(e, v1.EventTypeWarning) {
				t.Errorf("%s: the takeover reported %q", svc.Name, e)
			}
		}
	}

	updated := svcs[0]
	updated.Spec.Ports = append(updated.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	if got := address(ensure(t, lb, c, updated, nodes)); got != want[0] {
		t.Errorf("%s: a second port moved the address from %s to %s", updated.Name, want[0], got)
	}
	if n, _ := h.MigrationCounts(); n != creates0 {
		t.Errorf("%s: a second port created a load balancer", updated.Name)
	}
	if left := h.Leftovers(t, c.ClusterName, updated); len(left) != 0 {
		t.Errorf("%s: after an update, upstream's %q are still there", updated.Name, left)
	}

	gone := svcs[1]
	deleteUntilGone(t, lb, c, gone)
	if rest := h.Remains(t, c.ClusterName, gone); len(rest) != 0 {
		t.Errorf("%s: after its delete the cloud still holds %q", gone.Name, rest)
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, c.ClusterName, gone); err != nil || exists {
		t.Errorf("%s: GetLoadBalancer after the delete = (%v, %v), want (false, nil)", gone.Name, exists, err)
	}
	if rest := h.Remains(t, c.ClusterName, svcs[2]); len(rest) == 0 {
		t.Errorf("%s: deleting %s took the other Service's objects too", svcs[2].Name, gone.Name)
	}
}

// address is the first ingress IP or host name.
func address(st *v1.LoadBalancerStatus) string {
	if st == nil || len(st.Ingress) == 0 {
		return ""
	}
	if st.Ingress[0].IP != "" {
		return st.Ingress[0].IP
	}
	return st.Ingress[0].Hostname
}

// deleteUntilGone calls EnsureLoadBalancerDeleted as the service controller does: again after
// an error (a load balancer still being deleted), for a few seconds.
func deleteUntilGone(t T, lb cloudprovider.LoadBalancer, c Config, svc *v1.Service) {
	t.Helper()
	deadline := time.Now().Add(max(10*time.Second, c.Pending))
	for {
		err := lb.EnsureLoadBalancerDeleted(ctx, c.ClusterName, svc)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("EnsureLoadBalancerDeleted(%s): %v", svc.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
