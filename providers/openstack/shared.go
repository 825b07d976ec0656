package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
)

// Shared load balancers, as the upstream CCM makes them: a Service B names, by
// load-balancer-id, the load balancer of another Service A of the same cluster. B adds its own
// listeners (a port taken is an error), is served on the load balancer's address, and never
// changes A's listeners, VIP or floating IP. The load balancer's tags hold the name
// (kube_service_<cluster>_<ns>_<name>) of each Service using it, its owner's included, and
// at most [LoadBalancer] max-shared-lb (default 2, as upstream) may use it. An internal
// Service shares none (it could be exposed when the owner turns external). Listeners tell
// their Service by ccm's ownership description, or by upstream's tag (the Service's name).
//
// The load balancer goes when the last Service using it goes: the owner leaving while others
// use it removes only its listeners and its name and Service tags (the cluster tag stays);
// the last user leaving a load balancer whose owner is gone deletes it, with the floating IP
// a Service of this cluster had allocated for it, unless the owner asked to keep it
// (keep-floatingip): its wish outlives it as the tag tagKeepFIP on the load balancer, written
// when it leaves, and the floating IP is then only disassociated. The tag is ccm's
// bookkeeping (ccm.k8s.io/, which no annotation can write) on the cloud object: no later
// user's annotation decides for the owner, and a restart forgets nothing.

// tagKeepFIP on a load balancer whose owner has left: the owner's keep-floatingip was true.
const tagKeepFIP = "ccm.k8s.io/keep-floatingip=true"

const upstreamNamePrefix = "kube_service_"

// defaultMaxSharedLB is upstream's default for max-shared-lb.
const defaultMaxSharedLB = 2

// upstreamName is the upstream CCM's literal name for the Service id's load balancer,
// kube_service_<cluster>_<namespace>_<name> (its GetLoadBalancerName), where ccm's name differs
// (lbname hashes a cluster name holding "_", as it cannot be parsed back), else "". The
// literal name is unambiguous: namespace and Service names hold no "_", so whatever comes
// before the last two "_" is the cluster. A name upstream had to cut to 255 characters is not
// used (two Services may share it).
func upstreamName(id ownership.Identity) string {
	n := upstreamNamePrefix + id.Cluster + "_" + id.Namespace + "_" + id.Name
	if len(n) > 255 || n == lbname.Octavia.Name(id.Cluster, id.Namespace, id.Name) {
		return ""
	}
	return n
}

// ownName: t, a load balancer name or upstream's name tag, is the Service id's (whose load
// balancer ccm names name): ccm's name, or upstream's literal one (upstreamName).
func ownName(id ownership.Identity, name, t string) bool {
	return t == name || (t != "" && t == upstreamName(id))
}

// upstreamListenerTags: the listener's tags name the Service id (its load balancer name name,
// or upstream's literal one) (mine), or only other Services (other).
func upstreamListenerTags(id ownership.Identity, tags []string, name string) (mine, other bool) {
	if slices.ContainsFunc(tags, func(t string) bool { return ownName(id, name, t) }) {
		return true, false
	}
	return false, slices.ContainsFunc(tags, func(t string) bool { return strings.HasPrefix(t, upstreamNamePrefix) })
}

// lbOfCluster: lb is the load balancer of a Service of cluster: ccm's cluster tag says it
// is owned, or the upstream CCM made it for this cluster (its name and description).
func lbOfCluster(cluster string, lb *loadbalancers.LoadBalancer) bool {
	switch tagMap(lb.Tags)[ownership.ClusterTagPrefix+cluster] {
	case ownership.Owned:
		return true
	case "":
		return strings.HasPrefix(lb.Name, upstreamNamePrefix+cluster+"_") &&
			strings.HasPrefix(lb.Description, "Kubernetes external service ") && strings.HasSuffix(lb.Description, " from cluster "+cluster)
	}
	return false
}

// lbNamespace is the namespace of the Service lb was made for: by ccm's ownership tags, else by
// the upstream CCM's name (kube_service_<cluster>_<namespace>_<name>; a namespace has no '_').
func lbNamespace(cluster string, lb *loadbalancers.LoadBalancer) (string, bool) {
	if owner, ok := ownership.Owner(cluster, tagMap(lb.Tags)); ok {
		return owner.Namespace, true
	}
	rest, ok := strings.CutPrefix(lb.Name, upstreamNamePrefix+cluster+"_")
	if !ok {
		return "", false
	}
	ns, _, ok := strings.Cut(rest, "_")
	return ns, ok && ns != ""
}

// sharable: the Service id may add its listeners to lb, another Service's load balancer, without
// the operator's leave: lb is of this cluster and of the Service's own namespace. Upstream lets
// any Service of the cluster share; here a namespace is a tenant's boundary, so sharing across
// namespaces needs [LoadBalancer] allowed-resource-* like any other object not the Service's.
func sharable(id ownership.Identity, lb *loadbalancers.LoadBalancer) bool {
	ns, ok := lbNamespace(id.Cluster, lb)
	return ok && ns == id.Namespace && lbOfCluster(id.Cluster, lb)
}

