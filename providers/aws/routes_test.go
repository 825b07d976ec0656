package aws

import (
	"context"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

var podCIDRs = []netip.Prefix{netip.MustParsePrefix("100.64.0.0/16")}

// TestRoutes: the cluster's own table (found by its tag), without a Node informer: routes are
// made, listed by the Nodes' instances, replaced when their instance is gone, and deleted.
func TestRoutes(t *testing.T) {
	h := newHarness(t, "routes")
	ctx := context.Background()
	c := h.routeCloud(t, h.cfg+"[Global]\nInstanceCacheTTL = 0s\n", podCIDRs)
	rs, ok := c.Routes()
	if !ok {
		t.Fatal("Routes() not implemented")
	}
	idA, _ := h.machine("route-a")
	idB, _ := h.machine("route-b")

	for _, r := range []*cloudprovider.Route{{TargetNode: "route-a", DestinationCIDR: "100.64.1.0/24"}, {TargetNode: "route-b", DestinationCIDR: "100.64.2.0/24"}} {
		if err := rs.CreateRoute(ctx, "routes", "hint", r); err != nil {
			t.Fatalf("CreateRoute %v: %v", r, err)
		}
	}
	if h.fake.SourceDestCheck(idA) || h.fake.SourceDestCheck(idB) {
		t.Error("source/destination check still on")
	}
	w := h.fake.Writes()
	if err := rs.CreateRoute(ctx, "routes", "hint", &cloudprovider.Route{TargetNode: "route-a", DestinationCIDR: "100.64.1.0/24"}); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("re-creating an existing route made %d writes", d)
	}
	list, err := rs.ListRoutes(ctx, "routes")
	if err != nil {
		t.Fatal(err)
	}
	wantList := []string{"100.64.1.0/24 via " + idA + " -> route-a", "100.64.2.0/24 via " + idB + " -> route-b"}
	if got := listed(list); !slices.Equal(got, wantList) {
		t.Errorf("ListRoutes = %v, want %v (gateway routes must not be listed)", got, wantList)
	}

	// b's instance terminates: its route is a blackhole, and a new node takes the CIDR over.
	h.fake.SetInstanceState(idB, "terminated")
	list, _ = rs.ListRoutes(ctx, "routes")
	for _, r := range list {
		if r.DestinationCIDR == "100.64.2.0/24" && !r.Blackhole {
			t.Errorf("route to a terminated instance not a blackhole: %+v", r)
		}
	}
	idC, _ := h.machine("route-c")
	if err := rs.CreateRoute(ctx, "routes", "hint", &cloudprovider.Route{TargetNode: "route-c", DestinationCIDR: "100.64.2.0/24"}); err != nil {
		t.Fatalf("replacing a blackhole: %v", err)
	}
	routeA := &cloudprovider.Route{Name: "100.64.1.0/24 via " + idA, DestinationCIDR: "100.64.1.0/24"}
	if err := rs.DeleteRoute(ctx, "routes", routeA); err != nil {
		t.Fatal(err)
	}
	if err := rs.DeleteRoute(ctx, "routes", routeA); err != nil {
		t.Errorf("deleting a missing route: %v", err)
	}
	tbl, _ := h.fake.RouteTable(fakeaws.MainRouteTable)
	want := []fakeaws.Route{{CIDR: "10.0.0.0/16", Gateway: "local"}, {CIDR: "100.64.2.0/24", Instance: idC}}
	if !slices.Equal(tbl.Routes, want) {
		t.Errorf("route table %v, want %v", tbl.Routes, want)
	}
	if n := h.fake.Operations()["ec2:CreateTags"]; n != 0 {
		t.Errorf("%d CreateTags: the cluster's own table records its routes, no instance should have been tagged", n)
	}

	// Without a tagged table (and no RouteTableID) routes fail with a clear error.
	other := newHarness(t, "untagged")
	oc := other.routeCloud(t, other.configFor("nosuch"), podCIDRs)
	ors, _ := oc.Routes()
	if _, err := ors.ListRoutes(ctx, "x"); err == nil {
		t.Error("ListRoutes without a route table succeeded")
	}
}

