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

const manageSG = "manage-security-groups = true\n"

// sgOf is the fake's group named name, or fails.
func sgOf(t *testing.T, f *fake.Cloud, name string) fake.SecurityGroup {
	t.Helper()
	for _, g := range f.SecurityGroups() {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no security group %s in %+v", name, f.SecurityGroups())
	return fake.SecurityGroup{}
}

// ingress is the group's ingress rules as strings (sorted by the fake).
func ingress(g fake.SecurityGroup) []string {
	var out []string
	for _, r := range g.Rules {
		if r.Direction == "ingress" {
			out = append(out, r.String())
		}
	}
	return out
}

func deleteUntilGone(t *testing.T, c *Cloud, svc *v1.Service) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc)
		if err == nil {
			return
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The whole life of a Service's group: created with the NodePort and health-check rules,
// attached next to a user's group, attached to a new node's port only, nothing written after
// a restart, detached from a removed node, and on delete detached and deleted while the
// user's group stays on its port.
func TestSecurityGroupLifecycle(t *testing.T) {
	f := newFake(t, fake.Options{})
	var portOf []string
	for i, ip := range []string{"10.0.0.5", "10.0.0.6", "10.0.0.7"} {
		portOf = append(portOf, f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-" + string(rune('a'+i)), IPs: []string{ip}})))
	}
	user := f.AddSecurityGroup("default")
	f.SetPortSecurityGroups(portOf[0], user)

	c := newTestCloud(t, f, manageSG)
	svc := lbService("web", nil,
		v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5", "10.0.0.6"))

	name := "lb-sg-kube_service_" + cluster + "_default_web"
	g := sgOf(t, f, name)
	if !strings.Contains(g.Description, "default/web") || !strings.Contains(g.Description, cluster) {
		t.Errorf("description %q does not name the Service and cluster", g.Description)
	}
	want := []string{"ingress IPv4 tcp 30080-30080 0.0.0.0/0", "ingress IPv4 tcp 32000-32000 0.0.0.0/0", "ingress IPv4 udp 30053-30053 0.0.0.0/0"}
	if got := ingress(g); !slices.Equal(got, want) {
		t.Errorf("ingress rules = %v, want %v", got, want)
	}
	if n := len(g.Rules) - len(want); n != 2 {
		t.Errorf("%d egress rules, want Neutron's 2 defaults kept", n)
	}
	if got := f.PortSecurityGroups(portOf[0]); !slices.Equal(got, []string{user, g.ID}) {
		t.Errorf("node-a port groups = %v, want the user's then ours", got)
	}
	if got := f.PortSecurityGroups(portOf[1]); !slices.Equal(got, []string{g.ID}) {
		t.Errorf("node-b port groups = %v", got)
	}
	if got := f.PortSecurityGroups(portOf[2]); len(got) != 0 {
		t.Errorf("node-c (not a member) port groups = %v", got)
	}

	// A node joins: one port update, its port only; no group or rule writes.
	before := f.Calls()
	if err := c.lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7")); err != nil {
		t.Fatal(err)
	}
	after := f.Calls()
	if n := after["neutron.UpdatePort"] - before["neutron.UpdatePort"]; n != 1 {
		t.Errorf("port updates on node add = %d, want 1", n)
	}
	for _, op := range []string{"neutron.CreateSecurityGroup", "neutron.CreateSecurityGroupRule", "neutron.DeleteSecurityGroupRule"} {
		if n := after[op] - before[op]; n != 0 {
			t.Errorf("%s called %d times on node add", op, n)
		}
	}
	if got := f.PortSecurityGroups(portOf[2]); !slices.Equal(got, []string{g.ID}) {
		t.Errorf("node-c port groups = %v", got)
	}

	// A restarted ccm finds everything in place: zero writes.
	c2 := newTestCloud(t, f, manageSG)
	writes := f.Writes()
	ensureUntilReady(t, c2.lb, svc, lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7"))
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("restart made %d writes: %s", w, f.CallSummary())
	}

	// A node leaves: detached from its port.
	if err := c2.lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.7")); err != nil {
		t.Fatal(err)
	}
	if got := f.PortSecurityGroups(portOf[1]); len(got) != 0 {
		t.Errorf("removed node's port groups = %v", got)
	}

	deleteUntilGone(t, c2, svc)
	for _, g := range f.SecurityGroups() {
		if g.Name == name {
			t.Errorf("group %s still exists", name)
		}
	}
	if got := f.PortSecurityGroups(portOf[0]); !slices.Equal(got, []string{user}) {
		t.Errorf("node-a port groups after delete = %v, want the user's only", got)
	}
	if got := f.PortSecurityGroups(portOf[2]); len(got) != 0 {
		t.Errorf("node-c port groups after delete = %v", got)
	}
	if len(f.SecurityGroups()) != 1 {
		t.Errorf("groups left = %+v, want the user's", f.SecurityGroups())
	}
}

// loadBalancerSourceRanges replace 0.0.0.0/0; the member subnet stays open for the amphorae;
// a narrowed range list deletes exactly the rules that went away.
func TestSecurityGroupSourceRanges(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}})
	c := newTestCloud(t, f, manageSG)
	svc := lbService("ranged", nil)
	svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.0/24", " 10.1.0.0/16"}
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	name := "lb-sg-kube_service_" + cluster + "_default_ranged"
	want := []string{"ingress IPv4 tcp 30080-30080 10.0.0.0/16", "ingress IPv4 tcp 30080-30080 10.1.0.0/16", "ingress IPv4 tcp 30080-30080 192.168.0.0/24"}
	if got := ingress(sgOf(t, f, name)); !slices.Equal(got, want) {
		t.Errorf("ingress rules = %v, want %v", got, want)
	}

	svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.0/24"}
	before := f.Calls()
	ensureUntilReady(t, c.lb, svc, lbNodes("10.0.0.5"))
	after := f.Calls()
	if n := after["neutron.DeleteSecurityGroupRule"] - before["neutron.DeleteSecurityGroupRule"]; n != 1 {
		t.Errorf("rule deletes = %d, want 1", n)
	}
	if n := after["neutron.CreateSecurityGroupRule"] - before["neutron.CreateSecurityGroupRule"]; n != 0 {
		t.Errorf("rule creates = %d, want 0", n)
	}
	want = []string{"ingress IPv4 tcp 30080-30080 10.0.0.0/16", "ingress IPv4 tcp 30080-30080 192.168.0.0/24"}
	if got := ingress(sgOf(t, f, name)); !slices.Equal(got, want) {
		t.Errorf("ingress rules = %v, want %v", got, want)
	}
}

