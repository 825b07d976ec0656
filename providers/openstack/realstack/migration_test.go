package realstack_test

import (
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
)

const annLoadBalancerAddress = "loadbalancer.openstack.org/load-balancer-address"

// upstreamName is the upstream CCM's load balancer name, which it also puts in the load
// balancer's and each listener's tags.
func upstreamName(cluster string, svc *v1.Service) string {
	return fmt.Sprintf("kube_service_%s_%s_%s", cluster, svc.Namespace, svc.Name)
}

// SeedUpstream makes, through the real APIs, the load balancers the upstream CCM leaves for
// svcs (with create-monitor): its names, description and tags, one listener per port (named
// and tagged as upstream does, allowed CIDRs 0.0.0.0/0), a ROUND_ROBIN pool of the nodes, a TCP
// monitor, and a floating IP described as upstream describes it; and writes the annotations
// upstream writes onto each Service.
func (h *harness) SeedUpstream(t cloudtest.T, cluster string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service {
	var out []*v1.Service
	var made []*loadbalancers.LoadBalancer
	for _, svc := range svcs {
		own := upstreamName(cluster, svc)
		opts := loadbalancers.CreateOpts{Name: own, Description: fmt.Sprintf("Kubernetes external service %s/%s from cluster %s", svc.Namespace, svc.Name, cluster),
			VipSubnetID: rs.ids["K8S_SUBNET_ID"], Tags: []string{own}}
		for i, p := range svc.Spec.Ports {
			pool := &pools.CreateOpts{Name: fmt.Sprintf("pool_%d_%s", i, own), Protocol: pools.Protocol(p.Protocol), LBMethod: pools.LBMethodRoundRobin,
				Monitor: monitors.CreateOpts{Name: fmt.Sprintf("monitor_%d_%s", i, own), Type: string(p.Protocol), Delay: 5, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3}}
			for _, n := range nodes {
				pool.Members = append(pool.Members, pools.CreateMemberOpts{Name: n.Name, Address: h.ipOf(n.Name), ProtocolPort: int(p.NodePort), SubnetID: rs.ids["K8S_SUBNET_ID"]})
			}
			opts.Listeners = append(opts.Listeners, listeners.CreateOpts{Name: fmt.Sprintf("listener_%d_%s", i, own), Protocol: listeners.Protocol(p.Protocol),
				ProtocolPort: int(p.Port), Tags: []string{own}, AllowedCIDRs: []string{"0.0.0.0/0"}, DefaultPool: pool})
		}
		lb, err := loadbalancers.Create(ctx, rs.lb, opts).Extract()
		if err != nil {
			t.Fatalf("seeding %s: %v", own, err)
		}
		made = append(made, lb)
	}
	for i, svc := range svcs {
		lb := made[i]
		waitLB(t, lb.ID, false)
		desc := fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", svc.Namespace, svc.Name, cluster)
		fip, err := floatingips.Create(ctx, rs.network, floatingips.CreateOpts{FloatingNetworkID: rs.ids["PUBLIC_NET_ID"], PortID: lb.VipPortID, Description: desc}).Extract()
		if err != nil {
			t.Fatalf("seeding the floating IP of %s: %v", lb.Name, err)
		}
		svc = svc.DeepCopy()
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annLoadBalancerID], svc.Annotations[annLoadBalancerAddress] = lb.ID, fip.FloatingIP
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: fip.FloatingIP}}
		out = append(out, svc)
	}
	return out
}

// MigrationCounts, counted at the recorder: load balancer creates; deletes of load balancers,
// listeners, pools, members, monitors and floating IPs.
func (h *harness) MigrationCounts() (creates, deletes int) {
	for op, n := range h.rec.Ops() {
		f := strings.Fields(op)
		switch {
		case len(f) != 3:
		case op == "POST octavia loadbalancers":
			creates += n
		case f[0] == "DELETE" && (f[1] == "octavia" || f[2] == "floatingips"):
			deletes += n
		}
	}
	return creates, deletes
}

// Leftovers: nothing; upstream's security groups are not seeded (no manage-security-groups).
func (h *harness) Leftovers(t cloudtest.T, cluster string, svc *v1.Service) []string { return nil }

// Remains: the Service's load balancer (by name), any listener marked or tagged as its own on
// any load balancer, and floating IPs described as its own (ccm's or upstream's).
func (h *harness) Remains(t cloudtest.T, cluster string, svc *v1.Service) []string {
	var out []string
	name, own := lbname.Octavia.Name(cluster, svc.Namespace, svc.Name), upstreamName(cluster, svc)
	id := ownership.Of(cluster, svc)
	for _, lb := range must(loadbalancers.ExtractLoadBalancers(must(loadbalancers.List(rs.lb, loadbalancers.ListOpts{}).AllPages(ctx)))) {
		if lb.Name == name || lb.Name == own {
			out = append(out, "load balancer "+lb.Name)
			continue
		}
		for _, l := range must(listeners.ExtractListeners(must(listeners.List(rs.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)))) {
			if ownership.DescribedBy(id, l.Description) || (l.Description == "" && len(l.Tags) == 1 && l.Tags[0] == own) {
				out = append(out, fmt.Sprintf("listener %s/%d on %s", l.Protocol, l.ProtocolPort, lb.Name))
			}
		}
	}
	upstreamFIP := fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", svc.Namespace, svc.Name, cluster)
	for _, f := range must(floatingips.ExtractFloatingIPs(must(floatingips.List(rs.network, floatingips.ListOpts{}).AllPages(ctx)))) {
		if ownership.DescribedBy(id, f.Description) || f.Description == upstreamFIP {
			out = append(out, "floating IP "+f.FloatingIP)
		}
	}
	return out
}

var _ cloudtest.MigrationHarness = (*harness)(nil)
