package leader

import (
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/provider"
)

// gated holds the library back until this process leads: the library initialises the cloud
// before it starts any controller, so blocking Initialize keeps a standby idle (no cloud calls,
// no informers) exactly as the library's own election did.
type gated struct {
	cloudprovider.Interface
	leading <-chan struct{}
}

// Gate returns cloud with its Initialize waiting for leading or stop.
func Gate(cloud cloudprovider.Interface, leading <-chan struct{}) cloudprovider.Interface {
	return &gated{Interface: cloud, leading: leading}
}

func (g *gated) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	select {
	case <-g.leading:
		g.Interface.Initialize(b, stop)
	case <-stop:
	}
}

// SetInformers implements cloudprovider.InformerUser for the cloud inside.
func (g *gated) SetInformers(f informers.SharedInformerFactory) {
	provider.PassInformers(g.Interface, f)
}
