package openstack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

// Dual-stack takeover. The upstream CCM serves a Service on one load balancer, of the first
// family in spec.ipFamilies; ccm serves each family on its own (familyName). Taking over an
// upstream dual-stack Service must create nothing upstream did not have, so:
//
//   - the Service's own load balancer that ccm takes over from the upstream CCM (it has the
//     upstream description and none of ccm's ownership tags) gets the tag tagSingleFamily with
//     ccm's ownership tags, in the same update, when the Service is dual-stack. As long as the
//     tag is there, the Service is served by that load balancer alone, as upstream served it.
//     The tag is on the cloud object: no annotation or Service edit can set or forge it, and it
//     survives restarts. Removing it (openstack loadbalancer unset --tag ...) is how an operator
//     asks for the second family's load balancer: the next sync creates it.
//   - a Service whose first family is served on a load balancer it does not own (shared, or
//     allowed by the operator: load-balancer-id) gets no second-family load balancer unless it
//     already has one (its status holds an address of that family): load-balancer-id names one
//     load balancer, as upstream reads it.
//
// Services whose load balancers ccm created keep one load balancer per family.

// tagSingleFamily marks a load balancer taken over from the upstream CCM for a dual-stack
// Service: it alone serves the Service, in its own family.
const tagSingleFamily = "ccm-single-family"

// fromUpstream: lb is the Service's own by the upstream CCM's description only, without any
// of ccm's ownership tags: the upstream CCM made it and ccm has not taken it over yet.
func fromUpstream(id ownership.Identity, lb *loadbalancers.LoadBalancer) bool {
	return lbOwned(id, lb) == nil && !ownership.Is(id, tagMap(lb.Tags))
}

// familyServing is what the first family's load balancer says about the others. Pure.
type familyServing struct {
	// only: the first family's load balancer alone serves the Service.
	only bool
	// mark: it is being taken over from the upstream CCM now; tagSingleFamily goes on it.
	mark bool
}

// servingOf decides for a dual-stack Service from its first family's load balancer lb
// (adopted: one it does not own). For a single-stack Service nothing is decided.
func servingOf(id ownership.Identity, svc *v1.Service, lb *loadbalancers.LoadBalancer, adopted bool) familyServing {
	fs := families(svc)
	if len(fs) < 2 || lb == nil {
		return familyServing{}
	}
	switch {
	case adopted:
		return familyServing{only: !hadAddress(svc, fs[1])}
	case slices.Contains(lb.Tags, tagSingleFamily):
		return familyServing{only: true}
	case fromUpstream(id, lb):
		return familyServing{only: true, mark: true}
	}
	return familyServing{}
}

// singleFamilyMessage is the Normal Event of a dual-stack Service taken over on one family.
func singleFamilyMessage(svc *v1.Service, lb *loadbalancers.LoadBalancer) string {
	fs := families(svc)
	return fmt.Sprintf("load balancer %s (%s), taken over from the upstream CCM, serves this dual-stack Service on %s only, as upstream did; "+
		"no %s load balancer is created while it carries the tag %s: remove the tag (openstack loadbalancer unset --tag %s %s) to get one",
		lb.Name, lb.ID, fs[0], strings.ToLower(string(fs[1])), tagSingleFamily, tagSingleFamily, lb.ID)
}
