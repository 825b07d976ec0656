package fake_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// network is a Neutron client of a started fake.
func network(t *testing.T, f *fake.Cloud) *gophercloud.ServiceClient {
	t.Helper()
	pc, err := login(t, password(f))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// refused: err is Neutron's status with an error of type typ.
func refused(err error, status int, typ string) bool {
	return gophercloud.ResponseCodeIs(err, status) && strings.Contains(err.Error(), `"type":"`+typ+`"`)
}

func route(dst, hop string) routers.Route { return routers.Route{DestinationCIDR: dst, NextHop: hop} }

func fakeRoutes(rs ...routers.Route) []fake.RouterRoute {
	out := []fake.RouterRoute{}
	for _, r := range rs {
		out = append(out, fake.RouterRoute{Destination: r.DestinationCIDR, NextHop: r.NextHop})
	}
	return out
}

// A router shows its routes and tags; a PUT of routes replaces them all, and a list Neutron
// refuses (a nexthop off the router's subnets, a malformed or repeated route, a stale
// If-Match) changes nothing.
func TestRouterUpdateRoutes(t *testing.T) {
	ctx := context.Background()
	f := start(t, fake.Options{})
	nc := network(t, f)
	id := f.AddRouter("r1")
	f.SetRouterRoutes(id, fakeRoutes(route("10.244.0.0/24", "10.0.0.4")))
	f.SetRouterTags(id, []string{"b", "a", "b"})
	got, err := routers.Get(ctx, nc, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Name != "r1" || got.Status != "ACTIVE" || got.ProjectID != "pid-demo" || got.RevisionNumber != 2 ||
		!slices.Equal(got.Routes, []routers.Route{route("10.244.0.0/24", "10.0.0.4")}) || !slices.Equal(got.Tags, []string{"a", "b"}) {
		t.Fatalf("router %+v", got)
	}
	want := []routers.Route{route("10.244.1.0/24", "10.0.0.5"), route("10.244.2.0/24", "10.0.0.6")}
	got, err = routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &want}).Extract()
	if err != nil || !slices.Equal(got.Routes, want) || got.RevisionNumber != 3 {
		t.Fatalf("update: %+v %v", got, err)
	}
	for _, tc := range []struct {
		routes []routers.Route
		typ    string
		msg    string
	}{
		{[]routers.Route{route("10.244.3.0/24", "192.168.1.5")}, "InvalidRoutes",
			"Invalid format for routes: [{'destination': '10.244.3.0/24', 'nexthop': '192.168.1.5'}], the nexthop is not connected with router."},
		{[]routers.Route{route("10.244.3.0/33", "10.0.0.5")}, "InvalidInput", "'10.244.3.0/33' is not a valid CIDR"},
		{[]routers.Route{route("10.244.3.1/24", "10.0.0.5")}, "InvalidInput", "'10.244.3.0/24' is recommended"},
		{[]routers.Route{route("10.244.3.0/24", "10.0.0")}, "InvalidInput", "'10.0.0' is not a valid IP address"},
		{[]routers.Route{route("10.244.3.0/24", "10.0.0.5"), route("10.244.3.0/24", "10.0.0.5")}, "InvalidInput", "Duplicate hostroute"},
	} {
		_, err := routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &tc.routes}).Extract()
		if !refused(err, http.StatusBadRequest, tc.typ) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: %v, want 400 %s %q", tc.routes, err, tc.typ, tc.msg)
		}
	}
	stale := 2
	_, err = routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &[]routers.Route{}, RevisionNumber: &stale}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) {
		t.Errorf("a stale If-Match: %v, want 412", err)
	}
	if rs := f.RouterRoutes(id); !slices.Equal(rs, fakeRoutes(want...)) {
		t.Errorf("refused updates changed the routes: %v", rs)
	}
	// Without routes in the body the routes stay; a fresh If-Match passes.
	cur := 3
	got, err = routers.Update(ctx, nc, id, routers.UpdateOpts{Name: "r1", RevisionNumber: &cur}).Extract()
	if err != nil || !slices.Equal(got.Routes, want) || got.RevisionNumber != 4 {
		t.Errorf("update without routes: %+v %v", got, err)
	}
	if _, err := routers.Get(ctx, nc, "router-nope").Extract(); !refused(err, http.StatusNotFound, "RouterNotFound") {
		t.Errorf("unknown router: %v", err)
	}
}

