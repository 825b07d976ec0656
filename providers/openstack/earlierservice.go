package openstack

import (
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"

	"github.com/ccm-project/ccm/common/ownership"
)

// A Service deleted while its load balancer could not be (ccm down and the finalizer removed
// by hand, a delete Octavia kept refusing) leaves a load balancer tagged with its UID. A
// Service made again under the same namespace and name has another UID: the leftover is not
// its own, and it never becomes so. ccm writes nothing to it for the new Service:
//
//   - found by the Service's name, it is refused (find) and the new Service waits: ccm names a
//     load balancer after the Service's namespace and name only, as upstream does (tools, the
//     upstream CCM after a roll-back, and people find it by that name), so a second one of the
//     same name would make the name ambiguous. The leftover is an orphan for the orphan
//     collection (its UID is not the live Service's), which deletes it, with its floating IP,
//     after --orphan-grace-period (ccm gc --delete at once); the new Service's is created then.
//   - named by load-balancer-id (the annotation copied with the Service, from a manifest
//     exported while the earlier one was served), it is not shared either: the earlier
//     Service's load balancer is about to be collected, and the new Service's listeners on it
//     would keep it alive, ownerless. The refusal names the annotation.
//
// Deleting the new Service removes only what is its own; the leftover stays for the orphan
// collection.

// earlierService: lb carries the ownership tags of an earlier Service of id's namespace and
// name (its UID differs).
func earlierService(id ownership.Identity, lb *loadbalancers.LoadBalancer) bool {
	owner, ok := ownership.Owner(id.Cluster, tagMap(lb.Tags))
	return ok && owner.Namespace == id.Namespace && owner.Name == id.Name && owner.UID != "" && id.UID != "" && owner.UID != id.UID
}

// errEarlierByName: the load balancer of the Service's name is an earlier Service's (refusal
// says which).
func errEarlierByName(name string, refusal error) error {
	return fmt.Errorf("load balancer %s was left behind by an earlier Service of this name, whose delete did not finish: ccm does not touch it, "+
		"and creates this Service's once the orphan collection has deleted it (after --orphan-grace-period; `ccm gc --delete` deletes it at once): %w", name, refusal)
}

// errEarlierNamed: load-balancer-id names an earlier Service's load balancer.
func errEarlierNamed(lbID string) error {
	return fmt.Errorf("annotation %s names load balancer %q, which an earlier Service of this name left behind (the annotation was copied with the Service?): "+
		"it is not shared with this Service and ccm writes nothing to it (the orphan collection deletes it); remove the annotation: %w",
		annLoadBalancerID, lbID, ownership.Refuse(kindLB, lbID, "it belongs to an earlier Service of the same name (its UID differs)"))
}
