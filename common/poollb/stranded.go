package poollb

import (
	"net/netip"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/ownership"
)

// Replace puts next (made from cfg) in place of a provider's running pools and their config
// when cfg differs from the running one, forgetting the usage metrics of the pools gone; it
// says whether it did. The caller holds its lock, and warns the Services whose address left
// the pools (WarnStranded).
func Replace(provider string, running *map[string]*ippool.Config, pools *[]*ippool.Pool, cfg map[string]*ippool.Config, next []*ippool.Pool) bool {
	if reflect.DeepEqual(*running, cfg) {
		return false
	}
	ippool.ForgetUsage(provider, *pools, next)
	*running, *pools = cfg, next
	klog.InfoS("Load balancer pools changed", "provider", provider, "pools", len(next))
	return true
}

// Holding is a Service's addresses as its record holds them.
type Holding struct {
	Namespace, Name, UID string
	Addrs                []netip.Addr
}

// HoldingOf is the holding of a record with tags and addresses ips, when its tags make it a
// Service's of cluster; false for a record of another cluster or of no Service.
func HoldingOf(cluster string, tags map[string]string, ips []string) (Holding, bool) {
	owner, ok := ownership.Owner(cluster, tags)
	if !ok {
		return Holding{}, false
	}
	return Holding{Namespace: owner.Namespace, Name: owner.Name, UID: owner.UID, Addrs: CanonicalAddrs(ips)}, true
}

// Stranded returns, for each holding with addresses that no pool serving its namespace holds
// (the pools changed under it), the holding with only those addresses. Pure.
func Stranded(pools []*ippool.Pool, hs []Holding) []Holding {
	var out []Holding
	for _, h := range hs {
		serving := ippool.For(pools, h.Namespace)
		var left []netip.Addr
		for _, a := range h.Addrs {
			if !slices.ContainsFunc(serving, func(p *ippool.Pool) bool { return p.Contains(a) }) {
				left = append(left, a)
			}
		}
		if len(left) > 0 {
			h.Addrs = left
			out = append(out, h)
		}
	}
	return out
}

// WarnStranded gives each Service of Stranded(pools, hs) the Warning ReasonOutsidePools: after
// a change of the pools, the Services whose address left them hear of it at once, not at their
// next sync. The Service keeps the address. It returns how many were warned.
func WarnStranded(rec Recorder, pools []*ippool.Pool, hs []Holding) int {
	stranded := Stranded(pools, hs)
	for _, h := range stranded {
		svc := &v1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: h.Name, UID: types.UID(h.UID)}}
		rec.Advise(svc, ReasonOutsidePools, OutsideMessage(h.Namespace, h.Addrs))
	}
	return len(stranded)
}
