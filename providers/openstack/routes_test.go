package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// foreignHop is an address on the router's subnet that no machine of the tests has: the
// operator's route goes through it.
const foreignHop = "10.0.255.250"

// router is the harness's one router, shared by every cluster of a test; made on first use.
func (h *harness) router() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.routerID == "" {
		h.routerID = h.fake.AddRouter("k8s-router")
	}
	return h.routerID
}

// RouteCloud is a cloud of cluster with [Route] router-id set to the harness's router.
func (h *harness) RouteCloud(t cloudtest.T, cluster string, cidrs []netip.Prefix) cloudprovider.Interface {
	c := newTestCloud(t, h.fake, "floating-network-id = "+fake.PublicNetworkID+"\n"+h.extra+"\n[Route]\nrouter-id = "+h.router()+"\n")
	c.UseClusterName(cluster)
	c.UseClusterCIDRs(cidrs)
	c.Initialize(h.events, h.stop)
	return c
}

func (h *harness) SharedDestinations() bool { return true }

func (h *harness) AddForeignRoute(_ cloudtest.T, dest string) {
	id := h.router()
	h.fake.SetRouterRoutes(id, append(h.fake.RouterRoutes(id), fake.RouterRoute{Destination: dest, NextHop: foreignHop}))
}

func (h *harness) HeldRoutes(cloudtest.T) []string {
	h.mu.Lock()
	names := map[string]string{foreignHop: "foreign"}
	for name, ip := range h.ips {
		names[ip] = name
	}
	h.mu.Unlock()
	var out []string
	for _, r := range h.fake.RouterRoutes(h.router()) {
		via := names[r.NextHop]
		if via == "" {
			via = r.NextHop
		}
		out = append(out, r.Destination+" via "+via)
	}
	sort.Strings(out)
	return out
}

func (h *harness) DeleteRouteByHand(_ cloudtest.T, dest, node string) {
	h.mu.Lock()
	ip := h.ips[node]
	h.mu.Unlock()
	id := h.router()
	h.fake.SetRouterRoutes(id, slices.DeleteFunc(h.fake.RouterRoutes(id), func(r fake.RouterRoute) bool {
		return r.Destination == dest && r.NextHop == ip
	}))
}

var _ cloudtest.RouteHarness = (*harness)(nil)

func (h *harness) nodeProviderID(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.providerIDs[name]
}

// routeEnv is one cluster's cloud with routes, and its Nodes in an API server of its own.
type routeEnv struct {
	h      *harness
	c      *Cloud
	rs     cloudprovider.Routes
	client *k8sfake.Clientset
	nodes  map[string]*v1.Node
}

func newRouteEnv(t *testing.T, o fake.Options, cluster string) *routeEnv {
	h := newHarnessWith(t, "", o)
	e := &routeEnv{h: h, client: k8sfake.NewClientset(), nodes: map[string]*v1.Node{}}
	e.restart(t, cluster)
	return e
}

// restart is a new process: a new cloud of cluster over the same fake and Nodes, with a new
// informer.
func (e *routeEnv) restart(t *testing.T, cluster string) {
	e.c = e.h.RouteCloud(t, cluster, []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}).(*Cloud)
	f := informers.NewSharedInformerFactory(e.client, 0)
	e.c.SetInformers(f)
	f.Start(make(chan struct{}))
	f.WaitForCacheSync(make(chan struct{}))
	e.rs, _ = e.c.Routes()
}

// addNode makes a server and its Node, and waits until the informer has it.
func (e *routeEnv) addNode(t *testing.T, name string) *v1.Node {
	t.Helper()
	n, md := e.h.AddInstance(t, name)
	n.Spec.ProviderID, n.Status.Addresses = md.ProviderID, md.NodeAddresses
	if _, err := e.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.nodes[name] = n
	e.h.mu.Lock()
	e.h.providerIDs[name] = md.ProviderID
	e.h.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := e.c.rt.node(types.NodeName(n.Name)); err == nil {
			return n
		}
	}
	t.Fatalf("the informer did not see Node %s", name)
	return nil
}

func (e *routeEnv) deleteNode(t *testing.T, name string) {
	t.Helper()
	if err := e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(e.nodes, name)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := e.c.rt.node(types.NodeName(name)); err != nil {
			return
		}
	}
	t.Fatalf("the informer still has Node %s", name)
}

