package openstack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// A load balancer made by hand that the operator allowed a namespace to use: the Service's
// listener goes onto it, next to the operator's; deleting the Service takes back exactly that
// listener (with its pool, members and monitor). The load balancer, its floating IP and its
// other listener, pool, member and monitor stay as they were.
func TestAllowedLoadBalancerKeepsWhatIsNotOurs(t *testing.T) {
	f := newFake(t, fake.Options{})
	lbID := f.AddLoadBalancer("operators-lb")
	f.AddListener(lbID, "the operator's listener", "TCP", 443, "10.0.9.9")
	theirFIP := "172.24.4.30"
	f.AssociateFloatingIP(f.AddFloatingIP(theirFIP), lbID)
	before := f.Snapshot()

	c := newTestCloud(t, f, "allowed-resource-namespaces = default\nmanage-security-groups = true\n")
	svc := lbService("shared", map[string]string{annLoadBalancerID: lbID, annHealthMonitor: "true"})
	st := ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	if st.Ingress[0].IP != theirFIP {
		t.Errorf("ingress %v, want the load balancer's own floating IP %s", st.Ingress, theirFIP)
	}
	got := fakeLBByID(t, f, lbID)
	if len(got.Listeners) != 2 {
		t.Fatalf("listeners = %+v, want the operator's and ours", got.Listeners)
	}
	for _, l := range got.Listeners {
		if l.Port == 80 && !ownership.DescribedBy(ownership.Of(cluster, svc), l.Description) {
			t.Errorf("our listener's description %q does not carry the Service's mark", l.Description)
		}
	}
	if n := len(f.FloatingIPs()); n != 1 {
		t.Errorf("%d floating IPs, want the operator's only (ccm never gives a foreign load balancer one)", n)
	}
	// Idempotent: nothing written again.
	writes := f.Writes()
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("second ensure made %d writes", w)
	}
	// A port taken by the operator's listener is refused, not fought over.
	clash := lbService("clash", map[string]string{annLoadBalancerID: lbID}, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	if _, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, clash, lbNodes("10.0.0.5")); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Errorf("a Service asking for the operator's port: %v, want a refusal", err)
	}
	deleteUntilGone(t, c, clash)
	deleteUntilGone(t, c, svc)
	if after := f.Snapshot(); after != before {
		t.Errorf("the Service's delete left the operator's objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func fakeLBByID(t *testing.T, f *fake.Cloud, id string) fake.LoadBalancer {
	t.Helper()
	for _, lb := range f.LoadBalancers() {
		if lb.ID == id {
			return lb
		}
	}
	t.Fatalf("no load balancer %s", id)
	return fake.LoadBalancer{}
}

// The attack, step by step: a tenant of another cluster names the victim's load
// balancer by load-balancer-id; before, ccm adopted it and the tenant's delete detached the
// victim's floating IP and removed its listeners. Now it is refused without a write, and the
// delete changes nothing.
func TestLoadBalancerIDOfAnotherClusterRefused(t *testing.T) {
	f := newFake(t, fake.Options{})
	victim := newTestCloud(t, f, "")
	vsvc := lbService("shop", nil)
	ensureUntilReady(t, victim.lb, vsvc, lbNodes("10.0.0.5"))
	victimLB := fakeLB(t, f, "shop")
	before, writes := f.Snapshot(), f.Writes()

	attacker := newTestCloud(t, f, "")
	svc := lbService("evil", map[string]string{annLoadBalancerID: victimLB.ID})
	_, err := attacker.lb.EnsureLoadBalancer(context.Background(), "other-cluster", svc, lbNodes("10.0.0.6"))
	if !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), annLoadBalancerID) {
		t.Errorf("Ensure = %v, want a refusal naming the annotation", err)
	}
	if _, exists, err := attacker.lb.GetLoadBalancer(context.Background(), "other-cluster", svc); err != nil || exists {
		t.Errorf("GetLoadBalancer = %v, %v; want (false, nil) so that the Service's delete is not blocked", exists, err)
	}
	if err := attacker.lb.EnsureLoadBalancerDeleted(context.Background(), "other-cluster", svc); err != nil {
		t.Errorf("delete: %v", err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the attack made %d writes: %s", w, f.CallSummary())
	}
	if after := f.Snapshot(); after != before {
		t.Errorf("the attack changed the cloud:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A Service of an earlier ccm (tags without the UID) keeps its load balancer: the UID is
// added, nothing is recreated.
func TestLegacyLoadBalancerGetsUID(t *testing.T) {
	f := newFake(t, fake.Options{})
	svc := lbService("old", nil)
	id := ownership.Of(cluster, svc)
	legacy := id
	legacy.UID = ""
	lbID := f.AddLoadBalancerTagged("kube_service_"+cluster+"_default_old", legacyLBDescription(id), ownerTags(legacy)...)
	c := newTestCloud(t, f, "")
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	got := fakeLBByID(t, f, lbID)
	if !ownership.Is(id, tagMap(got.Tags)) || tagMap(got.Tags)[ownership.ServiceUIDTag] != string(svc.UID) {
		t.Errorf("tags %v, want the ownership tags with the UID", got.Tags)
	}
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 0 {
		t.Errorf("%d load balancer creates, want 0", n)
	}
	// An earlier Service of the same name (another UID) left its load balancer: not ours.
	again := lbService("old", nil)
	again.UID = "uid-another-old"
	if _, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, again, lbNodes("10.0.0.5")); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("Ensure of a new Service with the old one's name: %v, want a refusal", err)
	}
	if err := c.lb.EnsureLoadBalancerDeleted(context.Background(), cluster, again); err != nil {
		t.Errorf("delete of the new Service: %v", err)
	}
	fakeLBByID(t, f, lbID) // still there
}

// Each family's listener gets only the source ranges of its family (Octavia refuses the
// other family's); a family the ranges do not mention is closed, not opened to everyone.
func TestDualStackSourceRangesPerFamily(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	for _, tc := range []struct {
		name          string
		ranges        []string
		wantV4, want6 []string
	}{
		{"both", []string{"2001:db8::/32", " 192.0.2.0/24", "198.51.100.7/32"}, []string{"192.0.2.0/24", "198.51.100.7/32"}, []string{"2001:db8::/32"}},
		{"v4 only", []string{"192.0.2.0/24"}, []string{"192.0.2.0/24"}, []string{"::/128"}},
		{"none", nil, nil, nil},
	} {
		svc := lbService("dual-"+strings.ReplaceAll(tc.name, " ", "-"), nil)
		svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
		svc.Spec.LoadBalancerSourceRanges = tc.ranges
		ensureUntilReady(t, c.lb, svc, nodes)
		if got := fakeLB(t, f, svc.Name).Listeners[0].AllowedCIDRs; !slices.Equal(got, tc.wantV4) {
			t.Errorf("%s: IPv4 listener allowed_cidrs = %v, want %v", tc.name, got, tc.wantV4)
		}
		if got := fakeLB(t, f, svc.Name+"_ipv6").Listeners[0].AllowedCIDRs; !slices.Equal(got, tc.want6) {
			t.Errorf("%s: IPv6 listener allowed_cidrs = %v, want %v", tc.name, got, tc.want6)
		}
	}
	bad := lbService("bad-range", nil)
	bad.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "everyone"}
	if _, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, bad, nodes); err == nil || !strings.Contains(err.Error(), "spec.loadBalancerSourceRanges[1]") {
		t.Errorf("a bad range: %v, want an error naming the field", err)
	}
}