// A dual-stack Service opens its NodePorts to both families; the node's one port gets the
// group once.
func TestSecurityGroupDualStack(t *testing.T) {
	f := newFake(t, fake.Options{})
	port := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5", "fd00::5"}}))
	c := newTestCloud(t, f, manageSG)
	svc := lbService("dual", nil)
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	ensureUntilReady(t, c.lb, svc, nodes)
	g := sgOf(t, f, "lb-sg-kube_service_"+cluster+"_default_dual")
	want := []string{"ingress IPv4 tcp 30080-30080 0.0.0.0/0", "ingress IPv6 tcp 30080-30080 ::/0"}
	if got := ingress(g); !slices.Equal(got, want) {
		t.Errorf("ingress rules = %v, want %v", got, want)
	}
	if got := f.PortSecurityGroups(port); !slices.Equal(got, []string{g.ID}) {
		t.Errorf("port groups = %v", got)
	}
}

// A group with our name that we did not create (other description) is never changed, attached
// or deleted; Ensure fails naming it, delete goes on without it.
func TestSecurityGroupNotOursUntouched(t *testing.T) {
	f := newFake(t, fake.Options{})
	port := f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}}))
	theirs := f.AddSecurityGroup("lb-sg-kube_service_" + cluster + "_default_web")
	c := newTestCloud(t, f, manageSG)
	svc := lbService("web", nil)
	_, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5"))
	if err == nil || !strings.Contains(err.Error(), "not touching it") {
		t.Fatalf("Ensure = %v, want a refusal to touch the group", err)
	}
	// Deleting the Service is not blocked by it, and leaves it alone.
	deleteUntilGone(t, c, svc)
	gs := f.SecurityGroups()
	if len(gs) != 1 || gs[0].ID != theirs || len(ingress(gs[0])) != 0 {
		t.Errorf("groups = %+v, want theirs unchanged", gs)
	}
	if got := f.PortSecurityGroups(port); len(got) != 0 {
		t.Errorf("port groups = %v", got)
	}
	for _, op := range []string{"neutron.CreateSecurityGroupRule", "neutron.DeleteSecurityGroup", "neutron.UpdatePort"} {
		if n := f.Calls()[op]; n != 0 {
			t.Errorf("%s called %d times", op, n)
		}
	}
}

// A member node's port without port security (port_security_enabled false: a router VM, a
// VRRP pair) cannot take a security group (Neutron answers 400): as upstream, it is skipped.
// The other members' ports get the group, the sync succeeds, and that port is never written.
func TestSecurityGroupSkipsPortWithoutPortSecurity(t *testing.T) {
	f := newFake(t, fake.Options{})
	var portOf []string
	for i, ip := range []string{"10.0.0.5", "10.0.0.6", "10.0.0.7"} {
		portOf = append(portOf, f.ServerPortID(f.AddServer(fake.ServerSpec{Name: "node-" + string(rune('a'+i)), IPs: []string{ip}})))
	}
	if !f.SetPortSecurity(portOf[1], false) {
		t.Fatal("port security not turned off")
	}
	c := newTestCloud(t, f, manageSG)
	svc := lbService("web", nil)
	nodes := lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7")
	ensureUntilReady(t, c.lb, svc, nodes)
	g := sgOf(t, f, "lb-sg-kube_service_"+cluster+"_default_web")
	for i, want := range [][]string{{g.ID}, nil, {g.ID}} {
		if got := f.PortSecurityGroups(portOf[i]); !slices.Equal(got, want) {
			t.Errorf("node-%c port groups = %v, want %v", 'a'+i, got, want)
		}
	}
	if n := f.Calls()["neutron.UpdatePort"]; n != 2 {
		t.Errorf("port updates = %d, want 2 (none to the port without port security): %s", n, f.CallSummary())
	}
	writes := f.Writes()
	if err := c.lb.UpdateLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("an unchanged sync made %d writes: %s", w, f.CallSummary())
	}
}
