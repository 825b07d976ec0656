package openstack

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestInstanceMetadataFromPorts(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", AZ: "az-2", Flavor: "m1.large", IPs: []string{"10.0.0.5", "fd00::5"}, FloatingIP: "172.24.4.9"})
	ctx := context.Background()
	// No Hostname: the server has no metadata hostname, so (as upstream) the node controller
	// keeps the kubelet's.
	for _, tc := range []struct {
		name, extra string
		want        []v1.NodeAddress
	}{
		{"dual-stack", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"},
			{Type: v1.NodeExternalIP, Address: "172.24.4.9"}}},
		{"ipv6 disabled", "[Networking]\nipv6-support-disabled = true\n", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeExternalIP, Address: "172.24.4.9"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, _ := newTestCloud(t, f, tc.extra).InstancesV2()
			md, err := inst.InstanceMetadata(ctx, node("n1", ""))
			if err != nil {
				t.Fatal(err)
			}
			if md.ProviderID != "openstack:///"+id || md.InstanceType != "m1.large" || md.Zone != "az-2" || md.Region != "RegionOne" {
				t.Errorf("metadata = %+v", md)
			}
			if !slices.Equal(md.NodeAddresses, tc.want) {
				t.Errorf("addresses = %v, want %v", md.NodeAddresses, tc.want)
			}
		})
	}
}

// callsSince is the fake's call counts since before, without zeroes.
func callsSince(f *fake.Cloud, before map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range f.Calls() {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// Through the real SDK and the fake's Nova and Neutron: several ports (one DOWN), access IPs,
// a metadata hostname, a named public network and a trunk subport give upstream's list; the
// reads are one server GET and one port list per Node (plus one subport list per trunk
// parent, and one network list for subport network names, cached).
func TestInstanceMetadataAddressesAsUpstream(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}, FloatingIP: "172.24.4.9",
		AccessIPv4: "198.51.100.7", AccessIPv6: "2001:db8::7", Metadata: map[string]string{"hostname": "n1.example.org"}})
	extNet, extSub := f.AddNetwork("ext-net", "203.0.113.0/24", false)
	f.AddServerPort(id, fake.PortSpec{NetworkID: extNet, SubnetID: extSub, IPs: []string{"203.0.113.5"}})
	bNet, bSub := f.AddNetwork("b-net", "10.20.0.0/24", false)
	f.AddServerPort(id, fake.PortSpec{NetworkID: bNet, SubnetID: bSub, IPs: []string{"10.20.0.5"}, Status: "DOWN"})
	vlanNet, vlanSub := f.AddNetwork("vlan100", "192.168.100.0/24", false)
	if f.AddTrunkSubport(f.ServerPortID(id), vlanNet, vlanSub, []string{"192.168.100.5"}) == "" {
		t.Fatal("no subport")
	}
	ctx := context.Background()
	n := node("n1", "openstack:///"+id)
	for _, tc := range []struct {
		name, extra, want string
		calls             map[string]int
	}{
		{"public network, DOWN port, trunk", "[Networking]\npublic-network-name = ext-net\n",
			"I=10.0.0.5 E=198.51.100.7 E=2001:db8::7 H=n1.example.org I=10.20.0.5 E=203.0.113.5 E=172.24.4.9 I=192.168.100.5",
			map[string]int{"nova.GetServer": 1, "neutron.ListPorts": 2, "neutron.ListNetworks": 1}},
		{"sorted; network names cached", "[Networking]\npublic-network-name = ext-net\naddress-sort-order = 192.168.0.0/16, 10.0.0.0/8\n",
			"I=192.168.100.5 I=10.0.0.5 I=10.20.0.5 E=198.51.100.7 E=2001:db8::7 H=n1.example.org E=203.0.113.5 E=172.24.4.9",
			map[string]int{"nova.GetServer": 1, "neutron.ListPorts": 2}},
		{"internal network only", "[Networking]\ninternal-network-name = private\n",
			"I=10.0.0.5 E=198.51.100.7 E=2001:db8::7 H=n1.example.org E=172.24.4.9",
			map[string]int{"nova.GetServer": 1, "neutron.ListPorts": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, _ := newTestCloud(t, f, tc.extra).InstancesV2()
			if _, err := inst.InstanceExists(ctx, n); err != nil { // authenticate first: count only the look-up
				t.Fatal(err)
			}
			before := f.Calls()
			md, err := inst.InstanceMetadata(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if want := addrList(tc.want); !slices.Equal(md.NodeAddresses, want) {
				t.Errorf("addresses\n got %v\nwant %v", md.NodeAddresses, want)
			}
			got := callsSince(f, before)
			delete(got, "nova.GetFlavor") // once per flavor per process: depends on the tests run before
			if !maps.Equal(got, tc.calls) {
				t.Errorf("calls = %v, want %v", got, tc.calls)
			}
		})
	}
	// A failed read is an error (the Node keeps its addresses), not a shorter list: the ports,
	// or (on another cloud, so not cached) a subport's network.
	f.SetFault("neutron.ListPorts", fake.Fault{Status: 500})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	if _, err := inst.InstanceMetadata(ctx, n); err == nil {
		t.Error("port list failing: no error")
	}
	f2 := newFake(t, fake.Options{})
	id2 := f2.AddServer(fake.ServerSpec{Name: "n2", IPs: []string{"10.0.0.6"}})
	net2, sub2 := f2.AddNetwork("vlan200", "192.168.200.0/24", false)
	f2.AddTrunkSubport(f2.ServerPortID(id2), net2, sub2, []string{"192.168.200.6"})
	f2.SetFault("neutron.ListNetworks", fake.Fault{Status: 500})
	inst2, _ := newTestCloud(t, f2, "").InstancesV2()
	if md, err := inst2.InstanceMetadata(ctx, node("n2", "openstack:///"+id2)); err == nil {
		t.Errorf("network list failing: no error, addresses %v", md.NodeAddresses)
	}
}

