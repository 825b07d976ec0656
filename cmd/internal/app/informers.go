package app

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	servicecontroller "k8s.io/cloud-provider/controllers/service"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// slimInformers replaces the shared informer factory the library built (same client, same
// resync period) with one that trims every object before it is cached. Each controller keeps
// its own view of every Node and Service, so what is cached is paid once per object for as
// long as the process runs. The library reads c.SharedInformers only after initCloud: when it
// builds the controllers and then starts the factory. It also logs the Go memory limit in
// force (see memory.go), the other half of keeping the peak low.
func slimInformers(c *ccmconfig.CompletedConfig) {
	logMemoryLimit()
	c.SharedInformers = informers.NewSharedInformerFactoryWithOptions(c.VersionedClient,
		ccmapp.ResyncPeriod(c)(), informers.WithTransform(trimObject))
}

// trimObject drops the fields no controller of the ccm reads (checked against
// k8s.io/cloud-provider's controllers and every provider):
//   - metadata.managedFields (server-side apply bookkeeping, often the largest part of an
//     object). An Update sent without it keeps the server's copy, so writes are unaffected.
//   - a Node's status.images (up to 50 image names and digests per Node, written by the
//     kubelet). The library writes Node status only through patches computed between two
//     cached copies, and a Node Update ignores status, so the images are never overwritten.
//   - a Service's spec.selector (the Pods it sends to, a map per Service) and its
//     kubectl.kubernetes.io/last-applied-configuration annotation (a copy of the whole
//     applied Service, often larger than the rest of it): no controller or provider reads
//     them, and Services are only ever written through patches computed between two cached
//     copies (finalizers, status), which then agree on them and leave them alone.
//
// A Node's annotations stay, even kubectl's last-applied-configuration: the node controller
// Updates whole Nodes from the cache, and a dropped annotation would be deleted on the server.
// It mutates in place, which client-go allows (the object is freshly decoded), and is
// idempotent. Anything that is not an object (a deletion tombstone) passes unchanged.
func trimObject(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *v1.Node:
		o.Status.Images = nil
	case *v1.Service:
		o.Spec.Selector = nil
		delete(o.Annotations, v1.LastAppliedConfigAnnotation)
	}
	return obj, nil
}

// nodeSetKey is the one queue key the service controller sees for every Node event.
const nodeSetKey = "ccm-node-set-changed"

// NewServiceController is the library's "service" controller (--service-controller=library; ccm's
// own in common/servicecontroller is the default), fed a Node informer whose events all carry
// one name. The library's controller queues each Node event under the Node's name
// and answers every one with a sync of all LoadBalancer Services against the whole Node list,
// so N Nodes registered at once cost N full syncs (Services × Nodes work each). The sync reads
// the Node lister, never the event's Node, so one key loses nothing: the queue holds it once
// while it waits and once more if an event comes during a sync, which then sees that event.
func NewServiceController(initContext ccmapp.ControllerInitContext, c *ccmconfig.CompletedConfig, cloud cloudprovider.Interface) ccmapp.InitFunc {
	return func(ctx context.Context, cc genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		sc, err := servicecontroller.New(cloud, c.ClientBuilder.ClientOrDie(initContext.ClientName),
			c.SharedInformers.Core().V1().Services(), oneKeyNodes{c.SharedInformers.Core().V1().Nodes()},
			c.ComponentConfig.KubeCloudShared.ClusterName, utilfeature.DefaultFeatureGate)
		if err != nil { // as the library does: the ccm runs on without the controller
			klog.ErrorS(err, "Failed to start the service controller")
			return nil, false, nil
		}
		go sc.Run(ctx, int(c.ComponentConfig.ServiceController.ConcurrentServiceSyncs), cc.ControllerManagerMetrics)
		return nil, true, nil
	}
}

type oneKeyNodes struct{ coreinformers.NodeInformer }

func (n oneKeyNodes) Informer() cache.SharedIndexInformer {
	return oneKeyInformer{n.NodeInformer.Informer()}
}

// oneKeyInformer wraps the handlers added through it; the shared informer stays the same.
type oneKeyInformer struct{ cache.SharedIndexInformer }

func (i oneKeyInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(oneKeyHandler{h})
}

func (i oneKeyInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, p time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(oneKeyHandler{h}, p)
}

func (i oneKeyInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(oneKeyHandler{h}, o)
}

// oneKeyHandler passes shallow copies renamed to nodeSetKey: the handler still sees every
// other field (the library filters updates on labels and providerID), and the cached Nodes
// are never changed.
type oneKeyHandler struct{ h cache.ResourceEventHandler }

func (o oneKeyHandler) OnAdd(obj any, initial bool) { o.h.OnAdd(renamed(obj), initial) }
func (o oneKeyHandler) OnUpdate(old, cur any)       { o.h.OnUpdate(renamed(old), renamed(cur)) }
func (o oneKeyHandler) OnDelete(obj any)            { o.h.OnDelete(renamed(obj)) }

func renamed(obj any) any {
	switch o := obj.(type) {
	case *v1.Node:
		n := *o
		n.Name = nodeSetKey
		return &n
	case cache.DeletedFinalStateUnknown:
		o.Key, o.Obj = nodeSetKey, renamed(o.Obj)
		return o
	}
	return obj
}
