package integration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Nodes that join get the upstream CCM's topology labels: topology.k8s.aws/zone-id always,
// network-node-layer-N where EC2 has an instance topology. Then, with
// ec2:DescribeInstanceTopology denied, a Node of a type that must have a topology is still
// initialised, with the zone ID only. (One test, in this order: after the denial the ccm does
// not ask again for a day.)
func TestNodeTopologyLabels(t *testing.T) {
	add := func(it, name, ip, zone string) string {
		id := fake.AddInstance(fakeaws.Instance{Type: it, Zone: zone, PrivateDNS: name,
			ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{ip}}}})
		newNode(t, name, "")
		return id
	}
	check := func(n *v1.Node, id, zone string, layers bool) {
		t.Helper()
		want := map[string]string{"topology.k8s.aws/zone-id": fakeaws.ZoneID(zone)}
		nodes, _ := fake.NetworkNodes(id)
		if layers && len(nodes) < 3 {
			t.Fatalf("the fake has no topology for %s", id)
		}
		for i, nn := range nodes {
			if layers {
				want["topology.k8s.aws/network-node-layer-"+string(rune('1'+i))] = nn
			}
		}
		for k, v := range want {
			if n.Labels[k] != v {
				t.Errorf("%s label %s = %q, want %q", n.Name, k, n.Labels[k], v)
			}
		}
		if !layers && n.Labels["topology.k8s.aws/network-node-layer-1"] != "" {
			t.Errorf("%s has layer labels %v", n.Name, n.Labels)
		}
	}

	p5 := add("p5.48xlarge", "ip-10-0-8-81.ec2.internal", "10.0.8.81", "us-east-1a")
	t3 := add("t3.medium", "ip-10-0-8-82.ec2.internal", "10.0.8.82", "us-east-1b")
	check(initialised(t, "ip-10-0-8-81.ec2.internal"), p5, "us-east-1a", true)
	check(initialised(t, "ip-10-0-8-82.ec2.internal"), t3, "us-east-1b", false)

	fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{"DescribeInstanceTopology": true}})
	defer fake.SetFaults(fakeaws.Faults{})
	denied := fake.Calls()["ec2:DescribeInstanceTopology"]
	trn := add("trn1.32xlarge", "ip-10-0-8-83.ec2.internal", "10.0.8.83", "us-east-1c")
	check(initialised(t, "ip-10-0-8-83.ec2.internal"), trn, "us-east-1c", false)
	if fake.Calls()["ec2:DescribeInstanceTopology"] == denied {
		t.Error("the ccm never asked for the trn1's topology: the denial was not tested")
	}
}