// users are the names of the Services using lb (its kube_service_ tags), its owner's
// included while it has one.
func users(lb *loadbalancers.LoadBalancer) []string {
	var out []string
	for _, t := range lb.Tags {
		if strings.HasPrefix(t, upstreamNamePrefix) {
			out = append(out, t)
		}
	}
	if !ownerGone(lb) && !slices.Contains(out, lb.Name) && !slices.Contains(out, ownerUpstreamName(lb)) {
		out = append(out, lb.Name)
	}
	return out
}

// ownerUpstreamName is upstream's literal name (upstreamName) of the Service lb's ownership
// tags name, "" if none: a load balancer taken over and renamed keeps that name as the
// owner's tag, which must not count the owner twice.
func ownerUpstreamName(lb *loadbalancers.LoadBalancer) string {
	m := tagMap(lb.Tags)
	ns, name, ok := strings.Cut(m[ownership.ServiceTag], "/")
	if !ok {
		return ""
	}
	for k, v := range m {
		if c, isCluster := strings.CutPrefix(k, ownership.ClusterTagPrefix); isCluster && v == ownership.Owned {
			return upstreamName(ownership.Identity{Cluster: c, Namespace: ns, Name: name})
		}
	}
	return ""
}

// ownerGone: the Service lb was made for has left it (neither ccm's Service tag nor
// upstream's own-name tag remains).
func ownerGone(lb *loadbalancers.LoadBalancer) bool {
	return tagMap(lb.Tags)[ownership.ServiceTag] == "" && !slices.Contains(lb.Tags, lb.Name)
}

// checkShare: the Service id (load balancer name name) may use lb of its cluster. Pure.
func checkShare(id ownership.Identity, spec *lbSpec, name string, lb *loadbalancers.LoadBalancer, maxShared int) error {
	if spec.internal {
		return fmt.Errorf("annotation %s: an internal Service cannot share a load balancer (it would be exposed if the owner turned external)", annLoadBalancerID)
	}
	if u := users(lb); !slices.ContainsFunc(u, func(t string) bool { return ownName(id, name, t) }) && len(u)+1 > maxShared {
		return fmt.Errorf("annotation %s: load balancer %s is already shared by %d Services ([LoadBalancer] max-shared-lb = %d)", annLoadBalancerID, lb.ID, len(u), maxShared)
	}
	return nil
}

func (l *loadBalancers) maxShared() int {
	if m := l.c.cfg.LoadBalancer.MaxSharedLB; m != nil {
		return *m
	}
	return defaultMaxSharedLB
}

// setTags writes lb's tags when they differ and waits for it to be ACTIVE again.
func (l *loadBalancers) setTags(ctx context.Context, cl *clients, lb *loadbalancers.LoadBalancer, tags []string) error {
	if slices.Equal(tags, lb.Tags) {
		return nil
	}
	if len(tags) == 0 {
		tags = []string{} // an empty list, not "no change"
	}
	if _, err := loadbalancers.Update(ctx, cl.lb, lb.ID, loadbalancers.UpdateOpts{Tags: &tags}).Extract(); err != nil {
		return l.conflict(err, "tagging load balancer "+lb.Name)
	}
	lb.Tags = tags
	return l.waitActive(ctx, cl, lb.ID)
}

// joinShared adds the Service's name to the tags of the shared lb (upstream counts them).
func (l *loadBalancers) joinShared(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec, lb *loadbalancers.LoadBalancer) error {
	if err := checkShare(id, spec, spec.name, lb, l.maxShared()); err != nil {
		return err
	}
	if slices.ContainsFunc(lb.Tags, func(t string) bool { return ownName(id, spec.name, t) }) {
		return nil
	}
	return l.setTags(ctx, cl, lb, append(slices.Clone(lb.Tags), spec.name))
}

// othersOn: a Service other than id (name) uses lb: its name among the tags, or a listener
// marked or tagged as another Service's.
func othersOn(id ownership.Identity, name string, lb *loadbalancers.LoadBalancer, have []listeners.Listener) bool {
	for _, u := range users(lb) {
		if !ownName(id, name, u) {
			return true
		}
	}
	for _, h := range have {
		if owner, _, ok := ownership.ParseDescription(h.Description); ok && owner.Cluster != "" && !ownership.DescribedBy(id, h.Description) {
			return true
		}
		if _, other := upstreamListenerTags(id, h.Tags, name); other && h.Description == "" {
			return true
		}
	}
	return false
}

// usedByOthers: lb, the Service's own, is used by other Services (one listener list).
func (l *loadBalancers) usedByOthers(ctx context.Context, cl *clients, id ownership.Identity, name string, lb *loadbalancers.LoadBalancer) (bool, error) {
	for _, u := range users(lb) {
		if !ownName(id, name, u) {
			return true, nil
		}
	}
	pages, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return false, fmt.Errorf("listing listeners of %s: %w", lb.ID, err)
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return false, err
	}
	return othersOn(id, name, lb, have), nil
}

