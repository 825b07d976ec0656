package vsphere

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/cloudtest"
)

// The migration part of the harness. Upstream's vSphere CCM offers load balancers only through
// NSX-T; without an [NSXT] section its LoadBalancer() is not offered, so it leaves nothing in
// vCenter for a Service: the address in the status came from the implementation that served it
// (MetalLB, or kube-vip's cloud provider), whose controller ccm replaces while the speaker that
// announces the address stays. What "upstream's state" is here: Services whose status holds an
// address of the pool range, with the marks those controllers leave, and no record in vCenter.
// NSX-T virtual servers are not in vCenter and ccm does not manage them (docs/providers/vsphere.md).

var _ cloudtest.MigrationHarness = (*harness)(nil)

const (
	// tag delete and create, as the simulator's gate names vAPI calls.
	opDeleteTag = "DELETE /rest/com/vmware/cis/tagging/tag"
	// firstSeeded: the seeded addresses sit at the top of the conformance pool (192.0.2.0/24),
	// where ccm's own allocation (lowest free first) does not reach during the suite.
	firstSeeded = 200
)

// SeedUpstream gives each Service the address its previous load balancer controller assigned,
// with that controller's marks: MetalLB's pool annotation, kube-vip's loadBalancerIPs
// annotation, or (older kube-vip releases) spec.loadBalancerIP. Nothing is written to vCenter:
// upstream's CCM wrote nothing there for a Service.
func (h *harness) SeedUpstream(t cloudtest.T, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.known == nil {
		h.known = map[string]bool{}
	}
	addrs, err := h.recordAddrs()
	if err != nil {
		t.Fatalf("reading category %s at the simulator: %v", lbCategory, err)
	}
	for ip := range addrs { // what other groups' records hold was handed out before too
		h.known[ip] = true
	}
	out := make([]*v1.Service, 0, len(svcs))
	for _, svc := range svcs {
		svc = svc.DeepCopy()
		if svc.UID == "" {
			svc.UID = types.UID(fmt.Sprintf("5f1d0c2e-migrate-%d", h.seeded))
		}
		addr := fmt.Sprintf("192.0.2.%d", firstSeeded+h.seeded)
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		switch h.seeded % 3 {
		case 0:
			svc.Annotations["metallb.universe.tf/ip-allocated-from-pool"] = "vips"
		case 1:
			svc.Annotations["kube-vip.io/loadbalancerIPs"] = addr
		case 2:
			svc.Spec.LoadBalancerIP = addr
		}
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
		h.seeded++
		h.known[addr] = true
		out = append(out, svc)
	}
	return out
}

// MigrationCounts: a load balancer here is an address a speaker announces, so its creates are
// the addresses the records hold that no Service served before (read at the simulator), and
// its serving deletes are the records deleted at the simulator's gate.
func (h *harness) MigrationCounts() (lbCreates, servingDeletes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	addrs, err := h.recordAddrs()
	if err != nil {
		return -1, -1 // unreadable: never equal to a count taken before
	}
	for ip := range addrs {
		if !h.known[ip] {
			lbCreates++
		}
	}
	return lbCreates, h.s.Calls().PerOp[opDeleteTag]
}

// Leftovers: upstream left nothing in vCenter for a Service, so nothing of it can stay unused;
// what the Service's previous controller left is in the API server, not the cloud.
func (h *harness) Leftovers(t cloudtest.T, clusterName string, svc *v1.Service) []string { return nil }

// Remains lists the record of svc and any record holding its seeded address, read at the
// simulator.
func (h *harness) Remains(t cloudtest.T, clusterName string, svc *v1.Service) []string {
	var out []string
	name := names.Name(clusterName, svc.Namespace, svc.Name)
	want := map[string]bool{}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		want[in.IP] = true
	}
	for tag, desc := range h.records(t) {
		if tag == name || slices.ContainsFunc(parseRecord(desc).IPs, func(ip string) bool { return want[ip] }) {
			out = append(out, fmt.Sprintf("record %q (%s)", tag, desc))
		}
	}
	return out
}

// recordAddrs is every address a record of the category holds, read at the simulator.
func (h *harness) recordAddrs() (map[string]bool, error) {
	recs, err := h.s.TagsInCategory(context.Background(), lbCategory)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, desc := range recs {
		for _, ip := range parseRecord(desc).IPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out[a.String()] = true
			}
		}
	}
	return out, nil
}