// hops are n routes to 10.244.i.0/24 via 10.0.0.5.
func hops(n int) []routers.Route {
	var out []routers.Route
	for i := range n {
		out = append(out, route(fmt.Sprintf("10.244.%d.0/24", i), "10.0.0.5"))
	}
	return out
}

// A router holds at most max_routes routes: Neutron's 30 by default, Options.MaxRoutes else.
func TestRouterRouteLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ max, ok int }{{0, 30}, {2, 2}, {-1, 200}} {
		f := start(t, fake.Options{MaxRoutes: tc.max})
		nc := network(t, f)
		id := f.AddRouter("r")
		ok := hops(tc.ok)
		if _, err := routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &ok}).Extract(); err != nil {
			t.Errorf("max %d: %d routes: %v", tc.max, tc.ok, err)
		}
		if tc.max < 0 {
			continue
		}
		more := hops(tc.ok + 1)
		_, err := routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &more}).Extract()
		msg := fmt.Sprintf("Unable to complete operation for %s. The number of routes exceeds the maximum %d.", id, tc.ok)
		if !refused(err, http.StatusBadRequest, "RoutesExhausted") || !strings.Contains(err.Error(), msg) {
			t.Errorf("max %d: %d routes: %v, want 400 RoutesExhausted", tc.max, tc.ok+1, err)
		}
		_, err = extraroutes.Add(ctx, nc, id, extraroutes.Opts{Routes: &[]routers.Route{route("10.245.0.0/24", "10.0.0.5")}}).Extract()
		if !refused(err, http.StatusBadRequest, "RoutesExhausted") {
			t.Errorf("max %d: one more added: %v, want 400 RoutesExhausted", tc.max, err)
		}
		if n := len(f.RouterRoutes(id)); n != tc.ok {
			t.Errorf("max %d: %d routes stored", tc.max, n)
		}
	}
}

// The extraroute-atomic calls add what is missing and remove what is there; a route already
// there (or already gone) changes nothing, not even the revision.
func TestExtraRouteAtomic(t *testing.T) {
	ctx := context.Background()
	f := start(t, fake.Options{})
	nc := network(t, f)
	_, sub := f.AddNetwork("nodes", "192.168.10.0/24", false)
	id := f.AddRouter("r", fake.PrivateSubnetID, sub)
	a, b, c := route("10.244.1.0/24", "10.0.0.5"), route("10.244.2.0/24", "192.168.10.6"), route("10.244.3.0/24", "10.0.0.7")
	add := func(rs ...routers.Route) (*routers.Router, error) {
		return extraroutes.Add(ctx, nc, id, extraroutes.Opts{Routes: &rs}).Extract()
	}
	remove := func(rs ...routers.Route) (*routers.Router, error) {
		return extraroutes.Remove(ctx, nc, id, extraroutes.Opts{Routes: &rs}).Extract()
	}
	got, err := add(a, b, a)
	if err != nil || !slices.Equal(got.Routes, []routers.Route{a, b}) || got.RevisionNumber != 1 {
		t.Fatalf("add a, b: %+v %v", got, err)
	}
	if got, err = add(b); err != nil || got.RevisionNumber != 1 || len(got.Routes) != 2 {
		t.Errorf("adding a present route: %+v %v, want no change", got, err)
	}
	if got, err = remove(c); err != nil || got.RevisionNumber != 1 || len(got.Routes) != 2 {
		t.Errorf("removing an absent route: %+v %v, want no change", got, err)
	}
	if got, err = add(c); err != nil || !slices.Equal(got.Routes, []routers.Route{a, b, c}) || got.RevisionNumber != 2 {
		t.Errorf("add c: %+v %v", got, err)
	}
	if got, err = remove(a, c); err != nil || !slices.Equal(got.Routes, []routers.Route{b}) || got.RevisionNumber != 3 {
		t.Errorf("remove a, c: %+v %v", got, err)
	}
	if _, err = add(route("10.244.4.0/24", "172.24.4.9")); !refused(err, http.StatusBadRequest, "InvalidRoutes") {
		t.Errorf("a nexthop off the router: %v, want 400 InvalidRoutes", err)
	}
	if _, err = remove(route("10.244.4.0/24", "nexthop")); !refused(err, http.StatusBadRequest, "InvalidInput") {
		t.Errorf("removing a malformed route: %v, want 400 InvalidInput", err)
	}
	if rs := f.RouterRoutes(id); !slices.Equal(rs, fakeRoutes(b)) {
		t.Errorf("routes %v, want only b", rs)
	}
	calls := f.Calls()
	if calls["neutron.UpdateRouterAddExtraRoutes"] != 4 || calls["neutron.UpdateRouterRemoveExtraRoutes"] != 3 {
		t.Errorf("calls %v", f.CallSummary())
	}

	old := start(t, fake.Options{NoExtraRouteAtomic: true})
	onc := network(t, old)
	oid := old.AddRouter("r")
	rs := []routers.Route{a}
	if _, err := extraroutes.Add(ctx, onc, oid, extraroutes.Opts{Routes: &rs}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("add without extraroute-atomic: %v, want 404", err)
	}
	if _, err := extraroutes.Remove(ctx, onc, oid, extraroutes.Opts{Routes: &rs}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("remove without extraroute-atomic: %v, want 404", err)
	}
	if got := old.RouterRoutes(oid); len(got) != 0 {
		t.Errorf("routes %v", got)
	}
}

