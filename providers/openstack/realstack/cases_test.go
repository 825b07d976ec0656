package realstack_test

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
)

const (
	annLoadBalancerID = "loadbalancer.openstack.org/load-balancer-id"
	annSubnetID       = "loadbalancer.openstack.org/subnet-id"
	annNetworkID      = "loadbalancer.openstack.org/network-id"
	annMemberSubnetID = "loadbalancer.openstack.org/member-subnet-id"
	annHealthMonitor  = "loadbalancer.openstack.org/enable-health-monitor"
)

// listener80 is the Service's TCP/80 listener on its load balancer, with the load balancer.
func listener80(t cloudtest.T, cluster string, svc *v1.Service) (*loadbalancers.LoadBalancer, listeners.Listener) {
	lb := lbNamed(t, lbname.Octavia.Name(cluster, svc.Namespace, svc.Name))
	if lb == nil {
		t.Fatalf("no load balancer for %s", svc.Name)
	}
	for _, l := range must(listeners.ExtractListeners(must(listeners.List(rs.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)))) {
		if l.ProtocolPort == 80 {
			return lb, l
		}
	}
	t.Fatalf("no listener on port 80 of %s", lb.Name)
	return nil, listeners.Listener{}
}

// broken runs one change as an operator would, then waits for the load balancer.
func broken(what string, f func(t cloudtest.T, lb *loadbalancers.LoadBalancer, l listeners.Listener) error) func(cloudtest.T, string, *v1.Service) {
	return func(t cloudtest.T, cluster string, svc *v1.Service) {
		lb, l := listener80(t, cluster, svc)
		if err := f(t, lb, l); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		waitLB(t, lb.ID, false)
	}
}

// DriftCases break the Service's load balancer through the real APIs, one thing each.
func (h *harness) DriftCases(t cloudtest.T) []cloudtest.DriftCase {
	monitored := func(svc *v1.Service) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annHealthMonitor] = "true"
	}
	monitorOf := func(l listeners.Listener) string {
		return must(pools.Get(ctx, rs.lb, l.DefaultPoolID).Extract()).MonitorID
	}
	return []cloudtest.DriftCase{
		// The listener is created again on its pool (default_pool_id): one write.
		{Name: "listener deleted", MaxWrites: 1, Mentions: "listener TCP/80 was deleted",
			Break: broken("deleting the listener", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				return listeners.Delete(ctx, rs.lb, l.ID).ExtractErr()
			})},
		{Name: "health monitor deleted", Mutate: monitored, MaxWrites: 1, Mentions: "health monitor of TCP/80 was deleted",
			Break: broken("deleting the monitor", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				return monitors.Delete(ctx, rs.lb, monitorOf(l)).ExtractErr()
			})},
		{Name: "health monitor changed", Mutate: monitored, MaxWrites: 1, Mentions: "health monitor of TCP/80 settings",
			Break: broken("changing the monitor", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				_, err := monitors.Update(ctx, rs.lb, monitorOf(l), monitors.UpdateOpts{Delay: 60, Timeout: 30}).Extract()
				return err
			})},
		{Name: "member removed", MaxWrites: 1, Mentions: "members of TCP/80",
			Break: broken("removing a member", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				ms := must(pools.ExtractMembers(must(pools.ListMembers(rs.lb, l.DefaultPoolID, pools.ListMembersOpts{}).AllPages(ctx))))
				return pools.DeleteMember(ctx, rs.lb, l.DefaultPoolID, ms[0].ID).ExtractErr()
			})},
		{Name: "pool lb-method changed", MaxWrites: 1, Mentions: "lb-method was SOURCE_IP",
			Break: broken("changing the pool", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				_, err := pools.Update(ctx, rs.lb, l.DefaultPoolID, pools.UpdateOpts{LBMethod: pools.LBMethodSourceIp}).Extract()
				return err
			})},
		{Name: "listener allowed CIDRs changed", MaxWrites: 1, Mentions: "allowed CIDRs",
			Break: broken("changing the listener", func(_ cloudtest.T, _ *loadbalancers.LoadBalancer, l listeners.Listener) error {
				cidrs := []string{"192.0.2.0/24"}
				_, err := listeners.Update(ctx, rs.lb, l.ID, listeners.UpdateOpts{AllowedCIDRs: &cidrs}).Extract()
				return err
			})},
		{Name: "floating IP detached", MaxWrites: 1, Mentions: "was detached",
			Break: broken("detaching the floating IP", func(_ cloudtest.T, lb *loadbalancers.LoadBalancer, _ listeners.Listener) error {
				for _, f := range must(floatingips.ExtractFloatingIPs(must(floatingips.List(rs.network, floatingips.ListOpts{PortID: lb.VipPortID}).AllPages(ctx)))) {
					if _, err := floatingips.Update(ctx, rs.network, f.ID, floatingips.UpdateOpts{PortID: new(string)}).Extract(); err != nil {
						return err
					}
				}
				return nil
			})},
		// A populated create and the Service's floating IP associated again.
		{Name: "load balancer deleted", MaxWrites: 2, Mentions: "was deleted; created again",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				lb, _ := listener80(t, cluster, svc)
				if err := loadbalancers.Delete(ctx, rs.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
					t.Fatalf("deleting the load balancer: %v", err)
				}
				waitLB(t, lb.ID, true)
				// Octavia's network driver deletes the VIP port with the load balancer, which
				// frees its floating IP; realstack's worker runs the noop driver, which leaves
				// the port (and the floating IP on it): deleted here as the real driver would.
				if err := ports.Delete(ctx, rs.network, lb.VipPortID).ExtractErr(); err != nil {
					t.Fatalf("deleting the VIP port: %v", err)
				}
			}},
	}
}

