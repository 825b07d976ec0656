package fake_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The fake answers as the real services were seen to answer (build/realstack/FINDINGS.md):
// each row is a request the fake accepted before.
func TestFakeAnswersAsTheRealServices(t *testing.T) {
	f := start(t, fake.Options{})
	pc, err := login(t, password(f))
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: f.Region()}
	lbc, _ := gopenstack.NewLoadBalancerV2(pc, eo)
	nc, _ := gopenstack.NewNetworkV2(pc, eo)
	ctx := context.Background()
	lb, err := loadbalancers.Create(ctx, lbc, loadbalancers.CreateOpts{Name: "lb", VipSubnetID: fake.PrivateSubnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	f.LoadBalancers() // ticks the fake: ACTIVE
	_, err = listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", ProtocolPort: 80,
		DefaultPool: &pools.CreateOpts{Name: "p", Protocol: "TCP", LBMethod: "ROUND_ROBIN"}}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) || !strings.Contains(err.Error(), "_sa_instance_state") {
		t.Errorf("a listener POST with an inline pool: %v, want Octavia's 500", err)
	}
	l, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", ProtocolPort: 80}).Extract()
	if err != nil {
		t.Fatalf("a bare listener: %v", err)
	}
	if _, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "HTTP", ProtocolPort: 80}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("a second listener on port 80: %v, want 409", err)
	}
	if _, err := listeners.Create(ctx, lbc, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: "TCP", ProtocolPort: 81, AllowedCIDRs: []string{"10.0.0.0/33"}}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Errorf("a listener with a bad CIDR: %v, want 400", err)
	}
	_, err = pools.Create(ctx, lbc, pools.CreateOpts{ListenerID: l.ID, Name: "p", Protocol: "TCP", LBMethod: "ROUND_ROBIN",
		Members: []pools.CreateMemberOpts{{Address: "10.0.0.5", ProtocolPort: 30080}}}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Errorf("a pool POST with inline members: %v, want Octavia's 500", err)
	}
	p, err := pools.Create(ctx, lbc, pools.CreateOpts{ListenerID: l.ID, Name: "p", Protocol: "TCP", LBMethod: "ROUND_ROBIN"}).Extract()
	if err != nil || len(p.Listeners) != 1 || p.Listeners[0].ID != l.ID {
		t.Errorf("a pool on the listener: %+v %v", p, err)
	}
	if _, err := pools.Create(ctx, lbc, pools.CreateOpts{ListenerID: l.ID, Name: "q", Protocol: "TCP", LBMethod: "ROUND_ROBIN"}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("a second default pool: %v, want 409", err)
	}

	var vip string
	for _, x := range f.LoadBalancers() {
		vip = x.VipPortID
	}
	first, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, PortID: vip}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, PortID: vip}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("a second floating IP on the VIP's fixed IP: %v, want Neutron's 409", err)
	}
	spare, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := floatingips.Update(ctx, nc, spare.ID, floatingips.UpdateOpts{PortID: &vip}).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("associating a second floating IP with the VIP's fixed IP: %v, want 409", err)
	}
	seen := map[string]bool{first.FloatingIP: true, spare.FloatingIP: true}
	for i := 2; ; i++ {
		fip, err := floatingips.Create(ctx, nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID}).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			if i != 150 {
				t.Errorf("the pool ran out after %d floating IPs, want 150", i)
			}
			break
		}
		if err != nil || seen[fip.FloatingIP] || i > 150 {
			t.Fatalf("floating IP %d: %v %v (an address handed out twice, or no 409 when none is left)", i, fip, err)
		}
		seen[fip.FloatingIP] = true
	}
}
