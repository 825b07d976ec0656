package poollb

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Two Services share an address only when their traffic can go to the same place: both with
// externalTrafficPolicy Cluster (any node forwards), or both selecting the same pods (with
// Local, only the nodes running those pods answer, and one announcement serves them both),
// as MetalLB decides. A record that shares keeps the Service's policy and a digest of its pod
// selector, so the decision needs no Service but the asking one.

// Backends is what the sharing rule compares: whether the Service's traffic stays on the
// nodes of its pods, and a digest of its pod selector ("" for none).
type Backends struct {
	Local bool
	Pods  string
}

// BackendsOf reads svc's Backends.
func BackendsOf(svc *v1.Service) Backends {
	b := Backends{Local: svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal}
	if len(svc.Spec.Selector) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(svc.Spec.Selector)) {
			kv = append(kv, k+"="+svc.Spec.Selector[k])
		}
		sum := sha256.Sum256([]byte(strings.Join(kv, ",")))
		b.Pods = hex.EncodeToString(sum[:8])
	}
	return b
}

// compatible says whether Services with a and b may share an address.
func compatible(a, b Backends) bool {
	return (!a.Local && !b.Local) || (a.Pods != "" && a.Pods == b.Pods)
}
