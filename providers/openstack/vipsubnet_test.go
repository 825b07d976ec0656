package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func addrNode(name string, addrs ...v1.NodeAddress) *v1.Node {
	n := node(name, "")
	n.Status.Addresses = addrs
	return n
}

func internalAddr(a string) v1.NodeAddress {
	return v1.NodeAddress{Type: v1.NodeInternalIP, Address: a}
}
func externalAddr(a string) v1.NodeAddress {
	return v1.NodeAddress{Type: v1.NodeExternalIP, Address: a}
}

// The address matched against the node's ports is upstream's nodeAddressForLB: the first
// InternalIP of the family, else the first ExternalIP of the family.
func TestSubnetNodeAddress(t *testing.T) {
	host := v1.NodeAddress{Type: v1.NodeHostName, Address: "10.9.9.9"}
	for _, tc := range []struct {
		name   string
		addrs  []v1.NodeAddress
		family v1.IPFamily
		want   string
	}{
		{"internal first", []v1.NodeAddress{externalAddr("203.0.113.5"), internalAddr("10.0.0.5"), internalAddr("10.0.0.6")}, v1.IPv4Protocol, "10.0.0.5"},
		{"external when no internal", []v1.NodeAddress{host, externalAddr("203.0.113.5")}, v1.IPv4Protocol, "203.0.113.5"},
		{"internal of the family only", []v1.NodeAddress{internalAddr("fd00::5"), externalAddr("203.0.113.5")}, v1.IPv4Protocol, "203.0.113.5"},
		{"ipv6", []v1.NodeAddress{internalAddr("10.0.0.5"), internalAddr("FD00:0::5")}, v1.IPv6Protocol, "fd00::5"},
		{"hostname is no address", []v1.NodeAddress{host}, v1.IPv4Protocol, ""},
		{"none of the family", []v1.NodeAddress{internalAddr("10.0.0.5")}, v1.IPv6Protocol, ""},
		{"not an address", []v1.NodeAddress{internalAddr("node-a")}, v1.IPv4Protocol, ""},
		{"no addresses", nil, v1.IPv4Protocol, ""},
	} {
		if got := subnetNodeAddress(addrNode("n", tc.addrs...), tc.family); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSubnetNodeAndPort(t *testing.T) {
	nodes := []*v1.Node{addrNode("c", internalAddr("10.0.0.3")), addrNode("a"), addrNode("b", internalAddr("fd00::2"), internalAddr("10.0.0.2"))}
	if n, a := subnetNode(nodes, v1.IPv4Protocol); n == nil || n.Name != "b" || a != "10.0.0.2" {
		t.Errorf("IPv4: %v %q, want the first by name with an address (b, 10.0.0.2)", n, a)
	}
	if n, a := subnetNode(nodes, v1.IPv6Protocol); n == nil || n.Name != "b" || a != "fd00::2" {
		t.Errorf("IPv6: %v %q", n, a)
	}
	if n, _ := subnetNode(nodes[1:2], v1.IPv4Protocol); n != nil {
		t.Errorf("a node without addresses was picked")
	}
	ps := []ports.Port{
		{FixedIPs: []ports.IP{{SubnetID: "s-other", IPAddress: "10.1.0.2"}}},
		{FixedIPs: []ports.IP{{SubnetID: "s-v6", IPAddress: "fd00:0:0::2"}, {SubnetID: "s-v4", IPAddress: "10.0.0.2"}}},
	}
	for addr, want := range map[string]string{"10.0.0.2": "s-v4", "fd00::2": "s-v6", "10.0.0.9": "", "x": ""} {
		if got := subnetOfAddress(ps, addr); got != want {
			t.Errorf("subnetOfAddress(%s) = %q, want %q", addr, got, want)
		}
	}
}

// A config without subnet-id or network-id (the upstream chart's empty [LoadBalancer]): the
// VIP subnet and the members' subnet are the subnet of a Node's port, as upstream finds them;
// one port list for every Service and sync while that Node stays; member-subnet-id still
// names the members' subnet. Without the detection every Service was refused.
func TestVIPSubnetFromNodePorts(t *testing.T) {
	f := newFake(t, fake.Options{})
	netID, subID := f.AddNetwork("nodes", "10.20.0.0/24", false)
	var nodes []*v1.Node
	for i, ip := range []string{"10.20.0.11", "10.20.0.10"} {
		name := []string{"node-b", "node-a"}[i]
		id := f.AddServer(fake.ServerSpec{Name: name, NetworkID: netID, SubnetID: subID, IPs: []string{ip}})
		n := node(name, "openstack:///"+id)
		n.Status.Addresses = []v1.NodeAddress{internalAddr(ip)}
		nodes = append(nodes, n)
	}
	conf := strings.Replace(f.CloudConfig("pending-retry = 200ms", "floating-network-id = "+fake.PublicNetworkID), "subnet-id = "+fake.PrivateSubnetID+"\n", "", 1)
	if strings.Contains(conf, "subnet-id") {
		t.Fatalf("config still names a subnet:\n%s", conf)
	}
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	lb := lbOf(t, c)
	for _, name := range []string{"web", "api", "db"} {
		ensureUntilReady(t, lb, lbService(name, nil), nodes)
	}
	for _, name := range []string{"web", "api", "db"} {
		if err := lb.UpdateLoadBalancer(context.Background(), cluster, lbService(name, nil), nodes); err != nil {
			t.Fatal(err)
		}
		got := fakeLB(t, f, name)
		if got.VipSubnetID != subID || len(got.Listeners) != 1 || !slices.Equal(got.Listeners[0].MemberSubnets, []string{subID, subID}) {
			t.Errorf("%s: VIP subnet %s, listeners %+v; want VIP and members on %s", name, got.VipSubnetID, got.Listeners, subID)
		}
	}
	if n := f.Calls()["neutron.ListPorts"]; n != 1 {
		t.Errorf("%d port lists for 3 Services and 6 syncs, want 1 (the detection is cached)", n)
	}

	// member-subnet-id names the members' subnet; the VIP subnet is still detected.
	c2, err := New(strings.NewReader(conf + "member-subnet-id = " + fake.PrivateSubnetID + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ensureUntilReady(t, lbOf(t, c2), lbService("members", nil), nodes)
	if got := fakeLB(t, f, "members"); got.VipSubnetID != subID || !slices.Equal(got.Listeners[0].MemberSubnets, []string{fake.PrivateSubnetID, fake.PrivateSubnetID}) {
		t.Errorf("member-subnet-id: VIP subnet %s, members %v", got.VipSubnetID, got.Listeners[0].MemberSubnets)
	}

	// Nothing to detect from: an error naming what to set, nothing created.
	c3, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.LoadBalancers())
	_, err = lbOf(t, c3).EnsureLoadBalancer(context.Background(), cluster, lbService("lonely", nil), nil)
	if err == nil || !strings.Contains(err.Error(), "subnet-id") || len(f.LoadBalancers()) != before {
		t.Errorf("no Nodes: %v, %d load balancers (was %d)", err, len(f.LoadBalancers()), before)
	}
}