// A floating IP another Service of the same cluster allocated is not the tenant's either; the
// tenant's delete never detaches it.
func TestFloatingIPOfAnotherServiceRefused(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	st := ensureUntilReady(t, c.lb, lbService("owner", nil), lbNodes("10.0.0.5"))
	writes := f.Writes()
	svc := lbService("thief", nil)
	svc.Spec.LoadBalancerIP = st.Ingress[0].IP
	if _, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5")); !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), "spec.loadBalancerIP") {
		t.Errorf("Ensure = %v, want a refusal naming spec.loadBalancerIP", err)
	}
	if err := c.lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc); err != nil {
		t.Fatal(err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("%d writes: %s", w, f.CallSummary())
	}
	for _, fip := range f.FloatingIPs() {
		if fip.Address == st.Ingress[0].IP && fip.PortID == "" {
			t.Errorf("the owner's floating IP was detached")
		}
	}
}

// Network and subnet annotations must name what the cloud config names (or be allowed).
func TestNetworkAnnotationsMustBeConfiguredOrAllowed(t *testing.T) {
	f := newFake(t, fake.Options{})
	netID, subnetID := f.AddNetwork("elsewhere", "10.9.0.0/16", false)
	base := "\n[LoadBalancerClass \"alt\"]\nsubnet-id = " + fake.PrivateSubnetV6ID + "\n"
	for _, tc := range []struct {
		name, key, value, extra string
		ok                      bool
	}{
		{"config subnet", annSubnetID, fake.PrivateSubnetID, "", true},
		{"class subnet", annMemberSubnetID, fake.PrivateSubnetV6ID, "", true},
		{"foreign subnet", annSubnetID, subnetID, "", false},
		{"foreign network", annNetworkID, netID, "", false},
		{"foreign member subnet", annMemberSubnetID, subnetID, "", false},
		{"foreign floating network", annFloatingNetworkID, netID, "", false},
		{"foreign floating subnet", annFloatingSubnetID, subnetID, "", false},
		{"allowed by ID", annSubnetID, subnetID, "allowed-resource-ids = " + subnetID + "\n", true},
		{"allowed by namespace", annNetworkID, netID, "allowed-resource-namespaces = default\n", true},
	} {
		c := newTestCloud(t, f, tc.extra+base)
		_, err := c.lb.spec("n", lbService("w", map[string]string{tc.key: tc.value}))
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), tc.key)) {
			t.Errorf("%s: %v, want a refusal naming %s", tc.name, err, tc.key)
		}
	}
}

