package poollb

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ippool"
)

// Holding is a Service's addresses as its record holds them.
type Holding struct {
	Namespace, Name, UID string
	Addrs                []netip.Addr
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
