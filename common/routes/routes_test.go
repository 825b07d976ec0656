package routes

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

func rt(dest, hop string) Route { return Route{netip.MustParsePrefix(dest), hop} }

func node(name string, addrs ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, a := range addrs {
		typ := v1.NodeInternalIP
		if s, ok := strings.CutPrefix(a, "ext:"); ok {
			typ, a = v1.NodeExternalIP, s
		}
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: typ, Address: a})
	}
	return n
}

// scope: cluster CIDR 10.244.0.0/16 and fd10::/56, Nodes a (10.0.0.5, fd00::5) and b (10.0.0.6).
func scope() Scope {
	cidrs, _ := ParseClusterCIDRs("10.244.0.0/16, fd10::/56")
	return Scope{ClusterCIDRs: cidrs, Nodes: NodeHops([]*v1.Node{
		node("a", "10.0.0.5", "fd00::5", "ext:172.24.4.9"), node("b", "10.0.0.6"),
	})}
}

func recordedSet(rs ...Route) func(Route) bool {
	return func(r Route) bool {
		for _, x := range rs {
			if x == r {
				return true
			}
		}
		return false
	}
}

func TestNodeHopsAndHopOf(t *testing.T) {
	want := map[string]types.NodeName{"10.0.0.5": "a", "fd00::5": "a", "10.0.0.6": "b"}
	if got := scope().Nodes; !reflect.DeepEqual(got, want) {
		t.Errorf("NodeHops = %v, want %v (ExternalIP is no hop)", got, want)
	}
	a := node("a", "ext:172.24.4.9", "10.0.0.5", "fd00::5")
	for dest, want := range map[string]string{"10.244.1.0/24": "10.0.0.5", "fd10::/64": "fd00::5"} {
		if got, err := HopOf(a, netip.MustParsePrefix(dest)); got != want || err != nil {
			t.Errorf("HopOf(a, %s) = %q, %v; want %q", dest, got, err, want)
		}
	}
	if _, err := HopOf(node("b", "10.0.0.6"), netip.MustParsePrefix("fd10::/64")); err == nil || !strings.Contains(err.Error(), `Node "b" has no IPv6 InternalIP`) {
		t.Errorf("HopOf without an address of the family: %v", err)
	}
}

func TestParse(t *testing.T) {
	if got, err := ParseClusterCIDRs(" 10.244.1.7/16 ,,fd10::/56"); err != nil || fmt.Sprint(got) != "[10.244.0.0/16 fd10::/56]" {
		t.Errorf("ParseClusterCIDRs = %v, %v", got, err)
	}
	if _, err := ParseClusterCIDRs("10.244.0.0/16,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("ParseClusterCIDRs(bad) = %v", err)
	}
	r := rt("10.244.1.0/24", "10.0.0.5")
	if got, ok := ParseName(Name(r)); !ok || got != r {
		t.Errorf("ParseName(Name(%v)) = %v, %v", r, got, ok)
	}
	for _, bad := range []string{"10.244.1.0/24", "x via 10.0.0.5", "10.244.1.0/24 via ", ""} {
		if _, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) accepted", bad)
		}
	}
}

func TestOwned(t *testing.T) {
	s := scope()
	for _, c := range []struct {
		r        Route
		recorded bool
		want     bool
	}{
		{rt("10.244.1.0/24", "10.0.0.5"), false, true},   // through a Node: taken over
		{rt("10.244.1.0/24", "10.0.0.99"), true, true},   // recorded, its Node gone
		{rt("10.244.1.0/24", "10.0.0.99"), false, false}, // another cluster's (same CIDR)
		{rt("10.245.1.0/24", "10.0.0.5"), true, false},   // outside the cluster CIDR
		{rt("10.0.0.0/8", "10.0.0.5"), false, false},     // wider than the cluster CIDR
		{rt("fd10::/64", "fd00::5"), false, true},
		{rt("fd10:0:0:100::/64", "fd00::5"), true, false}, // outside fd10::/56
	} {
		if got := s.Owned(c.r, c.recorded); got != c.want {
			t.Errorf("Owned(%v, recorded %v) = %v, want %v", c.r, c.recorded, got, c.want)
		}
	}
	if (Scope{Nodes: s.Nodes}).Owned(rt("10.244.1.0/24", "10.0.0.5"), true) {
		t.Error("with no cluster CIDRs a route was owned")
	}
}

