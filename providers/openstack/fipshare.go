package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
)

// checkFIPShare refuses, before a public load balancer is made, a Service whose new floating IP
// would take its namespace past [LoadBalancer] floating-ips-per-namespace: the project's
// floating IP quota is every tenant's, and one namespace must not use it up. The floating IPs
// ccm allocated carry their Service in their description, so the namespace's share is counted
// from one listing. Nothing is read when no bound is set, or when the Service brings its own
// address (spec.loadBalancerIP) or needs none.
func (l *loadBalancers) checkFIPShare(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec) error {
	limit := l.c.cfg.LoadBalancer.FloatingIPsPerNamespace
	if limit <= 0 || spec.internal || spec.fixedFIP != "" || spec.existingID != "" || spec.family == v1.IPv6Protocol {
		return nil
	}
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{})
	if err != nil {
		return err
	}
	descs := make([]string, 0, len(fips))
	for _, f := range fips {
		descs = append(descs, f.Description)
	}
	return reach.NamespaceShare(id, descs, 1, limit, "floating IPs", "[LoadBalancer] floating-ips-per-namespace")
}