// leaveOwn is the delete of the owner's load balancer while other Services use it: its
// listeners go, and its name and Service tags (the cluster tag stays, so the last user can
// delete it); the load balancer, its VIP and floating IP stay. keep (the owner's
// keep-floatingip) is recorded as tagKeepFIP for the last user's delete.
func (r *svcRun) leaveOwn(ctx context.Context, name string, lb *loadbalancers.LoadBalancer, keep bool) error {
	if err := r.apart().syncListeners(ctx, lb.ID, &lbSpec{name: name}, nil, false); err != nil {
		return err
	}
	return r.l.setTags(ctx, r.cl, lb, ownerLeft(r.id, name, lb.Tags, keep))
}

// ownerLeft are the tags of a load balancer its owner id (load balancer name name) leaves,
// from tags: without its name and Service tags, with the cluster tag, and with tagKeepFIP
// exactly when keep. Pure.
func ownerLeft(id ownership.Identity, name string, tags []string, keep bool) []string {
	var out []string
	for _, t := range tags {
		k, _, _ := strings.Cut(t, "=")
		if !ownName(id, name, t) && k != ownership.ServiceTag && k != ownership.ServiceUIDTag && t != tagKeepFIP {
			out = append(out, t)
		}
	}
	if tagMap(out)[ownership.ClusterTagPrefix+id.Cluster] == "" {
		out = append(out, ownership.ClusterTagPrefix+id.Cluster+"="+ownership.Owned)
	}
	if keep {
		out = append(out, tagKeepFIP)
	}
	return out
}

// leaveShared is the delete of a Service using another's load balancer of its cluster: its
// listeners go, its name leaves the tags, and when the owner is gone and nobody else uses it,
// the load balancer goes too (with a floating IP of this cluster's Services).
func (r *svcRun) leaveShared(ctx context.Context, name string, lb *loadbalancers.LoadBalancer) error {
	l, cl, id := r.l, r.cl, r.id
	if err := r.apart().syncListeners(ctx, lb.ID, &lbSpec{name: name}, nil, true); err != nil {
		return err
	}
	if !lbOfCluster(id.Cluster, lb) {
		return nil
	}
	if own := func(t string) bool { return ownName(id, name, t) }; slices.ContainsFunc(lb.Tags, own) {
		if err := l.setTags(ctx, cl, lb, slices.DeleteFunc(slices.Clone(lb.Tags), own)); err != nil {
			return err
		}
	}
	pages, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("listing listeners of %s: %w", lb.ID, err)
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return err
	}
	if !ownerGone(lb) || len(have) > 0 || othersOn(id, name, lb, have) {
		return nil
	}
	if err := l.releaseSharedFIP(ctx, cl, id.Cluster, lb); err != nil {
		return err
	}
	if err := loadbalancers.Delete(ctx, cl.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		return l.conflict(err, "deleting the shared load balancer "+lb.Name+" its last user left")
	}
	klog.InfoS("Deleted a shared load balancer its last user left", "service", id.Service(), "name", lb.Name, "id", lb.ID)
	return nil
}

// releaseSharedFIP gives back the floating IP of the shared lb (of cluster) its last user is
// deleting: one a Service of the cluster allocated is deleted, or only disassociated when the
// owner asked to keep it (tagKeepFIP); any other is left as it is.
func (l *loadBalancers) releaseSharedFIP(ctx context.Context, cl *clients, cluster string, lb *loadbalancers.LoadBalancer) error {
	f, err := l.portFIP(ctx, cl, lb.VipPortID)
	switch {
	case err != nil || f == nil:
		return err
	case !fipOfCluster(cluster, f):
		return nil
	case slices.Contains(lb.Tags, tagKeepFIP):
		empty := "" // gophercloud sends "port_id": null
		if _, err := floatingips.Update(ctx, cl.network, f.ID, floatingips.UpdateOpts{PortID: &empty}).Extract(); err != nil {
			return fmt.Errorf("disassociating floating IP %s: %w", f.FloatingIP, err)
		}
		klog.InfoS("Kept the floating IP of a shared load balancer (its owner's keep-floatingip)", "ip", f.FloatingIP, "id", lb.ID)
		return nil
	}
	if err := floatingips.Delete(ctx, cl.network, f.ID).ExtractErr(); err != nil {
		return fmt.Errorf("deleting floating IP %s: %w", f.FloatingIP, err)
	}
	return nil
}

// fipOfCluster: a floating IP allocated for a Service of cluster, by ccm or by upstream.
func fipOfCluster(cluster string, f *floatingips.FloatingIP) bool {
	if owner, _, ok := ownership.ParseDescription(f.Description); ok {
		return owner.Cluster == cluster
	}
	return strings.HasPrefix(f.Description, "Floating IP for Kubernetes external service ") && strings.HasSuffix(f.Description, " from cluster "+cluster)
}
