package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Orphan collection (common/servicecontroller): one Octavia list call (all pages), filtered by
// Octavia on this cluster's ownership tag, returns every load balancer ccm made for the
// cluster. Load balancers the upstream CCM made (no ownership tags) are not listed: only their
// name and description would tie them to a Service, which proves too little to delete them.

var _ servicecontroller.OwnedLister = (*Cloud)(nil)

// OwnedLoadBalancers implements servicecontroller.OwnedLister.
func (c *Cloud) OwnedLoadBalancers(ctx context.Context, cluster string) (_ []servicecontroller.OwnedLoadBalancer, err error) {
	defer func() { err = c.cfg.sanitize(err) }()
	cl, err := c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	mark := ownership.ClusterTagPrefix + cluster + "=" + ownership.Owned
	pages, err := loadbalancers.List(cl.lb, loadbalancers.ListOpts{Tags: []string{mark}}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the load balancers of cluster %s: %w", cluster, err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	var out []servicecontroller.OwnedLoadBalancer
	for _, lb := range lbs {
		// The filter is Octavia's; the marks are read again here, whatever it returned.
		if owner, ok := ownership.Owner(cluster, tagMap(lb.Tags)); ok {
			out = append(out, servicecontroller.OwnedLoadBalancer{Owner: owner, ID: lb.ID})
		}
	}
	return out, nil
}

// DeleteOwnedLoadBalancer implements servicecontroller.OwnedLister: the load balancer is read
// again and must still carry lb's owner; then the Service's delete path removes it (both IP
// families, the floating IP ccm allocated, the security group, only this Service's listeners
// from a load balancer another Service shares), checking ownership on the way as always.
func (c *Cloud) DeleteOwnedLoadBalancer(ctx context.Context, cluster string, lb servicecontroller.OwnedLoadBalancer) (err error) {
	cl, err := c.sess.get(ctx)
	if err != nil {
		return c.cfg.sanitize(err)
	}
	cur, err := loadbalancers.Get(ctx, cl.lb, lb.ID).Extract()
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return nil
	case err != nil:
		return c.cfg.sanitize(err)
	}
	if cur.ProvisioningStatus == "PENDING_DELETE" {
		// Octavia's cascade delete drops the tags before the load balancer is gone, so the
		// marks cannot be checked again; nothing is written to it, only looked at later.
		return api.NewRetryError(fmt.Sprintf("load balancer %s is being deleted", lb.ID), c.cfg.LoadBalancer.PendingRetry.Duration)
	}
	svc := lb.Service()
	if err := ownership.Check(ownership.Of(cluster, svc), kindLB, lb.ID, tagMap(cur.Tags)); err != nil {
		return err
	}
	// The second family's load balancer carries the family in its name; the delete path derives
	// both names from the Service's families, so give the stand-in the families the name says.
	if cur.Name == lbname.Octavia.Name(cluster, svc.Namespace, svc.Name+"_ipv4") {
		svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	}
	if cur.Name != c.lb.familyName(cluster, svc, v1.IPv4Protocol) && cur.Name != c.lb.familyName(cluster, svc, v1.IPv6Protocol) {
		return fmt.Errorf("load balancer %s is named %q, not as ccm names %s's: not deleting it", lb.ID, cur.Name, lb.Owner.Service())
	}
	return c.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}
