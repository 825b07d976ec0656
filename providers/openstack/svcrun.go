package openstack

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

// svcRun is one reconcile of one Service (EnsureLoadBalancer, UpdateLoadBalancer or
// EnsureLoadBalancerDeleted): what stays the same through every call it makes to Octavia and
// Neutron. It is built once per reconcile, once its OpenStack session is open; what varies
// within it (the family's spec, the load balancer, its listeners and pools) is passed to each
// step.
type svcRun struct {
	l           *loadBalancers
	cl          *clients
	clusterName string
	svc         *v1.Service
	id          ownership.Identity // the Service's ownership, as its objects are marked
	// nodes are the Nodes that are members (node-selector applied); none for a delete.
	nodes []*v1.Node
	// rep gathers what the sync found, reported as Events when it ends; a delete's report is
	// read by nobody.
	rep *syncReport
}

func (l *loadBalancers) newRun(cl *clients, clusterName string, svc *v1.Service, nodes []*v1.Node, rep *syncReport) *svcRun {
	return &svcRun{l: l, cl: cl, clusterName: clusterName, svc: svc, id: ownership.Of(clusterName, svc), nodes: nodes, rep: rep}
}

// apart is r for the listeners of a load balancer the Service leaves (its own that other
// Services still use, or one it used by load-balancer-id): they are read from Octavia, not
// from the sync's bulk read, and what is found there is no finding of this Service's sync, so
// it goes into a report of its own that nobody reads.
func (r *svcRun) apart() *svcRun {
	a := *r
	a.rep = &syncReport{}
	return &a
}
