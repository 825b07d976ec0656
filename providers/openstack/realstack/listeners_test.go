package realstack_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/lbname"
)

const cluster = "realstack"

func service(name string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
			Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
}

// ensure calls EnsureLoadBalancer as the service controller would, honouring RetryErrors, for
// up to limit; the last error is returned.
func ensure(lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node, limit time.Duration) (*v1.LoadBalancerStatus, error) {
	deadline := time.Now().Add(limit)
	for {
		st, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nodes)
		var retry *api.RetryError
		if err == nil || !errors.As(err, &retry) || time.Now().After(deadline) {
			return st, err
		}
		time.Sleep(min(retry.RetryAfter(), 2*time.Second))
	}
}

// listenersOf are the listeners of the Service's load balancer, by port.
func listenersOf(t *testing.T, svc *v1.Service) map[int]listeners.Listener {
	lb := lbNamed(t, lbname.Octavia.Name(cluster, svc.Namespace, svc.Name))
	if lb == nil {
		t.Fatalf("no load balancer for %s", svc.Name)
	}
	out := map[int]listeners.Listener{}
	for _, l := range must(listeners.ExtractListeners(must(listeners.List(rs.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)))) {
		out[l.ProtocolPort] = l
	}
	return out
}

// Every kind of update through real Octavia: each succeeds, keeps the listener (updated in
// place, counted at the recorder), and the next sync writes nothing. Against Octavia 11 the
// listener POST with an inline pool ccm sent before was answered 500, and removing the source
// ranges left the load balancer without listeners.
func TestUpdatesThroughRealOctavia(t *testing.T) {
	cleanProject(t)
	t.Cleanup(func() { cleanProject(t) })
	h := newHarness(t, "create-monitor = true\n")
	lb := loadBalancerOf(t, h.NewCloudFor(h.t, cluster))
	nodes := []*v1.Node{}
	for _, n := range []string{"rs-upd-a", "rs-upd-b"} {
		node, _ := h.AddInstance(t, n)
		nodes = append(nodes, node)
	}
	svc := service("updates")
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	st, err := ensure(lb, svc, nodes, 3*time.Minute)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	svc.Status.LoadBalancer = *st
	id80 := listenersOf(t, svc)[80].ID
	for _, tc := range []struct {
		name   string
		change func()
		check  func(map[int]listeners.Listener) string
	}{
		{"source ranges removed", func() { svc.Spec.LoadBalancerSourceRanges = nil }, func(ls map[int]listeners.Listener) string {
			if len(ls[80].AllowedCIDRs) != 0 && !slices.Equal(ls[80].AllowedCIDRs, []string{"0.0.0.0/0"}) {
				return "allowed_cidrs " + strings.Join(ls[80].AllowedCIDRs, ",")
			}
			return ""
		}},
		{"source ranges set", func() { svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24", "203.0.113.0/24"} }, func(ls map[int]listeners.Listener) string {
			if !slices.Equal(sorted(ls[80].AllowedCIDRs), []string{"198.51.100.0/24", "203.0.113.0/24"}) {
				return "allowed_cidrs " + strings.Join(ls[80].AllowedCIDRs, ",")
			}
			return ""
		}},
		{"nodePort changed", func() { svc.Spec.Ports[0].NodePort = 31080 }, nil},
		{"lb-method changed", func() {
			svc.Annotations = map[string]string{"loadbalancer.openstack.org/lb-method": "LEAST_CONNECTIONS"}
		}, nil},
		{"port added", func() {
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
		}, func(ls map[int]listeners.Listener) string {
			if ls[443].ID == "" || ls[443].DefaultPoolID == "" {
				return "no listener with a pool on 443"
			}
			return ""
		}},
		{"port removed", func() { svc.Spec.Ports = svc.Spec.Ports[:1] }, func(ls map[int]listeners.Listener) string {
			if _, ok := ls[443]; ok {
				return "listener 443 still there"
			}
			return ""
		}},
	} {
		tc.change()
		before := h.rec.Writes()
		if _, err := ensure(lb, svc, nodes, 2*time.Minute); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		w := h.rec.Writes() - before
		ls := listenersOf(t, svc)
		if ls[80].ID != id80 {
			t.Errorf("%s: listener 80 replaced (%s -> %s), want it updated in place", tc.name, id80, ls[80].ID)
		}
		if tc.check != nil {
			if msg := tc.check(ls); msg != "" {
				t.Errorf("%s: %s", tc.name, msg)
			}
		}
		before = h.rec.Writes()
		if _, err := ensure(lb, svc, nodes, time.Minute); err != nil {
			t.Fatalf("%s, next sync: %v", tc.name, err)
		}
		if again := h.rec.Writes() - before; again != 0 {
			t.Errorf("%s: the next sync made %d writes, want 0", tc.name, again)
		}
		t.Logf("%s: %d writes", tc.name, w)
	}
	before := h.rec.Writes()
	restarted := loadBalancerOf(t, h.NewCloudFor(h.t, cluster))
	if _, err := ensure(restarted, svc, nodes, time.Minute); err != nil {
		t.Fatal(err)
	}
	if w := h.rec.Writes() - before; w != 0 {
		t.Errorf("the first sync after a restart made %d writes, want 0", w)
	}
	if err := restarted.EnsureLoadBalancerDeleted(ctx, cluster, svc); err != nil {
		for deadline := time.Now().Add(2 * time.Minute); err != nil && time.Now().Before(deadline); time.Sleep(time.Second) {
			err = restarted.EnsureLoadBalancerDeleted(ctx, cluster, svc)
		}
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if lb := lbNamed(t, lbname.Octavia.Name(cluster, svc.Namespace, svc.Name)); lb != nil {
		t.Errorf("load balancer %s still there after the delete", lb.ID)
	}
}

func loadBalancerOf(t *testing.T, c cloudprovider.Interface) cloudprovider.LoadBalancer {
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer")
	}
	return lb
}

