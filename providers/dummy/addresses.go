package dummy

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
)

// Annotations of the dummy provider: those of every pool load balancer (common/poollb), under
// the prefix dummy.ccm.io/, with kube-vip's and MetalLB's names for them.
const (
	// AnnotationLoadBalancerIPs asks for addresses, comma-separated, at most one per family.
	AnnotationLoadBalancerIPs = "dummy.ccm.io/load-balancer-ips"
	// AnnotationKubeVIPLoadBalancerIPs is kube-vip's name for the same, accepted for migration.
	AnnotationKubeVIPLoadBalancerIPs = poollb.KubeVIPAnnotation
	// AnnotationSharedIP opts a Service into sharing an address with the other Services that
	// carry the same value, as long as their ports and protocols do not collide.
	AnnotationSharedIP = "dummy.ccm.io/allow-shared-ip"
	// AnnotationAddressPool picks the pool the Service's addresses come from, among those
	// serving its namespace; a pool with auto-assign = false hands out to a Service naming it.
	AnnotationAddressPool = "dummy.ccm.io/address-pool"
)

// poolNames are the annotations the pool decision reads: the constants above and MetalLB's
// names for them (poollb.ForProvider), each in the provider's annotation table.
var poolNames = poollb.ForProvider("dummy.ccm.io/")

// PoolExhaustedError says no pool serving the Service has a free address of a family.
type PoolExhaustedError = poollb.ExhaustedError

// addressesFor picks the Service's addresses (poollb.View.Choose) from what this process
// knows of the store's records and the addresses learned from Services' statuses. have is the
// Service's own record (zero if it has none); k is its record key. Callers hold l.mu.
func (l *loadBalancers) addressesFor(svc *v1.Service, id ownership.Identity, k string, have Record) (poollb.Choice, error) {
	v := poollb.View{Names: poolNames, Pools: l.pools, Held: l.owner, Holder: l.holderFor(id)}
	return v.Choose(poollb.Request{Service: svc, Key: k, Own: poollb.CanonicalAddrs(have.IPs)})
}

// holderFor describes a record key for a Service of id: a record ccm made for a Service of
// id's cluster and namespace is in scope; an address learned from a Service's status is held
// under the name ccm computes for that Service.
func (l *loadBalancers) holderFor(id ownership.Identity) func(k string) poollb.Holder {
	return func(k string) poollb.Holder {
		if r, ok := l.records.get(k); ok {
			owner, owned := ownership.Owner(id.Cluster, r.Tags)
			return poollb.Holder{Record: true, InScope: owned && owner.Namespace == id.Namespace && r.Name == k,
				Service: owner.Service(), SharingKey: r.SharingKey, Ports: r.Ports, Backends: poollb.Backends{Local: r.Local, Pods: r.Pods}}
		}
		ns, name, ok := names.Parse(id.Cluster, k)
		return poollb.Holder{InScope: ok && ns == id.Namespace, Service: ns + "/" + name}
	}
}