// TestRoutesWithoutClusterCIDRs: a cloud given no cluster CIDRs owns no route, and says so.
func TestRoutesWithoutClusterCIDRs(t *testing.T) {
	h := newHarness(t, "routes")
	ctx := context.Background()
	rs, _ := h.routeCloud(t, h.cfg, nil).Routes()
	id, _ := h.machine("route-a")
	if err := h.fake.AddRoute(fakeaws.MainRouteTable, "100.64.1.0/24", id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ListRoutes(ctx, "routes"); err == nil || !strings.Contains(err.Error(), "no cluster CIDRs") {
		t.Errorf("ListRoutes without cluster CIDRs = %v, want an error naming them", err)
	}
	w := h.fake.Writes()
	err := rs.CreateRoute(ctx, "routes", "hint", &cloudprovider.Route{TargetNode: "route-a", DestinationCIDR: "100.64.2.0/24"})
	if err == nil || h.fake.Writes() != w {
		t.Errorf("CreateRoute without cluster CIDRs = %v with %d writes, want an error and none", err, h.fake.Writes()-w)
	}
}

// routeFixture is cluster "mine" routing through the fake's main table named by RouteTableID,
// as a table shared with other clusters: its Nodes mine-a and mine-b (in the Node informer),
// and instances of no Node: mine-old and mine-legacy (tagged for mine, the latter with the
// legacy tag: their Nodes are gone), theirs (tagged for another cluster) and foreign
// (untagged, an operator's router). The table itself carries mine's tag, which must make
// nothing on it mine: a table named by ID may be shared.
type routeFixture struct {
	h   *harness
	rs  cloudprovider.Routes
	ids map[string]string
}

func newRouteFixture(t *testing.T) *routeFixture {
	t.Helper()
	h := newHarness(t, "mine")
	f := &routeFixture{h: h, ids: map[string]string{}}
	var nodes []runtime.Object
	for _, name := range []string{"mine-a", "mine-b"} {
		id, md := h.machine(name)
		f.ids[name] = id
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	for name, tags := range map[string]map[string]string{
		"mine-old":    {"kubernetes.io/cluster/mine": "owned"},
		"mine-legacy": {"KubernetesCluster": "mine"},
		"theirs":      {"kubernetes.io/cluster/theirs": "owned"},
		"foreign":     nil,
	} {
		f.ids[name] = h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: name, Tags: tags})
	}
	c := h.routeCloud(t, h.cfg+"[Global]\nRouteTableID = "+fakeaws.MainRouteTable+"\n", []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")})
	factory := informers.NewSharedInformerFactory(fake.NewClientset(nodes...), 0)
	c.SetInformers(factory)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	f.rs, _ = c.Routes()
	return f
}

// route adds cidr through the named instance ("igw-…": a gateway), outside the API.
func (f *routeFixture) route(t *testing.T, cidr, via string) {
	t.Helper()
	inst, gw := f.ids[via], ""
	if strings.HasPrefix(via, "igw-") {
		inst, gw = "", via
	}
	if err := f.h.fake.AddRoute(fakeaws.MainRouteTable, cidr, inst, gw); err != nil {
		t.Fatal(err)
	}
}

// held is the table's routes as "<cidr> via <instance name or gateway>".
func (f *routeFixture) held() []string {
	names := map[string]string{}
	for n, id := range f.ids {
		names[id] = n
	}
	tbl, _ := f.h.fake.RouteTable(fakeaws.MainRouteTable)
	var out []string
	for _, r := range tbl.Routes {
		out = append(out, r.CIDR+" via "+names[r.Instance]+r.Gateway)
	}
	sort.Strings(out)
	return out
}

// name is the route name ListRoutes gives cidr through the named instance.
func (f *routeFixture) name(cidr, via string) string { return cidr + " via " + f.ids[via] }

// TestRoutesOfOtherOwners: on a shared table, what is not this cluster's is refused before any
// write (counted at the fake), and what is this cluster's is replaced or deleted.
func TestRoutesOfOtherOwners(t *testing.T) {
	ctx := context.Background()
	create := func(node, cidr string) func(*routeFixture) error {
		return func(f *routeFixture) error {
			return f.rs.CreateRoute(ctx, "mine", "hint", &cloudprovider.Route{TargetNode: k8stypes.NodeName("mine-" + node), DestinationCIDR: cidr})
		}
	}
	remove := func(cidr, via string) func(*routeFixture) error {
		return func(f *routeFixture) error {
			return f.rs.DeleteRoute(ctx, "mine", &cloudprovider.Route{Name: f.name(cidr, via), DestinationCIDR: cidr})
		}
	}
	for _, tc := range []struct {
		name    string
		seed    [][2]string // cidr, via
		do      func(*routeFixture) error
		wantErr string // "" for success
		writes  int
		want    []string // the table after, without the local route
	}{
		{name: "another owner's route to the destination is not replaced", seed: [][2]string{{"10.244.1.0/24", "foreign"}},
			do: create("a", "10.244.1.0/24"), wantErr: "not this cluster's", want: []string{"10.244.1.0/24 via foreign"}},
		{name: "another cluster's route to the destination is not replaced", seed: [][2]string{{"10.244.1.0/24", "theirs"}},
			do: create("a", "10.244.1.0/24"), wantErr: "not this cluster's", want: []string{"10.244.1.0/24 via theirs"}},
		{name: "a gateway route to the destination is not replaced", seed: [][2]string{{"10.244.1.0/24", "igw-1"}},
			do: create("a", "10.244.1.0/24"), wantErr: "igw-1", want: []string{"10.244.1.0/24 via igw-1"}},
		{name: "a destination outside the cluster CIDR is refused", do: create("a", "10.99.0.0/16"), wantErr: "outside the cluster CIDRs"},
		{name: "deleting another owner's route is refused", seed: [][2]string{{"10.244.5.0/24", "foreign"}},
			do: remove("10.244.5.0/24", "foreign"), wantErr: "not this cluster's", want: []string{"10.244.5.0/24 via foreign"}},
		{name: "deleting another cluster's route is refused", seed: [][2]string{{"10.244.5.0/24", "theirs"}},
			do: remove("10.244.5.0/24", "theirs"), wantErr: "not this cluster's", want: []string{"10.244.5.0/24 via theirs"}},
		{name: "a route by the listed name alone is refused", seed: [][2]string{{"10.244.5.0/24", "mine-old"}},
			do: func(f *routeFixture) error {
				return f.rs.DeleteRoute(ctx, "mine", &cloudprovider.Route{Name: "10.244.5.0/24", DestinationCIDR: "10.244.5.0/24"})
			}, wantErr: "was not listed", want: []string{"10.244.5.0/24 via mine-old"}},
		{name: "a route listed through one instance, now through another, stays", seed: [][2]string{{"10.244.1.0/24", "foreign"}},
			do: remove("10.244.1.0/24", "mine-a"), want: []string{"10.244.1.0/24 via foreign"}},
		{name: "this cluster's route of a gone Node is replaced, and the new instance recorded", seed: [][2]string{{"10.244.1.0/24", "mine-old"}},
			do: create("a", "10.244.1.0/24"), writes: 4, want: []string{"10.244.1.0/24 via mine-a"}},
		{name: "a Node's route, recorded by the Node alone, is deleted", seed: [][2]string{{"10.244.1.0/24", "mine-a"}},
			do: remove("10.244.1.0/24", "mine-a"), writes: 1},
		{name: "a route in place is recorded once, then writes nothing", seed: [][2]string{{"10.244.1.0/24", "mine-b"}, {"10.244.2.0/24", "mine-a"}},
			do: func(f *routeFixture) error {
				if err := create("a", "10.244.2.0/24")(f); err != nil {
					return err
				}
				f.h.fake.SetFaults(fakeaws.Faults{FailOps: map[string]bool{"ModifyInstanceAttribute": true, "CreateTags": true, "CreateRoute": true, "DeleteRoute": true}})
				defer f.h.fake.SetFaults(fakeaws.Faults{})
				return create("a", "10.244.2.0/24")(f)
			}, writes: 2, want: []string{"10.244.1.0/24 via mine-b", "10.244.2.0/24 via mine-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRouteFixture(t)
			for _, s := range tc.seed {
				f.route(t, s[0], s[1])
			}
			before := f.h.fake.Writes()
			err := tc.do(f)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			}
			if w := f.h.fake.Writes() - before; w != tc.writes {
				t.Errorf("%d writes, want %d", w, tc.writes)
			}
			if got, want := f.held(), append([]string{"10.0.0.0/16 via local"}, tc.want...); !slices.Equal(got, want) {
				t.Errorf("table %v, want %v", got, want)
			}
			if tc.wantErr != "" && !f.h.fake.SourceDestCheck(f.ids["mine-a"]) {
				t.Errorf("a refused call turned mine-a's source/destination check off")
			}
		})
	}
}