func TestInstanceStates(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	ctx := context.Background()
	byRegion := node("renamed", "openstack://RegionOne/"+id)
	if ok, err := inst.InstanceExists(ctx, byRegion); err != nil || !ok {
		t.Fatalf("exists by openstack://region/id = %v, %v", ok, err)
	}
	f.SetServerStatus(id, "SHUTOFF")
	if down, err := inst.InstanceShutdown(ctx, byRegion); err != nil || !down {
		t.Errorf("SHUTOFF server: shutdown = %v, %v", down, err)
	}
	// A 5xx is an error, never "gone".
	f.SetFault("nova.GetServer", fake.Fault{Status: 503})
	if ok, err := inst.InstanceExists(ctx, byRegion); err == nil {
		t.Errorf("503: exists = %v with no error", ok)
	}
	f.SetFault("nova.GetServer", fake.Fault{})
	f.DeleteServer(id)
	if ok, err := inst.InstanceExists(ctx, byRegion); err != nil || ok {
		t.Errorf("deleted server: exists = %v, %v; want false, nil", ok, err)
	}
	if _, err := inst.InstanceMetadata(ctx, byRegion); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("deleted server: metadata error %v, want InstanceNotFound", err)
	}
	// Two servers with one name: refuse to guess.
	f.AddServer(fake.ServerSpec{Name: "twin", IPs: []string{"10.0.0.7"}})
	f.AddServer(fake.ServerSpec{Name: "twin", IPs: []string{"10.0.0.8"}})
	if _, err := inst.InstanceExists(ctx, node("twin", "")); err == nil {
		t.Error("two servers named twin: no error")
	}
	// Name look-up is exact, not a regular expression match.
	f.AddServer(fake.ServerSpec{Name: "web-10", IPs: []string{"10.0.0.9"}})
	if ok, err := inst.InstanceExists(ctx, node("web-1", "")); err != nil || ok {
		t.Errorf("web-1 matched web-10: %v %v", ok, err)
	}
}

// One Keystone token serves every call; an expired one costs exactly one re-authentication.
func TestSessionReusesTokenAndReauthenticatesOnce(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	ctx := context.Background()
	for range 20 {
		if _, err := inst.InstanceMetadata(ctx, node("n1", "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.TokensIssued(); n != 1 {
		t.Fatalf("tokens issued for 20 look-ups = %d, want 1", n)
	}
	f.ExpireTokens()
	for range 5 {
		if _, err := inst.InstanceMetadata(ctx, node("n1", "")); err != nil {
			t.Fatalf("after token expiry: %v", err)
		}
	}
	if n := f.TokensIssued(); n != 2 {
		t.Errorf("tokens issued after one expiry = %d, want 2", n)
	}
}

func TestWrongPasswordIsAnError(t *testing.T) {
	f := newFake(t, fake.Options{Password: "right"})
	c := newTestCloud(t, f, "")
	c.cfg.Global.Password = "wrong-password-xyz"
	inst, _ := c.InstancesV2()
	_, err := inst.InstanceExists(context.Background(), node("n1", ""))
	if err == nil {
		t.Fatal("wrong password: no error")
	}
	if s := err.Error(); strings.Contains(s, "wrong-password-xyz") {
		t.Errorf("error echoes the password: %s", s)
	}
}

// OS_CCM_REGIONAL=true (as upstream): a new Node gets openstack://<region>/<id>; a Node that
// has a providerID for its server keeps it in whichever form it has.
func TestRegionalProviderIDs(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", AZ: "az-1", Flavor: "m1.small", IPs: []string{"10.0.0.7"}})
	ctx := context.Background()
	for _, tc := range []struct {
		env, have, want string
	}{
		{"true", "", "openstack://RegionOne/" + id},
		{"true", "openstack:///" + id, "openstack:///" + id},
		{"", "", "openstack:///" + id},
		{"", "openstack://RegionOne/" + id, "openstack://RegionOne/" + id},
		{"1", "", "openstack:///" + id}, // only "true", as upstream
	} {
		t.Setenv(regionalProviderIDEnv, tc.env)
		inst, _ := newTestCloud(t, f, "").InstancesV2()
		md, err := inst.InstanceMetadata(ctx, node("n1", tc.have))
		if err != nil {
			t.Fatal(err)
		}
		if md.ProviderID != tc.want {
			t.Errorf("OS_CCM_REGIONAL=%q, Node providerID %q: got %q, want %q", tc.env, tc.have, md.ProviderID, tc.want)
		}
	}
}
