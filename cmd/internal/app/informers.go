package app

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
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
//
// Annotations stay, even kubectl's last-applied-configuration: the node controller Updates
// whole Nodes from the cache, and a dropped annotation would be deleted on the server.
// It mutates in place, which client-go allows (the object is freshly decoded), and is
// idempotent. Anything that is not an object (a deletion tombstone) passes unchanged.
func trimObject(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	if n, ok := obj.(*v1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}
