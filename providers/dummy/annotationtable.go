package dummy

import (
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotations is every annotation this provider reads, with what each can reach (common/reach):
// the docs' table (docs/security.md) and the generated hostile suite's input.
var annotations = reach.Table{
	{Name: AnnotationLoadBalancerIPs, Reach: reach.Object, Object: "address", List: true,
		Check: "in a pool serving the Service's namespace and held by no other Service (unless both opt into sharing)"},
	{Name: AnnotationKubeVIPLoadBalancerIPs, Reach: reach.Object, Object: "address", List: true,
		Check: "in a pool serving the Service's namespace and held by no other Service (unless both opt into sharing)"},
	{Name: AnnotationMetalLBLoadBalancerIPs, Reach: reach.Object, Object: "address", List: true,
		Check: "in a pool serving the Service's namespace and held by no other Service (unless both opt into sharing)"},
	{Name: AnnotationMetalLBLegacyLoadBalancerIPs, Reach: reach.Object, Object: "address", List: true,
		Check: "in a pool serving the Service's namespace and held by no other Service (unless both opt into sharing)"},
	{Name: AnnotationAddressPool, Reach: reach.Object, Object: "address pool", Check: "a pool serving the Service's namespace"},
	{Name: AnnotationMetalLBAddressPool, Reach: reach.Object, Object: "address pool", Check: "a pool serving the Service's namespace"},
	{Name: AnnotationMetalLBLegacyAddressPool, Reach: reach.Object, Object: "address pool", Check: "a pool serving the Service's namespace"},
	{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "not enforced here (no firewall): a Warning says so"},
	{Name: AnnotationSharedIP, Reach: reach.Text, Max: maxSharingKeyLen, Check: "scoped to the Service's cluster and namespace"},
	{Name: AnnotationMetalLBSharedIP, Reach: reach.Text, Max: maxSharingKeyLen, Check: "scoped to the Service's cluster and namespace"},
	{Name: AnnotationMetalLBLegacySharedIP, Reach: reach.Text, Max: maxSharingKeyLen, Check: "scoped to the Service's cluster and namespace"},
}

var checker = &reach.Checker{Table: annotations, Prefixes: []string{"dummy.ccm.io/"}}
