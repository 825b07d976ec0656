package fake_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// Neutron's tag filters on a subnet list: tags (all present), tags-any (one present),
// not-tags (not all present), not-tags-any (none present); subnets in ID order.
func TestSubnetTagFilters(t *testing.T) {
	f := start(t, fake.Options{})
	pc, err := login(t, password(f))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		t.Fatal(err)
	}
	f.AddSubnet(fake.PublicNetworkID, "ab", "198.51.100.0/28", "a", "b")
	a := f.AddSubnet(fake.PublicNetworkID, "a", "198.51.100.16/28", "a")
	f.AddSubnet(fake.PublicNetworkID, "none", "198.51.100.32/28")
	list := func(o subnets.ListOpts) []string {
		o.NetworkID = fake.PublicNetworkID
		p, err := subnets.List(nc, o).AllPages(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s, _ := subnets.ExtractSubnets(p)
		var out []string
		for _, x := range s {
			out = append(out, x.Name)
		}
		return out
	}
	pub := fake.PublicSubnetID // untagged, listed by its ID as name
	for _, tc := range []struct {
		o    subnets.ListOpts
		want []string
	}{
		{subnets.ListOpts{Tags: "a,b"}, []string{"ab"}},
		{subnets.ListOpts{TagsAny: "a,b"}, []string{"ab", "a"}},
		{subnets.ListOpts{NotTags: "a,b"}, []string{"a", "none", pub}},
		{subnets.ListOpts{NotTagsAny: "a,b"}, []string{"none", pub}},
		{subnets.ListOpts{}, []string{"ab", "a", "none", pub}},
	} {
		if got := list(tc.o); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.o, got, tc.want)
		}
	}
	// A floating IP asked from a subnet gets an address of it; a full subnet is a 409, a
	// subnet of another network a 400, and nothing is allocated then.
	got, err := floatingips.Create(context.Background(), nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, SubnetID: a}).Extract()
	if err != nil || got.FloatingIP != "198.51.100.18" {
		t.Fatalf("from subnet a: %+v %v", got, err)
	}
	tiny := f.AddSubnet(fake.PublicNetworkID, "tiny", "203.0.113.0/30")
	if got, err := floatingips.Create(context.Background(), nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, SubnetID: tiny}).Extract(); err != nil || got.FloatingIP != "203.0.113.2" {
		t.Fatalf("from tiny: %+v %v", got, err)
	}
	before := len(f.FloatingIPs())
	_, err = floatingips.Create(context.Background(), nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, SubnetID: tiny}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("a full subnet: %v, want 409", err)
	}
	_, err = floatingips.Create(context.Background(), nc, floatingips.CreateOpts{FloatingNetworkID: fake.PublicNetworkID, SubnetID: fake.PrivateSubnetID}).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Errorf("a subnet of another network: %v, want 400", err)
	}
	if n := len(f.FloatingIPs()); n != before {
		t.Errorf("refused creates allocated: %d floating IPs, was %d", n, before)
	}
}

// A port with port_security_enabled false takes no security group, as Neutron's portsecurity
// extension answers (400 PortSecurityAndIPRequiredForSecurityGroups); an empty list it takes.
// Port security cannot be turned off while the port has groups.
func TestPortSecurityRefusesGroups(t *testing.T) {
	f := start(t, fake.Options{})
	pc, err := login(t, password(f))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		t.Fatal(err)
	}
	pid := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "router", IPs: []string{"10.0.0.9"}}))
	g := f.AddSecurityGroup("g")
	f.SetPortSecurityGroups(pid, g)
	if f.SetPortSecurity(pid, false) {
		t.Fatal("port security turned off on a port with a group")
	}
	f.SetPortSecurityGroups(pid)
	if !f.SetPortSecurity(pid, false) {
		t.Fatal("port security not turned off")
	}
	set := func(groups ...string) error {
		_, err := ports.Update(context.Background(), nc, pid, ports.UpdateOpts{SecurityGroups: &groups}).Extract()
		return err
	}
	if err := set(g); !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "Port security must be enabled") {
		t.Errorf("a group on a port without port security: %v, want Neutron's 400", err)
	}
	if err := set(); err != nil {
		t.Errorf("no group on a port without port security: %v", err)
	}
	if got := f.PortSecurityGroups(pid); len(got) != 0 {
		t.Errorf("groups %v written", got)
	}
}