// The extensions a client reads to choose between the atomic calls and a PUT of the list.
func TestNeutronExtensions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		o    fake.Options
		want []string
	}{
		{fake.Options{}, []string{"extraroute", "extraroute-atomic", "standard-attr-tag"}},
		{fake.Options{NoExtraRouteAtomic: true}, []string{"extraroute", "standard-attr-tag"}},
	} {
		f := start(t, tc.o)
		nc := network(t, f)
		for _, alias := range []string{"extraroute", "extraroute-atomic", "standard-attr-tag", "no-such"} {
			e, err := extensions.Get(ctx, nc, alias).Extract()
			if slices.Contains(tc.want, alias) {
				if err != nil || e.Alias != alias || e.Name == "" || e.Updated != "2019-07-10T10:00:00-00:00" {
					t.Errorf("%+v: %s: %+v %v", tc.o, alias, e, err)
				}
			} else if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) || !strings.Contains(err.Error(), "Extension with alias "+alias+" does not exist") {
				t.Errorf("%+v: %s: %v, want 404", tc.o, alias, err)
			}
		}
		p, err := extensions.List(nc).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		es, _ := extensions.ExtractExtensions(p)
		var got []string
		for _, e := range es {
			got = append(got, e.Alias)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: list %v, want %v", tc.o, got, tc.want)
		}
		if n := f.Calls()["neutron.GetExtension"]; n != 4 {
			t.Errorf("%d GetExtension calls", n)
		}
	}
}

