package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// Upstream's createOpts.VipAddress: spec.loadBalancerIP is the VIP of an internal or IPv6 load
// balancer, the floating IP of a public IPv4 one.
func TestRequestedVIP(t *testing.T) {
	v4, v6 := v1.IPv4Protocol, v1.IPv6Protocol
	for _, tc := range []struct {
		ip       string
		internal bool
		family   v1.IPFamily
		want     string
	}{
		{"10.0.0.77", true, v4, "10.0.0.77"},
		{"10.0.0.77", false, v4, ""}, // a floating IP
		{"fd00::77", false, v6, "fd00::77"},
		{"FD00:0::77", true, v6, "fd00::77"},
		{"10.0.0.77", true, v6, ""}, // the other family's load balancer of a dual-stack Service
		{"fd00::77", true, v4, ""},
		{"", true, v4, ""},
		{"x", true, v4, ""},
	} {
		if got := requestedVIP(tc.ip, tc.internal, tc.family); got != tc.want {
			t.Errorf("requestedVIP(%q, internal %v, %s) = %q, want %q", tc.ip, tc.internal, tc.family, got, tc.want)
		}
	}
	spec := &lbSpec{name: "n", vipAddress: "10.0.0.77"}
	for _, tc := range []struct {
		vip     string
		adopted bool
		want    bool
	}{{"10.0.0.77", false, false}, {"10.0.0.78", false, true}, {"10.0.0.78", true, false}} {
		if got := vipNotApplied(spec, &loadbalancers.LoadBalancer{VipAddress: tc.vip}, tc.adopted) != ""; got != tc.want {
			t.Errorf("vipNotApplied(VIP %s, adopted %v) = %v", tc.vip, tc.adopted, got)
		}
	}
}

// Through the fake: an internal Service's and an IPv6 Service's spec.loadBalancerIP is their
// load balancer's VIP (and status address); changed later, nothing is written and a Warning
// says the VIP stays, as Octavia cannot change it.
func TestLoadBalancerIPAsVIP(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	in := lbService("int", map[string]string{annInternal: "true"})
	in.Spec.LoadBalancerIP = "10.0.0.77" //nolint:staticcheck // the upstream way
	v6 := lbService("six", nil)
	v6.Spec.IPFamilies, v6.Spec.LoadBalancerIP = []v1.IPFamily{v1.IPv6Protocol}, "fd00::77" //nolint:staticcheck // the upstream way
	for _, svc := range []*v1.Service{in, v6} {
		st := ensureUntilReady(t, lb, svc, nodes)
		want := svc.Spec.LoadBalancerIP //nolint:staticcheck // the upstream way
		if got := fakeLB(t, f, svc.Name); got.VipAddress != want || st.Ingress[0].IP != want {
			t.Errorf("%s: VIP %s, status %v; want %s", svc.Name, got.VipAddress, st.Ingress, want)
		}
		svc.Status.LoadBalancer = *st
	}
	if fips := f.FloatingIPs(); len(fips) != 0 {
		t.Errorf("floating IPs %v for an internal and an IPv6 load balancer", fips)
	}
	in.Spec.LoadBalancerIP = "10.0.0.78" //nolint:staticcheck // the upstream way
	writes := f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, in, nodes); err != nil {
		t.Fatal(err)
	}
	if w := f.Writes() - writes; w != 0 || fakeLB(t, f, "int").VipAddress != "10.0.0.77" {
		t.Errorf("a changed spec.loadBalancerIP wrote %d times (%s)", w, f.CallSummary())
	}
	found := false
	for _, e := range sink.On(in) {
		found = found || (strings.Contains(e, "LoadBalancerIPNotApplied") && strings.Contains(e, "10.0.0.78"))
	}
	if !found {
		t.Errorf("no LoadBalancerIPNotApplied Warning: %v", sink.On(in))
	}
	// An address already taken in the subnet is refused by Octavia; nothing is left behind.
	taken := lbService("taken", map[string]string{annInternal: "true"})
	taken.Spec.LoadBalancerIP = "10.0.0.77" //nolint:staticcheck // the upstream way
	before := len(f.LoadBalancers())
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, taken, nodes); err == nil || len(f.LoadBalancers()) != before {
		t.Errorf("a VIP in use: %v, %d load balancers (was %d)", err, len(f.LoadBalancers()), before)
	}
}
