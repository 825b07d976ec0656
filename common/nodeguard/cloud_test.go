package nodeguard

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
)

// informed is a cloud with InstancesV2 that keeps the informers it is handed.
type informed struct {
	cloudprovider.Interface
	got informers.SharedInformerFactory
}

func (c *informed) InstancesV2() (cloudprovider.InstancesV2, bool) {
	return &scripted{exists: true}, true
}
func (c *informed) ProviderName() string                           { return "informed" }
func (c *informed) SetInformers(f informers.SharedInformerFactory) { c.got = f }

// The library hands informers to the wrapper it runs: the provider's cloud must get them
// (its routes read the Nodes through them).
func TestWrapperHandsInformersOn(t *testing.T) {
	base := &informed{}
	wrapped := WrapWith(base, Settings{})
	u, ok := wrapped.(cloudprovider.InformerUser)
	if !ok || wrapped == cloudprovider.Interface(base) {
		t.Fatalf("the wrapped cloud %T is no InformerUser", wrapped)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	u.SetInformers(f)
	if base.got != f {
		t.Error("the provider's cloud did not get the informer factory")
	}
}
