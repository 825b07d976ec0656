package openstack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func TestInstanceMetadataFromPorts(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", AZ: "az-2", Flavor: "m1.large", IPs: []string{"10.0.0.5", "fd00::5"}, FloatingIP: "172.24.4.9"})
	ctx := context.Background()
	for _, tc := range []struct {
		name, extra string
		want        []v1.NodeAddress
	}{
		{"dual-stack", "", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00::5"},
			{Type: v1.NodeExternalIP, Address: "172.24.4.9"}, {Type: v1.NodeHostName, Address: "n1"}}},
		{"ipv6 disabled", "[Networking]\nipv6-support-disabled = true\n", []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeExternalIP, Address: "172.24.4.9"}, {Type: v1.NodeHostName, Address: "n1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst, _ := newTestCloud(t, f, tc.extra).InstancesV2()
			md, err := inst.InstanceMetadata(ctx, node("n1", ""))
			if err != nil {
				t.Fatal(err)
			}
			if md.ProviderID != "openstack:///"+id || md.InstanceType != "m1.large" || md.Zone != "az-2" || md.Region != "RegionOne" {
				t.Errorf("metadata = %+v", md)
			}
			if !slices.Equal(md.NodeAddresses, tc.want) {
				t.Errorf("addresses = %v, want %v", md.NodeAddresses, tc.want)
			}
		})
	}
}

func TestInstanceStates(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	ctx := context.Background()
	byRegion := node("renamed", "openstack://RegionOne/"+id)
	if ok, err := inst.InstanceExists(ctx, byRegion); err != nil || !ok {
		t.Fatalf("exists by openstack://region/id = %v, %v", ok, err)
	}
	f.SetServerStatus(id, "SHUTOFF")
	if down, err := inst.InstanceShutdown(ctx, byRegion); err != nil || !down {
		t.Errorf("SHUTOFF server: shutdown = %v, %v", down, err)
	}
	// A 5xx is an error, never "gone".
	f.SetFault("nova.GetServer", fake.Fault{Status: 503})
	if ok, err := inst.InstanceExists(ctx, byRegion); err == nil {
		t.Errorf("503: exists = %v with no error", ok)
	}
	f.SetFault("nova.GetServer", fake.Fault{})
	f.DeleteServer(id)
	if ok, err := inst.InstanceExists(ctx, byRegion); err != nil || ok {
		t.Errorf("deleted server: exists = %v, %v; want false, nil", ok, err)
	}
	if _, err := inst.InstanceMetadata(ctx, byRegion); !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("deleted server: metadata error %v, want InstanceNotFound", err)
	}
	// Two servers with one name: refuse to guess.
	f.AddServer(fake.ServerSpec{Name: "twin", IPs: []string{"10.0.0.7"}})
	f.AddServer(fake.ServerSpec{Name: "twin", IPs: []string{"10.0.0.8"}})
	if _, err := inst.InstanceExists(ctx, node("twin", "")); err == nil {
		t.Error("two servers named twin: no error")
	}
	// Name look-up is exact, not a regular expression match.
	f.AddServer(fake.ServerSpec{Name: "web-10", IPs: []string{"10.0.0.9"}})
	if ok, err := inst.InstanceExists(ctx, node("web-1", "")); err != nil || ok {
		t.Errorf("web-1 matched web-10: %v %v", ok, err)
	}
}

// One Keystone token serves every call; an expired one costs exactly one re-authentication.
func TestSessionReusesTokenAndReauthenticatesOnce(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	ctx := context.Background()
	for range 20 {
		if _, err := inst.InstanceMetadata(ctx, node("n1", "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.TokensIssued(); n != 1 {
		t.Fatalf("tokens issued for 20 look-ups = %d, want 1", n)
	}
	f.ExpireTokens()
	for range 5 {
		if _, err := inst.InstanceMetadata(ctx, node("n1", "")); err != nil {
			t.Fatalf("after token expiry: %v", err)
		}
	}
	if n := f.TokensIssued(); n != 2 {
		t.Errorf("tokens issued after one expiry = %d, want 2", n)
	}
}

func TestWrongPasswordIsAnError(t *testing.T) {
	f := newFake(t, fake.Options{Password: "right"})
	c := newTestCloud(t, f, "")
	c.cfg.Global.Password = "wrong-password-xyz"
	inst, _ := c.InstancesV2()
	_, err := inst.InstanceExists(context.Background(), node("n1", ""))
	if err == nil {
		t.Fatal("wrong password: no error")
	}
	if s := err.Error(); strings.Contains(s, "wrong-password-xyz") {
		t.Errorf("error echoes the password: %s", s)
	}
}
