package nodeguard

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedv1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/provider"
)

// Cloud is a provider's cloud with its InstancesV2 guarded.
type Cloud struct {
	cloudprovider.Interface
	guard *Guard
}

// Wrap guards cloud's InstancesV2 (if it has one) with a confirmation window.
func Wrap(cloud cloudprovider.Interface, window time.Duration) cloudprovider.Interface {
	return WrapWith(cloud, Settings{Window: window})
}

// WrapWith guards cloud's InstancesV2 (if it has one) with all of s.
func WrapWith(cloud cloudprovider.Interface, s Settings) cloudprovider.Interface {
	inst, ok := cloud.InstancesV2()
	if !ok || inst == nil {
		return cloud
	}
	return &Cloud{Interface: cloud, guard: NewWith(inst, cloud.ProviderName(), s)}
}

// SetInformers implements cloudprovider.InformerUser: the library hands the informers to the
// cloud it runs, which is this wrapper; the provider's own cloud gets them if it uses them.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	provider.PassInformers(c.Interface, f)
}

// InstancesV2 returns the guarded instances.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.guard, true }

// Initialize initialises the provider, then gives the guard an event recorder.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.Interface.Initialize(b, stop)
	klog.InfoS("Node deletion guard", "setting", c.guard.String())
	client, err := b.Client("ccm-node-guard")
	if err != nil {
		klog.ErrorS(err, "No API client for node deletion guard events")
		return
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedv1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c.guard.SetRecorder(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "ccm-node-guard"}))
	go func() {
		<-stop
		broadcaster.Shutdown()
	}()
}