// octaviaMode switches the running Octavia between its jobboard and Debian's default flow
// engine (build/realstack/realstack.sh restarts Octavia only).
func octaviaMode(t *testing.T, mode string) {
	out, err := exec.Command("bash", filepath.Join("..", "..", "..", "build", "realstack", "realstack.sh"), "octavia-mode", mode).CombinedOutput()
	if err != nil {
		t.Fatalf("octavia-mode %s: %v\n%s", mode, err, out)
	}
}

// Octavia 11 without its jobboard (Debian's default) provisions a fully populated create's
// load balancer but leaves its children PENDING_CREATE, refusing every write to them: ccm
// writes nothing to them, and says which objects are stuck in a Warning instead of retrying a
// 409 every pending-retry for ever.
func TestStuckChildrenOnOctaviaWithoutJobboard(t *testing.T) {
	cleanProject(t)
	octaviaMode(t, "plain")
	t.Cleanup(func() {
		cleanProject(t)
		octaviaMode(t, "jobboard")
	})
	h := newHarness(t, "")
	c := h.NewCloudFor(h.t, cluster)
	lb := loadBalancerOf(t, c)
	node, _ := h.AddInstance(t, "rs-stuck-a")
	svc := service("stuck")
	_, err := ensure(lb, svc, []*v1.Node{node}, 40*time.Second)
	if err == nil || !strings.Contains(err.Error(), "PENDING_CREATE") || !strings.Contains(err.Error(), "listener TCP/80") {
		t.Fatalf("Ensure = %v, want a RetryError naming the listener left PENDING_CREATE", err)
	}
	before := h.rec.Ops()
	svc.Spec.Ports[0].NodePort = 31080
	for range 3 {
		_, _ = lb.EnsureLoadBalancer(ctx, cluster, svc, []*v1.Node{node})
	}
	after := h.rec.Ops()
	for op, n := range after {
		if n != before[op] {
			t.Errorf("%d × %s to a load balancer whose children Octavia holds pending, want none", n-before[op], op)
		}
	}
	t.Logf("the provider's answer: %v", err)
}