func (e *routeEnv) create(t *testing.T, node, cidr string) {
	t.Helper()
	if err := e.rs.CreateRoute(context.Background(), "c", "hint", &cloudprovider.Route{TargetNode: types.NodeName(node), DestinationCIDR: cidr}); err != nil {
		t.Fatalf("CreateRoute %s -> %s: %v", cidr, node, err)
	}
}

func (e *routeEnv) list(t *testing.T) []*cloudprovider.Route {
	t.Helper()
	rs, err := e.rs.ListRoutes(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (e *routeEnv) portOf(t *testing.T, node string) string {
	t.Helper()
	sid, err := serverID(e.h.nodeProviderID(node))
	if err != nil {
		t.Fatal(err)
	}
	return e.h.fake.ServerPortID(sid)
}

func pairIPs(pairs []fake.AddressPair) []string {
	var out []string
	for _, p := range pairs {
		out = append(out, p.IPAddress)
	}
	return out
}

// A route allows its Pod CIDR on the Node's port, and its deletion takes the pair away; a
// Node deleted with its server running loses both too. Nothing is written twice.
func TestRoutesAllowThePodCIDROnTheNodePort(t *testing.T) {
	e := newRouteEnv(t, fake.Options{}, "c")
	e.addNode(t, "n1")
	e.addNode(t, "n2")
	e.create(t, "n1", "10.244.1.0/24")
	e.create(t, "n2", "10.244.2.0/24")
	p1 := e.portOf(t, "n1")
	if got := pairIPs(e.h.fake.PortAddressPairs(p1)); !slices.Equal(got, []string{"10.244.1.0/24"}) {
		t.Errorf("n1's port allows %v, want [10.244.1.0/24]", got)
	}
	tags := e.h.fake.RouterTags(e.h.router())
	if want := "ccm-route.c.10.244.1.0_24.via." + e.h.ips["n1"]; !slices.Contains(tags, want) {
		t.Errorf("router tags %v lack the record %s", tags, want)
	}
	w := e.h.fake.Writes()
	e.create(t, "n1", "10.244.1.0/24")
	if d := e.h.fake.Writes() - w; d != 0 {
		t.Errorf("creating a route in place made %d writes", d)
	}
	for _, r := range e.list(t) {
		if r.TargetNode == "n1" {
			if err := e.rs.DeleteRoute(context.Background(), "c", r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := e.h.fake.PortAddressPairs(p1); len(got) != 0 {
		t.Errorf("after DeleteRoute n1's port still allows %v", pairIPs(got))
	}
	e.deleteNode(t, "n2")
	listed := e.list(t)
	if len(listed) != 1 || !listed[0].Blackhole {
		t.Fatalf("after n2's Node went, ListRoutes = %v; want its route as a blackhole", routeNames(listed))
	}
	if err := e.rs.DeleteRoute(context.Background(), "c", listed[0]); err != nil {
		t.Fatal(err)
	}
	if rs, tags, pairs := e.h.fake.RouterRoutes(e.h.router()), e.h.fake.RouterTags(e.h.router()), e.h.fake.PortAddressPairs(e.portOf(t, "n2")); len(rs) != 0 || len(tags) != 0 || len(pairs) != 0 {
		t.Errorf("after the deleted Node's route was deleted: routes %v, tags %v, n2's port pairs %v; want none", rs, tags, pairs)
	}
}

func routeNames(rs []*cloudprovider.Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name+" -> "+string(r.TargetNode))
	}
	return out
}

// Without extraroute-atomic each route is a compare-and-swap of the router's whole list: the
// route controller's concurrent creates all land, and a route another writer adds meanwhile
// (the operator's) is kept.
func TestRoutesWithoutExtraRouteAtomic(t *testing.T) {
	e := newRouteEnv(t, fake.Options{NoExtraRouteAtomic: true}, "c")
	const n = 12
	for i := range n {
		e.addNode(t, fmt.Sprintf("n%d", i))
	}
	e.h.AddForeignRoute(t, "10.244.200.0/24")
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.rs.CreateRoute(context.Background(), "c", "hint", &cloudprovider.Route{TargetNode: types.NodeName(fmt.Sprintf("n%d", i)), DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	held := e.h.HeldRoutes(t)
	if len(held) != n+1 || !slices.Contains(held, "10.244.200.0/24 via foreign") {
		t.Errorf("the router holds %v; want %d routes and the operator's", held, n)
	}
	calls := e.h.fake.Calls()
	// A record tag added meanwhile also moves the router's revision: a PUT may be made again.
	if calls["neutron.UpdateRouter"] < n || calls["neutron.UpdateRouterAddExtraRoutes"] != 0 {
		t.Errorf("route writes: %d PUTs of the list, %d atomic adds; want at least %d and 0", calls["neutron.UpdateRouter"], calls["neutron.UpdateRouterAddExtraRoutes"], n)
	}
	for _, r := range e.list(t) {
		if err := e.rs.DeleteRoute(context.Background(), "c", r); err != nil {
			t.Fatal(err)
		}
	}
	if held := e.h.HeldRoutes(t); !slices.Equal(held, []string{"10.244.200.0/24 via foreign"}) {
		t.Errorf("after deleting its routes the router holds %v; want only the operator's", held)
	}
}

// A route the route controller did not list (a name that carries no hop) and a destination
// outside the cluster CIDR are refused before any write.
func TestRoutesRefusedBeforeAnyWrite(t *testing.T) {
	e := newRouteEnv(t, fake.Options{}, "c")
	e.addNode(t, "n1")
	w := e.h.fake.Writes()
	if err := e.rs.DeleteRoute(context.Background(), "c", &cloudprovider.Route{Name: "10.244.1.0/24", DestinationCIDR: "10.244.1.0/24"}); err == nil {
		t.Error("DeleteRoute of a route named without its hop succeeded")
	}
	err := e.rs.CreateRoute(context.Background(), "c", "hint", &cloudprovider.Route{TargetNode: "n1", DestinationCIDR: "10.0.0.0/8"})
	if err == nil || !strings.Contains(err.Error(), "outside the cluster CIDRs") {
		t.Errorf("CreateRoute outside the cluster CIDR: %v", err)
	}
	if err := e.rs.CreateRoute(context.Background(), "c", "hint", &cloudprovider.Route{TargetNode: "nobody", DestinationCIDR: "10.244.1.0/24"}); err == nil {
		t.Error("CreateRoute for an unknown Node succeeded")
	}
	if d := e.h.fake.Writes() - w; d != 0 {
		t.Errorf("refused requests made %d writes", d)
	}
}

// Without [Route] router-id the cloud has no routes, as upstream.
func TestRoutesOnlyWithARouter(t *testing.T) {
	h := newHarness(t, "")
	if _, ok := h.NewCloud(t).Routes(); ok {
		t.Error("Routes() without [Route] router-id")
	}
	if _, ok := h.RouteCloud(t, "c", nil).Routes(); !ok {
		t.Error("no Routes() with [Route] router-id")
	}
}

// The route writes for 100 Nodes, counted at the fake (docs/performance.md):
//
//	go test -count=1 -v -run TestRouteWritesFor100Nodes ./providers/openstack/
//
// A route costs its record, itself and its port's address pair; a restart costs none.
func TestRouteWritesFor100Nodes(t *testing.T) {
	const n = 100
	e := newRouteEnv(t, fake.Options{MaxRoutes: -1}, "c")
	for i := range n {
		e.addNode(t, fmt.Sprintf("n%03d", i))
	}
	pass := func(what string) (writes, reads int) {
		t.Helper()
		w, all := e.h.fake.Writes(), sum(e.h.fake.Calls())
		listed := e.list(t)
		for i := range len(e.nodes) {
			name := fmt.Sprintf("n%03d", i)
			if !slices.ContainsFunc(listed, func(r *cloudprovider.Route) bool { return string(r.TargetNode) == name }) {
				e.create(t, name, fmt.Sprintf("10.244.%d.%d/28", i/16, i%16*16))
			}
		}
		writes = e.h.fake.Writes() - w
		reads = sum(e.h.fake.Calls()) - all - writes
		t.Logf("%-28s %4d writes %4d reads", what, writes, reads)
		return writes, reads
	}
	if w, _ := pass("start, 100 Nodes"); w != 3*n {
		t.Errorf("start: %d writes, want %d (record, route, address pair each)", w, 3*n)
	}
	if w, _ := pass("next pass"); w != 0 {
		t.Errorf("next pass: %d writes, want 0", w)
	}
	e.restart(t, "c")
	if w, _ := pass("first pass after a restart"); w != 0 {
		t.Errorf("restart: %d writes, want 0", w)
	}
	e.addNode(t, fmt.Sprintf("n%03d", n))
	if w, _ := pass("a Node added"); w != 3 {
		t.Errorf("a Node added: %d writes, want 3", w)
	}
}

func sum(calls map[string]int) int {
	total := 0
	for op, v := range calls {
		if op != "keystone.CreateToken" {
			total += v
		}
	}
	return total
}
