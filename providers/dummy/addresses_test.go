package dummy

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/poollb/pooltest"
)

func lbOf(t *testing.T, cfg string) *loadBalancers {
	t.Helper()
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c.lb
}

func svcWith(name string, ann map[string]string, ports ...int32) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Port: p, Protocol: v1.ProtocolTCP})
	}
	return s
}

func ips(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func TestExtraLabels(t *testing.T) {
	c, err := New(strings.NewReader("[Instance \"n\"]\nlabel = rack=r1\nlabel = example.com/tier=gold\n"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := instances{c}.InstanceMetadata(context.Background(), nodeNamed("n"))
	if err != nil || md.AdditionalLabels["rack"] != "r1" || md.AdditionalLabels["example.com/tier"] != "gold" {
		t.Fatalf("labels %v %v", md.AdditionalLabels, err)
	}
	if _, err := New(strings.NewReader("[Instance \"n\"]\nlabel = bad key=x\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad label: %v", err)
	}
}

func FuzzInventory(f *testing.F) {
	f.Add("[Instance \"a\"]\ninternal-ip = 10.0.0.1\nstate = running\nlabel = a=b\n")
	f.Add("[Instance \"b\"]\nexternal-ip = ::1\nzone = z\n")
	f.Add("[Instance]\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := New(strings.NewReader(src))
		if err != nil {
			return
		}
		// Whatever loads must answer look-ups without panicking.
		for name := range c.cfg.Instance {
			if _, err := (instances{c}).InstanceMetadata(context.Background(), nodeNamed(name)); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
		}
	})
}

// failingStore refuses every write.
type failingStore struct{ *MemStore }

func (failingStore) Put(context.Context, string, Record) error { return errors.New("store down") }

// A failed write keeps the addresses a Service already held (here adopted from its status
// after a restart) and gives back the new ones.
func TestFailedWriteKeepsHeldAddresses(t *testing.T) {
	c, err := New(strings.NewReader("[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.12\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.UseStore(failingStore{NewMemStore()})
	lb := c.lb
	ctx := context.Background()
	if err := lb.load(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	held := netip.MustParseAddr("192.0.2.11")
	lb.owner.Claim(held, "dummy_c_ns_a") // as load does for an address in a Service's status
	a := svcWith("a", map[string]string{AnnotationLoadBalancerIPs: "192.0.2.12"}, 80)
	if _, err := lb.EnsureLoadBalancer(ctx, "c", a, nil); err == nil {
		t.Fatal("write to a failing store succeeded")
	}
	if got := lb.owner[held]; len(got) != 1 || got[0] != "dummy_c_ns_a" {
		t.Errorf("held address after a failed write: %v", got)
	}
	if got := lb.owner[netip.MustParseAddr("192.0.2.12")]; len(got) != 0 {
		t.Errorf("new address still claimed after a failed write: %v", got)
	}
	if _, ok := lb.records.get("dummy_c_ns_a"); ok {
		t.Error("record kept after a failed write")
	}
}

// The pool load balancer's behaviour (common/poollb/pooltest), as every pool provider runs it.
func TestPoolBehaviour(t *testing.T) {
	pooltest.Run(t, pooltest.Harness{Names: poolNames, New: func(t *testing.T, pools string, events *cloudtest.EventSink) pooltest.Cloud {
		c, err := New(strings.NewReader(pools))
		if err != nil {
			t.Fatal(err)
		}
		c.UseClusterName(pooltest.Cluster)
		c.UseStore(NewMemStore())
		c.Initialize(events, nil)
		return pooltest.Cloud{LB: c.lb, Reload: func(pools string) (bool, error) { return c.Reload([]byte(pools)) }}
	}})
}
