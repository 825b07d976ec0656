package vsphere

import (
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotations is every annotation this provider reads, with what each can reach (common/reach):
// the docs' table (docs/security.md) and the generated hostile suite's input. The address a
// Service asks for is spec.loadBalancerIP, checked against the pools serving its namespace.
var annotations = reach.Table{
	{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "not enforced here (no firewall): a Warning says so"},
}

var checker = &reach.Checker{Table: annotations}
