package dummy

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ownership"
)

const testConfig = `
[Global]
region = r1

[Instance "n1"]
internal-ip = 10.0.0.1
zone = z1

[Instance "n2"]
internal-ip = 10.0.0.2
state = shutdown

[Instance "n3"]
state = gone

[Pool "shared"]
cidr = 192.0.2.0/29

[Pool "team"]
range = 198.51.100.1-198.51.100.2
namespace = team
`

func newTestCloud(t *testing.T) *Cloud {
	t.Helper()
	c, err := New(strings.NewReader(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	c.UseStore(NewMemStore())
	return c
}

// storeWrites is how many writes the cloud's MemStore has served.
func storeWrites(c *Cloud) int { return c.store.(*MemStore).Writes() }

func nodeNamed(name string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func TestInstances(t *testing.T) {
	c := newTestCloud(t)
	ctx := context.Background()
	inst, _ := c.InstancesV2()
	for _, tc := range []struct {
		node             string
		exists, shutdown bool
	}{{"n1", true, false}, {"n2", true, true}, {"n3", false, false}, {"unknown", false, false}} {
		ok, err := inst.InstanceExists(ctx, nodeNamed(tc.node))
		if err != nil || ok != tc.exists {
			t.Errorf("%s exists = %v, %v", tc.node, ok, err)
		}
		down, err := inst.InstanceShutdown(ctx, nodeNamed(tc.node))
		if tc.exists && (err != nil || down != tc.shutdown) {
			t.Errorf("%s shutdown = %v, %v", tc.node, down, err)
		}
		if !tc.exists && err != cloudprovider.InstanceNotFound { // compared with == by the controllers
			t.Errorf("%s shutdown error = %v, want InstanceNotFound unwrapped", tc.node, err)
		}
	}
	md, err := inst.InstanceMetadata(ctx, nodeNamed("n1"))
	if err != nil || md.ProviderID != "dummy:///n1" || md.Zone != "z1" || md.Region != "r1" || md.InstanceType != "dummy.standard" {
		t.Fatalf("metadata %+v %v", md, err)
	}
	// Found again by providerID, whatever the Node is called.
	n := nodeNamed("renamed")
	n.Spec.ProviderID = md.ProviderID
	if ok, _ := inst.InstanceExists(ctx, n); !ok {
		t.Error("not found by providerID")
	}
}

func svc(ns, name, ip string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerIP: ip,
			Ports: []v1.ServicePort{{Port: 80, Protocol: v1.ProtocolTCP}}},
	}
}

func TestLoadBalancerAllocation(t *testing.T) {
	c := newTestCloud(t)
	ctx := context.Background()
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no load balancer")
	}
	nodes := []*v1.Node{nodeNamed("n1")}
	seen := map[string]string{}
	for i := range 6 { // a /29 without network and broadcast holds 6
		s := svc("default", "s"+string(rune('a'+i)), "")
		st, err := lb.EnsureLoadBalancer(ctx, "c", s, nodes)
		if err != nil {
			t.Fatal(err)
		}
		ip := st.Ingress[0].IP
		if prev, dup := seen[ip]; dup {
			t.Fatalf("%s handed to %s and %s", ip, prev, s.Name)
		}
		seen[ip] = s.Name
	}
	_, err := lb.EnsureLoadBalancer(ctx, "c", svc("default", "full", ""), nodes)
	var ex *PoolExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("want PoolExhaustedError, got %v", err)
	}
	// The team namespace uses its own pool.
	st, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "x", ""), nodes)
	if err != nil || st.Ingress[0].IP != "198.51.100.1" {
		t.Fatalf("team pool: %v %v", st, err)
	}
	// A requested address: outside every pool, taken, and free.
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "y", "203.0.113.1"), nodes); err == nil || !strings.Contains(err.Error(), "not in a pool") {
		t.Errorf("outside pool: %v", err)
	}
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "y", "198.51.100.1"), nodes); err == nil || !strings.Contains(err.Error(), "already in use by Service team/x") {
		t.Errorf("taken: %v", err)
	}
	if st, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "y", "198.51.100.2"), nodes); err != nil || st.Ingress[0].IP != "198.51.100.2" {
		t.Errorf("free requested: %v %v", st, err)
	}
	// Ensure twice with the same input writes once; Update with new nodes writes; Delete frees.
	before := storeWrites(c)
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "x", ""), nodes); err != nil || storeWrites(c) != before {
		t.Errorf("unchanged Ensure wrote (%d -> %d, %v)", before, storeWrites(c), err)
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", svc("team", "x", ""), []*v1.Node{nodeNamed("n1"), nodeNamed("n2")}); err != nil || storeWrites(c) != before+1 {
		t.Errorf("Update: %v, writes %d", err, storeWrites(c)-before)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svc("team", "x", "")); err != nil {
		t.Fatal(err)
	}
	if _, exists, _ := lb.GetLoadBalancer(ctx, "c", svc("team", "x", "")); exists {
		t.Error("exists after delete")
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svc("team", "never", "")); err != nil {
		t.Errorf("deleting a missing LB: %v", err)
	}
	if st, err := lb.EnsureLoadBalancer(ctx, "c", svc("team", "z", ""), nodes); err != nil || st.Ingress[0].IP != "198.51.100.1" {
		t.Errorf("released address not reused: %v %v", st, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"[Pool \"p\"]\ncidr = 10.0.0.0/40\n", `line 2: [Pool "p"] cidr:`},
		{"[Pool \"p\"]\nnamespace = a\n", `[Pool "p"] cidr: a pool needs at least one cidr or range`},
		{"[Instance \"n\"]\ninternal-ip = 10.0.0.300\n", `line 2: [Instance "n"] internal-ip: "10.0.0.300" is not an IP address`},
		{"[Instance \"n\"]\nstate = dead\n", `line 2: [Instance "n"] state: must be running, shutdown, gone or error`},
		{"[Global]\ninventory = /does/not/exist\n", `line 2: [Global] inventory: cannot read inventory file`},
		{"[Global]\nregoin = x\n", `line 2: [Global] regoin: unknown key`},
	} {
		_, err := New(strings.NewReader(tc.src))
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: error %v, want it to contain %q", tc.src, err, tc.want)
		}
	}
}

// The cluster ID is the checked --cluster-name ccm hands over; it is not there by default.
func TestHasClusterIDOnlyWithAClusterName(t *testing.T) {
	c := newTestCloud(t)
	if c.HasClusterID() {
		t.Error("HasClusterID() before UseClusterName = true; the dummy scopes its records by cluster name")
	}
	var scoped ownership.ClusterNameScoped = c
	scoped.UseClusterName("prod")
	if !c.HasClusterID() || c.ClusterName() != "prod" {
		t.Errorf("after UseClusterName(prod): HasClusterID %v, ClusterName %q", c.HasClusterID(), c.ClusterName())
	}
}