// TestRoutesListedOnASharedTable: only this cluster's routes are listed, each with the Node
// name from the informer; a recorded route whose Node is gone is a blackhole.
func TestRoutesListedOnASharedTable(t *testing.T) {
	f := newRouteFixture(t)
	for _, s := range [][2]string{{"10.244.1.0/24", "mine-a"}, {"10.244.3.0/24", "mine-old"}, {"10.244.4.0/24", "theirs"},
		{"10.244.5.0/24", "foreign"}, {"10.244.6.0/24", "igw-1"}, {"10.99.0.0/24", "mine-b"}, {"10.244.7.0/24", "mine-legacy"}} {
		f.route(t, s[0], s[1])
	}
	list, err := f.rs.ListRoutes(context.Background(), "mine")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{f.name("10.244.1.0/24", "mine-a") + " -> mine-a", f.name("10.244.3.0/24", "mine-old") + " -> (blackhole)",
		f.name("10.244.7.0/24", "mine-legacy") + " -> (blackhole)"}
	if got := listed(list); !slices.Equal(got, want) {
		t.Errorf("ListRoutes = %v, want %v", got, want)
	}
}

// listed is ListRoutes' answer as "<name> -> <target node>", sorted.
func listed(list []*cloudprovider.Route) []string {
	var out []string
	for _, r := range list {
		target := string(r.TargetNode)
		if r.Blackhole {
			target = "(blackhole)"
		}
		out = append(out, r.Name+" -> "+target)
	}
	sort.Strings(out)
	return out
}
