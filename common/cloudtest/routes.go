package cloudtest

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// RouteHarness is what the routes group needs from a simulator whose clouds have Routes().
type RouteHarness interface {
	Harness
	// RouteCloud is a cloud of cluster clusterName (handed over as ccm does, with the cluster
	// CIDRs) whose routes live where every other RouteCloud's of the harness do: one router,
	// one route table, shared by every cluster of the test.
	RouteCloud(t T, clusterName string, clusterCIDRs []netip.Prefix) cloudprovider.Interface
	// SharedDestinations reports whether the cloud holds two routes to one destination through
	// different hops (a Neutron router does; an EC2 route table does not).
	SharedDestinations() bool
	// AddForeignRoute adds a route to destination through a hop that is no Node of the test,
	// through the simulator's API, as an operator or another tool would.
	AddForeignRoute(t T, destination string)
	// HeldRoutes is every route the cloud holds where the clouds route, each as
	// "<destination> via <X>", where X is the name AddInstance was given for the machine the
	// hop belongs to, or "foreign" for AddForeignRoute's.
	HeldRoutes(t T) []string
	// DeleteRouteByHand removes the route to destination through node's machine, through the
	// simulator's API, as an operator at the console would.
	DeleteRouteByHand(t T, destination, node string)
}

var clusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}

func routeHarness(t T, c Config) RouteHarness {
	t.Helper()
	h, ok := c.Harness.(RouteHarness)
	if !ok {
		t.Fatalf("the provider's cloud has Routes() but the harness does not implement cloudtest.RouteHarness")
	}
	return h
}

// routeCluster is one cluster as the route controller sees it: its Nodes (in an API server of
// its own, which the provider reads through an informer as in ccm) and its cloud's Routes.
type routeCluster struct {
	name   string
	h      RouteHarness
	client *fake.Clientset
	nodes  map[string]*v1.Node
	routes cloudprovider.Routes
	// lister is the Node lister of the informer factory the provider was handed: what it
	// sees, once synced.
	lister corelisters.NodeLister
}

func newRouteCluster(t T, h RouteHarness, name string) *routeCluster {
	rc := &routeCluster{name: name, h: h, client: fake.NewClientset(), nodes: map[string]*v1.Node{}}
	rc.restart(t)
	return rc
}

// restart is a new process: a new cloud over the same cloud state, with a new informer.
func (rc *routeCluster) restart(t T) {
	t.Helper()
	cloud := rc.h.RouteCloud(t, rc.name, clusterCIDRs)
	rs, ok := cloud.Routes()
	if !ok || rs == nil {
		t.Fatalf("RouteCloud's Routes() is not implemented")
	}
	rc.routes = rs
	f := informers.NewSharedInformerFactory(rc.client, 0)
	if u, ok := cloud.(cloudprovider.InformerUser); ok {
		u.SetInformers(f)
	}
	rc.lister = f.Core().V1().Nodes().Lister()
	stop := make(chan struct{}) // the informer lives as long as the test binary
	f.Start(stop)
	f.WaitForCacheSync(stop)
}

// addNode makes a machine and its Node with Pod CIDR podCIDR.
func (rc *routeCluster) addNode(t T, name, podCIDR string) {
	t.Helper()
	node, md := rc.h.AddInstance(t, name)
	node = node.DeepCopy()
	node.Spec.ProviderID, node.Spec.PodCIDR, node.Spec.PodCIDRs = md.ProviderID, podCIDR, []string{podCIDR}
	node.Status.Addresses = md.NodeAddresses
	if _, err := rc.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	rc.nodes[name] = node
}

func (rc *routeCluster) deleteNode(t T, name string) {
	t.Helper()
	if err := rc.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Node %s: %v", name, err)
	}
	delete(rc.nodes, name)
}

// settle waits until the informer the provider was handed sees the cluster's Nodes as rc
// holds them.
func (rc *routeCluster) settle(t T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		seen, _ := rc.lister.List(labels.Everything())
		names := map[string]bool{}
		for _, n := range seen {
			names[n.Name] = true
		}
		same := len(names) == len(rc.nodes)
		for n := range rc.nodes {
			same = same && names[n]
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Node informer did not see the cluster's %d Nodes within 5s", len(rc.nodes))
		}
	}
}

// reconcile does what the library's route controller does on each pass: a route for every
// Node's Pod CIDR it does not list, and the deletion of every listed route in the cluster CIDR
// that is a blackhole or whose Node does not have it as its Pod CIDR. It returns the calls'
// errors.
func (rc *routeCluster) reconcile(t T) []error {
	t.Helper()
	rc.settle(t)
	listed, err := rc.routes.ListRoutes(ctx, rc.name)
	if err != nil {
		return []error{fmt.Errorf("ListRoutes: %w", err)}
	}
	var errs []error
	for _, n := range rc.nodes {
		if !slices.ContainsFunc(listed, func(r *cloudprovider.Route) bool {
			return string(r.TargetNode) == n.Name && r.DestinationCIDR == n.Spec.PodCIDR && !r.Blackhole
		}) {
			if err := rc.routes.CreateRoute(ctx, rc.name, string(n.UID), &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: n.Spec.PodCIDR}); err != nil {
				errs = append(errs, fmt.Errorf("CreateRoute %s -> %s: %w", n.Spec.PodCIDR, n.Name, err))
			}
		}
	}
	for _, r := range listed {
		p, err := netip.ParsePrefix(r.DestinationCIDR)
		if err != nil || !clusterCIDRs[0].Contains(p.Addr()) {
			continue
		}
		if n := rc.nodes[string(r.TargetNode)]; r.Blackhole || n == nil || n.Spec.PodCIDR != r.DestinationCIDR {
			if err := rc.routes.DeleteRoute(ctx, rc.name, r); err != nil {
				errs = append(errs, fmt.Errorf("DeleteRoute %s: %w", r.Name, err))
			}
		}
	}
	return errs
}

// mustReconcile reconciles and returns the writes it took.
func (rc *routeCluster) mustReconcile(t T, when string) int {
	t.Helper()
	before := rc.h.Writes()
	if errs := rc.reconcile(t); len(errs) > 0 {
		t.Fatalf("%s: the route controller's pass failed: %v", when, errs)
	}
	return rc.h.Writes() - before
}

func heldHas(t T, h RouteHarness, want ...string) (missing []string) {
	held := h.HeldRoutes(t)
	for _, w := range want {
		if !slices.Contains(held, w) {
			missing = append(missing, w)
		}
	}
	return missing
}
