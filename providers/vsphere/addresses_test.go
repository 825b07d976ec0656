package vsphere

import (
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/types"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/poollb/pooltest"
)

func TestNodeAddressSelection(t *testing.T) {
	nics := []types.GuestNicInfo{
		{Network: "mgmt", IpAddress: []string{"fe80::1", "192.168.10.5", "2001:db8:10::5"}},
		{Network: "k8s", IpAddress: []string{"127.0.0.1", "172.17.0.1", "10.20.0.5", "fd00:20::5"}},
		{Network: "public", IpAddress: []string{"203.0.113.9"}},
	}
	a := func(t v1.NodeAddressType, ip string) v1.NodeAddress { return v1.NodeAddress{Type: t, Address: ip} }
	host := a(v1.NodeHostName, "n1")
	for _, tc := range []struct {
		name     string
		nodes    string // [Nodes] body
		families []string
		want     []v1.NodeAddress
	}{
		{"no rules: first usable address is internal and external, as upstream", "", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "192.168.10.5"), a(v1.NodeExternalIP, "192.168.10.5"), host}},
		{"no rules, dual-stack", "", []string{"ipv4", "ipv6"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "192.168.10.5"), a(v1.NodeInternalIP, "2001:db8:10::5"),
				a(v1.NodeExternalIP, "192.168.10.5"), a(v1.NodeExternalIP, "2001:db8:10::5"), host}},
		{"no rules, exclusions still apply per type", "exclude-internal-network-subnet-cidr = 192.168.0.0/16\nexclude-external-network-subnet-cidr = \"192.168.0.0/16,172.16.0.0/12,10.0.0.0/8\"", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "172.17.0.1"), a(v1.NodeExternalIP, "203.0.113.9"), host}},
		{"internal rule found: no external fallback", "internal-vm-network-name = k8s", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "172.17.0.1"), host}},
		{"internal subnet picks the second NIC", "internal-network-subnet-cidr = 10.20.0.0/16", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "10.20.0.5"), host}},
		{"dual-stack in configured order", "internal-network-subnet-cidr = \"10.20.0.0/16,fd00:20::/64\"", []string{"ipv6", "ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "fd00:20::5"), a(v1.NodeInternalIP, "10.20.0.5"), host}},
		{"network names", "internal-vm-network-name = k8s\nexternal-vm-network-name = public\nexclude-internal-network-subnet-cidr = 172.16.0.0/12", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "10.20.0.5"), a(v1.NodeExternalIP, "203.0.113.9"), host}},
		{"external subnet", "internal-network-subnet-cidr = 10.0.0.0/8\nexternal-network-subnet-cidr = 192.168.0.0/16", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "10.20.0.5"), a(v1.NodeExternalIP, "192.168.10.5"), host}},
		{"IPv6 only skips link-local", "", []string{"ipv6"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "2001:db8:10::5"), a(v1.NodeExternalIP, "2001:db8:10::5"), host}},
		{"rules match nothing: first usable address for both, as upstream", "internal-network-subnet-cidr = 100.64.0.0/10", []string{"ipv4"},
			[]v1.NodeAddress{a(v1.NodeInternalIP, "192.168.10.5"), a(v1.NodeExternalIP, "192.168.10.5"), host}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(strings.NewReader("[Global]\nserver = vc\nuser = u\npassword = p\n[Nodes]\n" + tc.nodes + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := c.rules.nodeAddresses(nics, tc.families, "n1")
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSwapUUID(t *testing.T) {
	if got := swapUUID("42301f2a-c1b2-4d3e-8f90-0123456789ab"); got != "2a1f3042-b2c1-3e4d-8f90-0123456789ab" {
		t.Errorf("swapUUID = %s", got)
	}
}

// The pool load balancer's behaviour (common/poollb/pooltest), as every pool provider runs it:
// each case on a simulator of its own.
func TestPoolBehaviour(t *testing.T) {
	pooltest.Run(t, pooltest.Harness{Names: poolNames, New: func(t *testing.T, pools string, events *cloudtest.EventSink) pooltest.Cloud {
		s := startSim(t)
		c, err := New(strings.NewReader(simConfig(s, pools)))
		if err != nil {
			t.Fatal(err)
		}
		c.UseClusterName(pooltest.Cluster)
		c.Initialize(events, nil)
		return pooltest.Cloud{LB: c.lb, Reload: func(pools string) (bool, error) { return c.Reload([]byte(simConfig(s, pools))) }}
	}})
}
