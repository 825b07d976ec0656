package openstack

import (
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
)

// Listeners on the Service's own load balancer that carry no ownership mark are either a
// CCM's, made before the mark (an earlier ccm's, the upstream CCM's before a migration), which
// ccm takes over or replaces, or someone's made by hand next to the Service's, which ccm must
// not delete: an operator may serve another port from the same address. What tells them
// apart is what the CCMs always wrote: an earlier ccm's "ccm:" description or its listener
// name, the upstream CCM's tag (checked with the shared load balancers, shared.go) or its
// listener name, which carries the load balancer's name.

// reasonListenerLeft is the Warning about a listener no CCM made on a Service's load balancer.
const reasonListenerLeft = "LoadBalancerListenerLeft"

// madeByACCM: the unmarked listener h on the Service's own load balancer (which ccm names
// name) was made by an earlier ccm or by the upstream CCM, judged by its description and name.
// Pure.
func madeByACCM(id ownership.Identity, name string, h listeners.Listener) bool {
	if strings.HasPrefix(h.Description, legacyListenerPrefix) {
		return true
	}
	if h.Name != "" && h.Name == (listenerSpec{Protocol: h.Protocol, Port: h.ProtocolPort}).name() {
		return true // ccm's own name: its description was lost
	}
	return upstreamListenerName(id, name, h.Name)
}

// upstreamListenerName: n is a name the upstream CCM gave a listener of the Service's load
// balancer: "listener_<index>_<load balancer name>" ("listener_<load balancer name>_<index>"
// in its early versions), cut to 255 characters, with any name the load balancer had: ccm's
// name, upstream's literal one, or the early "a<UID>" one. Pure.
func upstreamListenerName(id ownership.Identity, name, n string) bool {
	rest, ok := strings.CutPrefix(n, "listener_")
	if !ok {
		return false
	}
	names := []string{name, upstreamNamePrefix + id.Cluster + "_" + id.Namespace + "_" + id.Name}
	if id.UID != "" {
		names = append(names, cloudprovider.DefaultLoadBalancerName(&v1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID(id.UID)}}))
	}
	is := func(got, lb string) bool {
		return got == lb || (len(n) == 255 && got != "" && strings.HasPrefix(lb, got))
	}
	for _, lb := range names {
		if i, after, ok := strings.Cut(rest, "_"); ok && digitsOnly(i) && is(after, lb) {
			return true
		}
		if j := strings.LastIndex(rest, "_"); j > 0 && digitsOnly(rest[j+1:]) && rest[:j] == lb {
			return true
		}
	}
	return false
}

// digitsOnly: s is a port index, decimal digits.
func digitsOnly(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// listenerLabel names a listener for a message: its name and ID.
func listenerLabel(h listeners.Listener) string {
	if h.Name == "" {
		return fmt.Sprintf("%s (no name)", h.ID)
	}
	return fmt.Sprintf("%q (%s)", h.Name, h.ID)
}

// leftMessage is the Warning about a listener no CCM made on load balancer lbName.
func leftMessage(lbName string, h listeners.Listener) string {
	return fmt.Sprintf("listener %s on port %s of load balancer %s was not made by ccm or the upstream CCM (its description has no ownership mark): "+
		"ccm leaves it as it is, neither changed nor deleted", listenerLabel(h), listenerKey(h), lbName)
}
