package vsphere

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A VM in a datacenter the config leaves out is missing from the inventory, which is no
// answer about it: InstanceExists by its providerID is an error, not false. Once vCenter
// itself no longer knows the UUID, the VM is gone.
func TestVMOutsideConfiguredDatacentersIsNotGone(t *testing.T) {
	s := startSim(t)
	ctx := context.Background()
	vm, err := s.AddVM(ctx, "dc1-node", 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(s, "")
	if !strings.Contains(cfg, `datacenters = "DC0,DC1"`) {
		t.Fatal("testConfig changed shape")
	}
	c, err := New(strings.NewReader(strings.Replace(cfg, `datacenters = "DC0,DC1"`, `datacenters = "DC0"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dc1-node", UID: "u1"}, Spec: v1.NodeSpec{ProviderID: providerIDPrefix + vm.UUID}}
	if exists, err := inst.InstanceExists(ctx, node); err == nil {
		t.Errorf("VM in an unconfigured datacenter: InstanceExists = (%v, nil), want an error", exists)
	}
	if err := s.Destroy(ctx, vm.Ref); err != nil {
		t.Fatal(err)
	}
	if exists, err := inst.InstanceExists(ctx, node); err != nil || exists {
		t.Errorf("destroyed VM: InstanceExists = (%v, %v), want (false, nil)", exists, err)
	}
}