func TestList(t *testing.T) {
	held := []Route{rt("10.244.1.0/24", "10.0.0.5"), rt("10.244.2.0/24", "10.0.0.99"), rt("10.244.1.0/24", "10.0.0.7"), rt("192.168.0.0/16", "10.0.0.5")}
	got := scope().List(held, recordedSet(rt("10.244.2.0/24", "10.0.0.99")))
	want := []*cloudprovider.Route{
		{Name: "10.244.1.0/24 via 10.0.0.5", TargetNode: "a", DestinationCIDR: "10.244.1.0/24"},
		{Name: "10.244.2.0/24 via 10.0.0.99", DestinationCIDR: "10.244.2.0/24", Blackhole: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", deref(got), deref(want))
	}
}

func deref(rs []*cloudprovider.Route) []cloudprovider.Route {
	var out []cloudprovider.Route
	for _, r := range rs {
		out = append(out, *r)
	}
	return out
}

func TestPlanCreate(t *testing.T) {
	want := rt("10.244.1.0/24", "10.0.0.5")
	foreign := rt("10.244.1.0/24", "10.0.0.7")
	for _, c := range []struct {
		name     string
		held     []Route
		recorded []Route
		steps    string
	}{
		{"new", nil, nil, "[add record 10.244.1.0/24 via 10.0.0.5 add route 10.244.1.0/24 via 10.0.0.5]"},
		{"another cluster's on the same CIDR stays", []Route{foreign}, nil, "[add record 10.244.1.0/24 via 10.0.0.5 add route 10.244.1.0/24 via 10.0.0.5]"},
		{"deleted by hand", nil, []Route{want}, "[add route 10.244.1.0/24 via 10.0.0.5]"},
		{"taken over", []Route{want}, nil, "[add record 10.244.1.0/24 via 10.0.0.5]"},
		{"in place", []Route{want}, []Route{want}, "[]"},
	} {
		steps, err := scope().PlanCreate(c.held, recordedSet(c.recorded...), want)
		if err != nil || fmt.Sprint(steps) != c.steps {
			t.Errorf("%s: PlanCreate = %v, %v; want %s", c.name, steps, err, c.steps)
		}
	}
	if _, err := scope().PlanCreate(nil, recordedSet(), rt("10.0.0.0/8", "10.0.0.5")); err == nil || !strings.Contains(err.Error(), "outside the cluster CIDRs") {
		t.Errorf("PlanCreate outside the cluster CIDR: %v", err)
	}
}

func TestPlanDelete(t *testing.T) {
	ours, gone := rt("10.244.1.0/24", "10.0.0.5"), rt("10.244.2.0/24", "10.0.0.99")
	for _, c := range []struct {
		name     string
		held     []Route
		recorded []Route
		r        Route
		steps    string
		refused  bool
	}{
		{"recorded", []Route{ours}, []Route{ours}, ours, "[remove route 10.244.1.0/24 via 10.0.0.5 remove record 10.244.1.0/24 via 10.0.0.5]", false},
		{"its Node gone", []Route{gone}, []Route{gone}, gone, "[remove route 10.244.2.0/24 via 10.0.0.99 remove record 10.244.2.0/24 via 10.0.0.99]", false},
		{"taken over", []Route{ours}, nil, ours, "[remove route 10.244.1.0/24 via 10.0.0.5]", false},
		{"record left by a stop", nil, []Route{gone}, gone, "[remove record 10.244.2.0/24 via 10.0.0.99]", false},
		{"already gone", nil, nil, ours, "[]", false},
		{"another cluster's", []Route{gone}, nil, gone, "", true},
		{"outside the cluster CIDR", []Route{rt("10.0.0.0/8", "10.0.0.5")}, nil, rt("10.0.0.0/8", "10.0.0.5"), "", true},
	} {
		steps, err := scope().PlanDelete(c.held, recordedSet(c.recorded...), c.r)
		if c.refused {
			if err == nil || !strings.Contains(err.Error(), "not this cluster's") {
				t.Errorf("%s: PlanDelete = %v, %v; want refused", c.name, steps, err)
			}
			continue
		}
		if err != nil || fmt.Sprint(steps) != c.steps {
			t.Errorf("%s: PlanDelete = %v, %v; want %s", c.name, steps, err, c.steps)
		}
	}
}