// Router tags are a set: adding one twice keeps one, deleting an absent one is a 404; tags
// naming a route (with '.', ':', '_', '-') and escaped ones come back as they were.
func TestRouterTags(t *testing.T) {
	ctx := context.Background()
	f := start(t, fake.Options{})
	nc := network(t, f)
	id := f.AddRouter("r")
	v4, v6 := "ccm-route.cluster-a.10.244.1.0_24.via.10.0.0.5", "ccm-route.c.fd00:10::_64.via.fd00::5"
	for _, tag := range []string{v4, v4, v6} {
		if err := attributestags.Add(ctx, nc, "routers", id, tag).ExtractErr(); err != nil {
			t.Fatalf("add %s: %v", tag, err)
		}
	}
	tags, err := attributestags.List(ctx, nc, "routers", id).Extract()
	if want := []string{v6, v4}; err != nil || !slices.Equal(tags, want) || !slices.Equal(f.RouterTags(id), want) {
		t.Fatalf("tags %q %v, want %q", tags, err, want)
	}
	if r, _ := routers.Get(ctx, nc, id).Extract(); r == nil || r.RevisionNumber != 2 || !slices.Equal(r.Tags, []string{v6, v4}) {
		t.Errorf("router after two new tags: %+v", r)
	}
	if err := attributestags.Delete(ctx, nc, "routers", id, v4).ExtractErr(); err != nil {
		t.Errorf("delete: %v", err)
	}
	err = attributestags.Delete(ctx, nc, "routers", id, v4).ExtractErr()
	if !refused(err, http.StatusNotFound, "TagNotFound") || !strings.Contains(err.Error(), "Tag "+v4+" could not be found.") {
		t.Errorf("delete again: %v, want 404 TagNotFound", err)
	}
	// A client escaping the tag in the path gets the tag itself stored.
	odd := "a b/c%d"
	if _, err := nc.Put(ctx, nc.ServiceURL("routers", id, "tags", url.PathEscape(odd)), nil, nil, &gophercloud.RequestOpts{OkCodes: []int{201}}); err != nil {
		t.Errorf("add an escaped tag: %v", err)
	}
	if got := f.RouterTags(id); !slices.Equal(got, []string{odd, v6}) {
		t.Errorf("tags %q", got)
	}
	long := strings.Repeat("t", 256)
	if err := attributestags.Add(ctx, nc, "routers", id, long).ExtractErr(); !refused(err, http.StatusBadRequest, "InvalidInput") {
		t.Errorf("a 256-character tag: %v, want 400", err)
	}
	if err := attributestags.Add(ctx, nc, "routers", "router-nope", "x").ExtractErr(); !refused(err, http.StatusNotFound, "RouterNotFound") {
		t.Errorf("a tag on no router: %v", err)
	}
}

// Allowed address pairs replace the port's list, show the port's MAC where none was given,
// and are refused on a port without port security (409) or when malformed or repeated (400).
func TestPortAllowedAddressPairs(t *testing.T) {
	ctx := context.Background()
	f := start(t, fake.Options{})
	nc := network(t, f)
	pid := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-1", IPs: []string{"10.0.0.5"}}))
	g := f.AddSecurityGroup("g")
	f.SetPortSecurityGroups(pid, g)
	before, err := ports.Get(ctx, nc, pid).Extract()
	if err != nil || before.AllowedAddressPairs == nil || len(before.AllowedAddressPairs) != 0 {
		t.Fatalf("port %+v %v, want an empty pair list", before, err)
	}
	set := func(id string, pairs ...ports.AddressPair) (*ports.Port, error) {
		return ports.Update(ctx, nc, id, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	}
	got, err := set(pid, ports.AddressPair{IPAddress: "10.244.1.0/24"}, ports.AddressPair{IPAddress: "10.0.0.100", MACAddress: "fa:16:3e:00:00:01"})
	want := []ports.AddressPair{{IPAddress: "10.244.1.0/24", MACAddress: before.MACAddress}, {IPAddress: "10.0.0.100", MACAddress: "fa:16:3e:00:00:01"}}
	if err != nil || !slices.Equal(got.AllowedAddressPairs, want) || got.RevisionNumber != before.RevisionNumber+1 || !slices.Equal(got.SecurityGroups, []string{g}) {
		t.Fatalf("set pairs: %+v %v", got, err)
	}
	if ps := f.PortAddressPairs(pid); len(ps) != 2 || ps[0] != (fake.AddressPair{IPAddress: "10.244.1.0/24", MACAddress: before.MACAddress}) {
		t.Errorf("stored pairs %v", ps)
	}
	for _, tc := range []struct {
		pairs []ports.AddressPair
		typ   string
	}{
		{[]ports.AddressPair{{IPAddress: "10.244.1"}}, "InvalidInput"},
		{[]ports.AddressPair{{IPAddress: "10.244.1.0/24", MACAddress: "fa:16"}}, "InvalidInput"},
		{[]ports.AddressPair{{IPAddress: "10.244.2.0/24"}, {IPAddress: "10.244.2.0/24", MACAddress: before.MACAddress}}, "DuplicateAddressPairInRequest"},
	} {
		if _, err := set(pid, tc.pairs...); !refused(err, http.StatusBadRequest, tc.typ) {
			t.Errorf("%v: %v, want 400 %s", tc.pairs, err, tc.typ)
		}
	}
	// Groups alone leave the pairs as they are.
	none := []string{}
	if got, err := ports.Update(ctx, nc, pid, ports.UpdateOpts{SecurityGroups: &none}).Extract(); err != nil || len(got.AllowedAddressPairs) != 2 {
		t.Errorf("groups only: %+v %v", got, err)
	}

	bare := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "router", IPs: []string{"10.0.0.9"}}))
	if !f.SetPortSecurity(bare, false) {
		t.Fatal("port security not turned off")
	}
	_, err = set(bare, ports.AddressPair{IPAddress: "10.244.9.0/24"})
	if !refused(err, http.StatusConflict, "AddressPairAndPortSecurityRequired") || !strings.Contains(err.Error(), "Port Security must be enabled in order to have allowed address pairs on a port.") {
		t.Errorf("pairs on a port without port security: %v, want 409", err)
	}
	if _, err := set(bare); err != nil {
		t.Errorf("no pairs on a port without port security: %v", err)
	}
	if ps := f.PortAddressPairs(bare); len(ps) != 0 {
		t.Errorf("pairs %v written", ps)
	}
	f.SetPortAddressPairs(bare, []fake.AddressPair{{IPAddress: "10.244.9.0/24"}})
	if p, err := ports.Get(ctx, nc, bare).Extract(); err != nil || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != p.MACAddress {
		t.Errorf("pairs set by hand: %+v %v", p, err)
	}
}