// The port of a member is its own server's: another cluster's machine on an overlapping
// network with the same address never gets the Service's group.
func TestSecurityGroupPortFoundByServer(t *testing.T) {
	f := newFake(t, fake.Options{})
	mine := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}}))
	otherNet, otherSubnet := f.AddNetwork("other-cluster", "10.0.0.0/16", false)
	theirs := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "their-node", IPs: []string{"10.0.0.5"}, NetworkID: otherNet, SubnetID: otherSubnet}))
	c := newTestCloud(t, f, manageSG)
	svc := lbService("web", nil)
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	g := sgOf(t, f, "lb-sg-kube_service_"+cluster+"_default_web")
	if got := f.PortSecurityGroups(mine); !slices.Equal(got, []string{g.ID}) {
		t.Errorf("the member's port groups = %v, want ours", got)
	}
	if got := f.PortSecurityGroups(theirs); len(got) != 0 {
		t.Errorf("another cluster's machine with the same address got groups %v", got)
	}
	for _, r := range g.Rules {
		if r.Direction == "ingress" && !strings.HasPrefix(r.String(), "ingress IPv4 tcp 30080") {
			t.Errorf("unexpected rule %s", r)
		}
	}
}

// A port's group list is changed by compare-and-swap: a change someone makes between ccm's
// read and its write (412 at the fake) is read again and kept.
func TestSecurityGroupPortCompareAndSwap(t *testing.T) {
	f := newFake(t, fake.Options{})
	port := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}}))
	users := f.AddSecurityGroup("users")
	c := newTestCloud(t, f, manageSG)
	concurrent := false
	f.BeforeNextPortUpdate(func(groups []string) []string {
		concurrent = true // the user adds their group between ccm's read and ccm's write
		return append(groups, users)
	})
	svc := lbService("web", nil)
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	if !concurrent {
		t.Fatal("the concurrent change did not happen")
	}
	g := sgOf(t, f, "lb-sg-kube_service_"+cluster+"_default_web")
	if got := f.PortSecurityGroups(port); !slices.Equal(got, []string{users, g.ID}) {
		t.Errorf("port groups = %v, want the user's concurrent one kept and ours added", got)
	}
	if n := f.PreconditionFailures(); n != 1 {
		t.Errorf("%d updates refused as stale at the fake, want 1 (the write used If-Match)", n)
	}
	// Delete: the user's group stays.
	deleteUntilGone(t, c, svc)
	if got := f.PortSecurityGroups(port); !slices.Equal(got, []string{users}) {
		t.Errorf("port groups after delete = %v, want the user's", got)
	}
}

// A rule someone added by hand to the Service's group is never deleted by ccm.
func TestSecurityGroupForeignRuleKept(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}})
	c := newTestCloud(t, f, manageSG)
	svc := lbService("web", nil)
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	name := "lb-sg-kube_service_" + cluster + "_default_web"
	f.AddSecurityGroupRule(sgOf(t, f, name).ID, "IPv4", "203.0.113.0/24", 22)
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	got := ingress(sgOf(t, f, name))
	want := []string{"ingress IPv4 tcp 22-22 203.0.113.0/24", "ingress IPv4 tcp 30080-30080 10.0.0.0/16", "ingress IPv4 tcp 30080-30080 198.51.100.0/24"}
	if !slices.Equal(got, want) {
		t.Errorf("rules = %v, want %v (the hand-made rule kept, ours replaced)", got, want)
	}
}

// Values that go into URLs or cloud filters are checked first, with errors naming the field.
func TestNamedValuesValidated(t *testing.T) {
	c := newTestCloud(t, newFake(t, fake.Options{}), "")
	for _, tc := range []struct {
		ann  map[string]string
		lbIP string
		want string
	}{
		{map[string]string{annLoadBalancerID: "../../listeners"}, "", annLoadBalancerID},
		{map[string]string{annLoadBalancerID: "lb-1?x=y"}, "", annLoadBalancerID},
		{nil, "172.24.4.300", "spec.loadBalancerIP"},
		{nil, "fe80::1%eth0", "spec.loadBalancerIP"},
	} {
		svc := lbService("w", tc.ann)
		svc.Spec.LoadBalancerIP = tc.lbIP
		if _, err := c.lb.spec("n", svc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: %v, want an error naming %s", tc.ann, tc.lbIP, err, tc.want)
		}
	}
}

// The provider scopes ownership by the cluster name ccm hands over: HasClusterID is false
// until then (it was always true).
func TestHasClusterIDFollowsClusterName(t *testing.T) {
	c := newTestCloud(t, newFake(t, fake.Options{}), "")
	if c.HasClusterID() {
		t.Errorf("HasClusterID before UseClusterName = true")
	}
	var scoped ownership.ClusterNameScoped = c
	scoped.UseClusterName("prod-eu-1")
	if !c.HasClusterID() || c.ClusterName() != "prod-eu-1" {
		t.Errorf("after UseClusterName: HasClusterID=%v name=%q", c.HasClusterID(), c.ClusterName())
	}
}
