package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// An earlier ccm put members on the VIP subnet (the class's here) when no member-subnet-id
// was set; upstream's default, which ccm follows now, is [LoadBalancer] subnet-id. Members
// already on the VIP subnet satisfy the default: a restart with the new default writes
// nothing; a new Node's member goes on upstream's default subnet, the others stay.
func TestMembersOnTheVIPSubnetKeptAfterUpgrade(t *testing.T) {
	f := newFake(t, fake.Options{})
	_, clsSub := f.AddNetwork("class-net", "10.1.0.0/16", false)
	class := "\n[LoadBalancerClass \"c\"]\nsubnet-id = " + clsSub + "\n"
	before, _ := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n"+class+"member-subnet-id = "+clsSub+"\n")
	svc := lbService("cls", map[string]string{annClass: "c"})
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	svc.Status.LoadBalancer = *ensureUntilReady(t, before, svc, nodes)
	if got := fakeLB(t, f, "cls").Listeners[0].MemberSubnets; !slices.Equal(got, []string{clsSub, clsSub}) {
		t.Fatalf("members made on %v, want the class's subnet", got)
	}

	after, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n"+class)
	writes := f.Writes()
	ensureUntilReady(t, after, svc, nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("restart with members on the VIP subnet: %d writes (%s)", w, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	if w := warnings(sink, svc); len(w) != 0 {
		t.Errorf("Warnings %q", w)
	}

	batches := f.Calls()["octavia.BatchUpdateMembers"]
	ensureUntilReady(t, after, svc, lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7"))
	if n := f.Calls()["octavia.BatchUpdateMembers"] - batches; n != 1 {
		t.Errorf("a new Node: %d member batches, want 1", n)
	}
	want := []string{clsSub, clsSub, fake.PrivateSubnetID}
	slices.Sort(want)
	if got := fakeLB(t, f, "cls").Listeners[0].MemberSubnets; !slices.Equal(got, want) {
		t.Errorf("members on %v, want the kept two on the class's subnet and the new one on [LoadBalancer] subnet-id (%v)", got, want)
	}
}

// A class on a dual-stack network, [LoadBalancer] subnet-id on an IPv4-only one: upstream's
// default member subnet has no IPv6 subnet on its network, so the IPv6 family's members go on
// its VIP subnet (the class network's IPv6 subnet); the IPv4 members on the config's subnet.
// A member-subnet-id that was set must serve every family: the error names it.
func TestDualStackMemberSubnetFallsBackToTheVIPSubnet(t *testing.T) {
	f := newFake(t, fake.Options{})
	v4net, v4only := f.AddNetwork("v4-only", "10.2.0.0/16", false)
	conf := strings.Replace(f.CloudConfig("pending-retry = 200ms"), "subnet-id = "+fake.PrivateSubnetID, "subnet-id = "+v4only, 1) +
		"\n[LoadBalancerClass \"dual\"]\nsubnet-id = " + fake.PrivateSubnetID + "\n" +
		"\n[LoadBalancerClass \"pinned\"]\nsubnet-id = " + fake.PrivateSubnetID + "\nmember-subnet-id = " + v4only + "\n"
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	dual := func(name, class string) *v1.Service {
		svc := lbService(name, map[string]string{annClass: class, annInternal: "true"})
		svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
		return svc
	}
	st := ensureUntilReady(t, lb, dual("ds", "dual"), nodes)
	if len(st.Ingress) != 2 {
		t.Fatalf("ingress %v, want one address per family", st.Ingress)
	}
	if got := fakeLB(t, f, "ds_ipv6").Listeners[0].MemberSubnets; !slices.Equal(got, []string{fake.PrivateSubnetV6ID}) {
		t.Errorf("IPv6 members on %v, want the IPv6 VIP subnet %s", got, fake.PrivateSubnetV6ID)
	}
	if got := fakeLB(t, f, "ds").Listeners[0].MemberSubnets; !slices.Equal(got, []string{v4only}) {
		t.Errorf("IPv4 members on %v, want [LoadBalancer] subnet-id %s", got, v4only)
	}

	writes := f.Writes()
	_, err = lb.EnsureLoadBalancer(context.Background(), cluster, dual("pinned", "pinned"), nodes)
	if err == nil || !strings.Contains(err.Error(), `[LoadBalancerClass "pinned"] member-subnet-id`) || !strings.Contains(err.Error(), v4net) {
		t.Errorf("a member-subnet-id without an IPv6 subnet: %v, want an error naming the key and network %s", err, v4net)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("%d writes before the error", w)
	}
}
