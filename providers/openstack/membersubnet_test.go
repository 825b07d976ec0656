package openstack

import (
	"slices"
	"testing"
	"time"

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
