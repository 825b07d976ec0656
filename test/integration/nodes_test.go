package integration

import (
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
	v1 "k8s.io/api/core/v1"
)

const nodeConfig = `
[Global]
region = lab
instance-type = metal.small

[Instance "it-node-a"]
internal-ip = 10.1.0.11
internal-ip = fd00:1::11
external-ip = 203.0.113.11
zone = rack-1
instance-type = metal.large

[Instance "it-node-b"]
internal-ip = 10.1.0.12
zone = rack-2
`

func TestNodeInitialisation(t *testing.T) {
	startCCM(t, "ccm-nodes", nodeConfig, "--node-labels=node.example/pool=blue")
	newNode(t, "it-node-a")
	newNode(t, "it-node-b")

	for _, tc := range []struct {
		name, providerID, zone, itype string
		addrs                         []v1.NodeAddress
	}{
		{"it-node-a", "dummy:///it-node-a", "rack-1", "metal.large", []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.1.0.11"}, {Type: v1.NodeInternalIP, Address: "fd00:1::11"},
			{Type: v1.NodeExternalIP, Address: "203.0.113.11"}, {Type: v1.NodeHostName, Address: "it-node-a"}}},
		{"it-node-b", "dummy:///it-node-b", "rack-2", "metal.small", []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.1.0.12"}, {Type: v1.NodeHostName, Address: "it-node-b"}}},
	} {
		var n *v1.Node
		eventually(t, 30*time.Second, tc.name+" initialised", func() (bool, error) {
			var err error
			n, err = node(tc.name)
			return err == nil && testenv.Initialised(n), err
		})
		if n.Spec.ProviderID != tc.providerID {
			t.Errorf("%s providerID = %q, want %q", tc.name, n.Spec.ProviderID, tc.providerID)
		}
		for label, want := range map[string]string{
			v1.LabelTopologyZone:       tc.zone,
			v1.LabelTopologyRegion:     "lab",
			v1.LabelInstanceTypeStable: tc.itype,
			"node.example/pool":        "blue", // --node-labels
		} {
			if got := n.Labels[label]; got != want {
				t.Errorf("%s label %s = %q, want %q", tc.name, label, got, want)
			}
		}
		if len(n.Status.Addresses) != len(tc.addrs) {
			t.Errorf("%s addresses = %v, want %v", tc.name, n.Status.Addresses, tc.addrs)
			continue
		}
		for i := range tc.addrs {
			if n.Status.Addresses[i] != tc.addrs[i] {
				t.Errorf("%s address %d = %v, want %v", tc.name, i, n.Status.Addresses[i], tc.addrs[i])
			}
		}
	}
}