// HostileCases make, through the real APIs, a hand-made load balancer with a listener and a
// floating IP, one tagged as shared with the attacker's cluster, a spare floating IP and a
// network no config names; and return the attacks on them and on the victim's objects.
func (h *harness) HostileCases(t cloudtest.T, victim string, victimSvc *v1.Service, attacker string) []cloudtest.HostileCase {
	vlb := lbNamed(t, lbname.Octavia.Name(victim, victimSvc.Namespace, victimSvc.Name))
	if vlb == nil || len(victimSvc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("the victim's load balancer is not in Octavia")
	}
	hand := must(loadbalancers.Create(ctx, rs.lb, loadbalancers.CreateOpts{Name: "hand-made-lb", Description: "made by hand", VipSubnetID: rs.ids["K8S_SUBNET_ID"]}).Extract())
	shared := must(loadbalancers.Create(ctx, rs.lb, loadbalancers.CreateOpts{Name: "shared-lb", VipSubnetID: rs.ids["K8S_SUBNET_ID"],
		Tags: []string{ownership.ClusterTagPrefix + attacker + "=" + ownership.Shared}}).Extract())
	waitLB(t, hand.ID, false)
	must(listeners.Create(ctx, rs.lb, listeners.CreateOpts{LoadbalancerID: hand.ID, Name: "the operator's listener", Protocol: "TCP", ProtocolPort: 443}).Extract())
	waitLB(t, hand.ID, false)
	waitLB(t, shared.ID, false)
	handFIP := must(floatingips.Create(ctx, rs.network, floatingips.CreateOpts{FloatingNetworkID: rs.ids["PUBLIC_NET_ID"], PortID: hand.VipPortID}).Extract())
	spare := must(floatingips.Create(ctx, rs.network, floatingips.CreateOpts{FloatingNetworkID: rs.ids["PUBLIC_NET_ID"]}).Extract())
	net := must(networks.Create(ctx, rs.network, networks.CreateOpts{Name: "another-clusters-net"}).Extract())
	sub := must(subnets.Create(ctx, rs.network, subnets.CreateOpts{NetworkID: net.ID, CIDR: "10.9.0.0/16", IPVersion: 4, Name: "another-clusters-subnet"}).Extract())
	h.t.Cleanup(func() {
		_ = floatingips.Delete(ctx, rs.network, spare.ID).ExtractErr()
		_ = floatingips.Delete(ctx, rs.network, handFIP.ID).ExtractErr()
		_ = subnets.Delete(ctx, rs.network, sub.ID).ExtractErr()
		_ = networks.Delete(ctx, rs.network, net.ID).ExtractErr()
	})
	const notOwned = "does not own"
	ann := func(k, v string) map[string]string { return map[string]string{k: v} }
	fip := func(addr string) func(*v1.Service) {
		return func(s *v1.Service) { s.Spec.LoadBalancerIP = addr } //nolint:staticcheck // the upstream way to ask for a floating IP
	}
	return []cloudtest.HostileCase{
		{Name: "load-balancer-id of the victim cluster's load balancer", Annotations: ann(annLoadBalancerID, vlb.ID), Reason: notOwned},
		{Name: "load-balancer-id of a hand-made load balancer", Annotations: ann(annLoadBalancerID, hand.ID), Reason: notOwned},
		{Name: "load-balancer-id of a load balancer shared with this cluster", Annotations: ann(annLoadBalancerID, shared.ID), Reason: notOwned},
		{Name: "loadBalancerIP of the victim's floating IP", Mutate: fip(victimSvc.Status.LoadBalancer.Ingress[0].IP), Reason: notOwned},
		{Name: "loadBalancerIP of a hand-made floating IP in use", Mutate: fip(handFIP.FloatingIP), Reason: notOwned},
		{Name: "loadBalancerIP of a hand-made spare floating IP", Mutate: fip(spare.FloatingIP), Reason: notOwned},
		{Name: "subnet-id of a subnet no config names", Annotations: ann(annSubnetID, sub.ID), Reason: notOwned},
		{Name: "network-id of a network no config names", Annotations: ann(annNetworkID, net.ID), Reason: notOwned},
		{Name: "member-subnet-id of a subnet no config names", Annotations: ann(annMemberSubnetID, sub.ID), Reason: notOwned},
	}
}

var (
	_ cloudtest.DriftHarness   = (*harness)(nil)
	_ cloudtest.HostileHarness = (*harness)(nil)
)

// TestConformance is the conformance suite against the real services.
func TestConformance(t *testing.T) {
	cleanProject(t)
	t.Cleanup(func() { cleanProject(t) })
	h := newHarness(t, "create-monitor = true\n")
	cloudtest.Run(t, cloudtest.Config{Harness: h, Pending: 3 * time.Minute})
	t.Logf("writes the services were sent: %d (%v)", h.rec.Writes(), h.rec.Ops())
}