// The router operations are counted under their names, and the changing ones are writes.
func TestRouterOpsCountedAndWrites(t *testing.T) {
	ctx := context.Background()
	f := start(t, fake.Options{})
	nc := network(t, f)
	id := f.AddRouter("r")
	rs := []routers.Route{route("10.244.1.0/24", "10.0.0.5")}
	_, _ = routers.Get(ctx, nc, id).Extract()
	_, _ = routers.Update(ctx, nc, id, routers.UpdateOpts{Routes: &rs}).Extract()
	_, _ = extraroutes.Add(ctx, nc, id, extraroutes.Opts{Routes: &rs}).Extract()
	_, _ = extraroutes.Remove(ctx, nc, id, extraroutes.Opts{Routes: &rs}).Extract()
	_ = attributestags.Add(ctx, nc, "routers", id, "t").ExtractErr()
	_, _ = attributestags.List(ctx, nc, "routers", id).Extract()
	_ = attributestags.Delete(ctx, nc, "routers", id, "t").ExtractErr()
	_, _ = extensions.Get(ctx, nc, "extraroute").Extract()
	_, _ = extensions.List(nc).AllPages(ctx)
	writes := f.Writes()
	calls := f.Calls()
	for op, write := range map[string]bool{
		"neutron.GetRouter": false, "neutron.UpdateRouter": true, "neutron.UpdateRouterAddExtraRoutes": true,
		"neutron.UpdateRouterRemoveExtraRoutes": true, "neutron.UpdateRouterTag": true, "neutron.ListRouterTags": false,
		"neutron.DeleteRouterTag": true, "neutron.GetExtension": false, "neutron.ListExtensions": false,
	} {
		if calls[op] != 1 {
			t.Errorf("%s: %d calls, want 1", op, calls[op])
		}
		if fake.IsWrite(op) != write {
			t.Errorf("IsWrite(%s) = %v", op, !write)
		}
	}
	if writes != 5 {
		t.Errorf("%d writes, want 5 (%s)", writes, f.CallSummary())
	}
}
