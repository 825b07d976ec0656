package dummy

import (
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotations is every annotation this provider reads, with what each can reach (common/reach):
// the docs' table (docs/security.md) and the generated hostile suite's input. The pool
// annotations' reach is the pool load balancer's (poollb.Names.Table), as vSphere's is.
var annotations = append(poolNames.Table(),
	reach.Annotation{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "not enforced here (no firewall): a Warning says so"},
)

var checker = &reach.Checker{Table: annotations, Prefixes: []string{"dummy.ccm.io/"}}
