package leader

import (
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

type informed struct {
	fakecloud.Cloud
	got informers.SharedInformerFactory
}

func (c *informed) SetInformers(f informers.SharedInformerFactory) { c.got = f }

// The library hands informers to the outermost cloud: through the gate and the in-flight
// tracking they reach the provider's (its routes read the Nodes through them).
func TestWrappersHandInformersOn(t *testing.T) {
	base := &informed{}
	outer := Gate(Track(base, time.Second), make(chan struct{}))
	u, ok := outer.(cloudprovider.InformerUser)
	if !ok {
		t.Fatalf("%T is no InformerUser", outer)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	u.SetInformers(f)
	if base.got != f {
		t.Error("the provider's cloud did not get the informer factory")
	}
}
