package openstack

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"

	"github.com/ccm-project/ccm/common/ownership"
)

// Ownership (common/ownership): load balancers carry the ownership tags (cluster, Service
// namespace/name and UID) as Octavia "key=value" tags. Listeners, pools, floating IPs,
// security groups and rules have no tags here, so their description carries the mark
// (ownership.Description); Octavia and Neutron descriptions hold up to 255 characters.
// Objects written by the upstream CCM or an earlier ccm (their descriptions name the Service
// and cluster, without a UID) are recognised as the Service's own where ccm found them by
// name; what a Service names by annotation must carry the tags or be allowed by the operator.

const maxDescription = 255

// Kinds, as refusals name them.
const (
	kindLB       = "load balancer"
	kindListener = "listener"
	kindFIP      = "floating IP"
	kindSG       = "security group"
)

// ownerTags are the Octavia tags of a load balancer created for id, sorted.
func ownerTags(id ownership.Identity) []string {
	var out []string
	for k, v := range id.Tags() {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// withOwnerTags is tags with id's ownership tags in place of any ownership tags it had; other
// tags (the upstream CCM's load balancer names of the Services using it) are kept.
func withOwnerTags(tags []string, id ownership.Identity) []string {
	var out []string
	for _, t := range tags {
		if k, _, ok := strings.Cut(t, "="); ok && ownership.Reserved(k) {
			continue
		}
		out = append(out, t)
	}
	out = append(out, ownerTags(id)...)
	sort.Strings(out)
	return slices.Compact(out)
}

// tagMap reads Octavia's string tags written as key=value.
func tagMap(tags []string) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		if k, v, ok := strings.Cut(t, "="); ok {
			m[k] = v
		}
	}
	return m
}

// legacyLBDescription is the upstream provider's load balancer description, which ccm still
// writes for people reading the load balancer list; it proves ownership only of a load
// balancer ccm found by its name and that has no ownership tag of this cluster.
func legacyLBDescription(id ownership.Identity) string {
	return fmt.Sprintf("Kubernetes external service %s from cluster %s", id.Service(), id.Cluster)
}

// lbOwned is nil if lb is id's own: by its tags, or by the upstream description when it has
// no ownership tags of this cluster (created before tags).
func lbOwned(id ownership.Identity, lb *loadbalancers.LoadBalancer) error {
	tags := tagMap(lb.Tags)
	err := ownership.Check(id, kindLB, lb.ID, tags)
	if err == nil {
		return nil
	}
	if _, tagged := tags[ownership.ClusterTagPrefix+id.Cluster]; !tagged && lb.Description == legacyLBDescription(id) {
		return nil
	}
	return err
}

// lbNeedsTags: an own load balancer without the current ownership tags (no UID, or only the
// upstream description) gets them at its next reconcile.
func lbNeedsTags(id ownership.Identity, lb *loadbalancers.LoadBalancer) bool {
	tags := tagMap(lb.Tags)
	return ownership.NeedsUID(id, tags) || !ownership.Is(id, tags)
}

// listenerDescription marks a listener (and its pool) as id's, with the fingerprint of its
// spec as the role: a listener is rewritten only when its spec changes.
func listenerDescription(id ownership.Identity, ls listenerSpec) string {
	return ownership.Description(id, ls.fingerprint(), maxDescription)
}

// legacyListenerPrefix started the descriptions of listeners written by earlier ccm versions
// ("ccm:<fingerprint>"): it proves nothing about the Service, and is recognised only on the
// Service's own load balancer.
const legacyListenerPrefix = "ccm:"

// fipDescription marks a floating IP ccm allocated for id: only those are ever deleted.
func fipDescription(id ownership.Identity) string {
	return ownership.Description(id, "fip", maxDescription)
}

// legacyFIPDescription is the upstream provider's (and earlier ccm's) floating IP description.
func legacyFIPDescription(id ownership.Identity) string {
	return fmt.Sprintf("Floating IP for Kubernetes external service %s from cluster %s", id.Service(), id.Cluster)
}

func fipOwned(id ownership.Identity, f *floatingips.FloatingIP) bool {
	return ownership.DescribedBy(id, f.Description) || f.Description == legacyFIPDescription(id)
}

// fipAllowed: the operator allowed the Service to use a floating IP it does not own, by its
// ID or address, or by the Service's namespace.
func (l *loadBalancers) fipAllowed(id ownership.Identity, f *floatingips.FloatingIP) bool {
	a := l.c.cfg.LoadBalancer.allow
	return a.Permits(id.Namespace, f.ID) || a.Permits(id.Namespace, f.FloatingIP)
}

// errFIPNotOwned refuses a floating IP the Service asked for by spec.loadBalancerIP.
func errFIPNotOwned(addr string) error {
	return fmt.Errorf("spec.loadBalancerIP %s is a floating IP this Service does not own (allocated by hand, or for another Service or cluster); "+
		"an operator can allow it in the cloud config ([LoadBalancer] allowed-resource-ids or allowed-resource-namespaces): %w", addr, ownership.ErrNotOwned)
}

func sgDescription(id ownership.Identity) string {
	return ownership.Description(id, "sg", maxDescription)
}

// legacySGDescription is what earlier ccm versions described the Service's group with.
func legacySGDescription(id ownership.Identity) string {
	return fmt.Sprintf("Security Group for Service %s LoadBalancer in cluster %s", id.Service(), id.Cluster)
}

// sgOwnership says whether g is id's group, and whether it is one of an earlier ccm (whose
// rules carry no description and are taken as the group's).
func sgOwnership(id ownership.Identity, g *groups.SecGroup) (owned, legacy bool) {
	if ownership.DescribedBy(id, g.Description) {
		return true, false
	}
	if g.Description == legacySGDescription(id) {
		return true, true
	}
	return false, false
}

func ruleDescription(id ownership.Identity) string {
	return ownership.Description(id, "rule", maxDescription)
}

// isNotOwned: a refusal by ownership.
func isNotOwned(err error) bool { return errors.Is(err, ownership.ErrNotOwned) }
