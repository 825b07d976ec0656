package vsphere

import (
	"github.com/ccm-project/ccm/common/poollb"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// poolNames are the annotations the pool decision reads: those of every pool load balancer
// (common/poollb) under the prefix vsphere.ccm.io/ (load-balancer-ips, allow-shared-ip,
// address-pool), with kube-vip's and MetalLB's names for them, read alike for migration.
// spec.loadBalancerIP asks for an address too.
var poolNames = poollb.ForProvider("vsphere.ccm.io/")

// annotations is every annotation this provider reads, with what each can reach (common/reach):
// the docs' table (docs/security.md) and the generated hostile suite's input. The address a
// Service asks for is checked against the pools serving its namespace and the records of every
// cluster.
var annotations = append(poolNames.Table(),
	reach.Annotation{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "not enforced here (no firewall): a Warning says so"},
)

var checker = &reach.Checker{Table: annotations, Prefixes: []string{"vsphere.ccm.io/"}}
