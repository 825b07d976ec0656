package vsphere

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

func newTestCloud(t *testing.T, s *sim.Sim) *Cloud {
	t.Helper()
	c, err := New(strings.NewReader(testConfig(s, "")))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// rawCall is one SOAP call (RetrieveServiceContent) through govmomi without the provider.
func rawCall(ctx context.Context, s *sim.Sim) error {
	_, err := vim25.NewClient(ctx, soap.NewClient(s.Server.URL, true))
	return err
}

// The fault harness drives vsphere-sim over simcontrol's HTTP protocol; this drives the sim
// the same way, with the provider (real govmomi) on the other side.
func TestSimControl(t *testing.T) {
	ctx := context.Background()
	if sim.LBCategory != lbCategory {
		t.Fatalf("the sim reads load balancer records from %q, the provider writes them to %q", sim.LBCategory, lbCategory)
	}
	s := startSim(t)
	if _, err := s.AddVM(ctx, "node-a", 0, 0, []sim.NIC{{Network: "VM Network", IPs: []string{"10.0.0.5"}}}); err != nil {
		t.Fatal(err)
	}
	url, stop, err := simcontrol.Serve(s, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	sc := simcontrol.Client{URL: url}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}

	// Resources: the record the provider wrote for a Service, with the Service's key.
	lb, _ := newTestCloud(t, s).LoadBalancer()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, []*v1.Node{node}); err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	res, err := sc.Resources(ctx)
	want := []simcontrol.Resource{{Kind: "loadbalancer", Name: names.Name("kubernetes", "default", "web"), Service: "default/web"}}
	if err != nil || !slices.Equal(res, want) {
		t.Fatalf("resources = %+v, %v; want %+v", res, err, want)
	}

	// Outage: a new session cannot log in; the sim's own reads still work.
	if err := sc.SetOutage(ctx, true); err != nil {
		t.Fatal(err)
	}
	in, _ := newTestCloud(t, s).InstancesV2()
	if _, err := in.InstanceExists(ctx, node); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("during the outage: err = %v, want a 503", err)
	}
	if res, err := sc.Resources(ctx); err != nil || len(res) != 1 {
		t.Errorf("resources during the outage = %+v, %v", res, err)
	}
	if err := sc.SetOutage(ctx, false); err != nil {
		t.Fatal(err)
	}

	// Throttling: a bucket of one token, refilled slowly, refuses the second call with a 503.
	if err := sc.SetThrottle(ctx, 1, 0.01); err != nil {
		t.Fatal(err)
	}
	if err := rawCall(ctx, s); err != nil {
		t.Errorf("first call with a token left: %v", err)
	}
	if err := rawCall(ctx, s); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("second call with an empty bucket: %v, want a 503", err)
	}
	if err := sc.SetThrottle(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}

	// Terminate: the VM is gone; an unknown node is an error.
	if err := sc.Terminate(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	in, _ = newTestCloud(t, s).InstancesV2()
	if ok, err := in.InstanceExists(ctx, node); err != nil || ok {
		t.Errorf("after Terminate: exists=%v err=%v, want false", ok, err)
	}
	if err := sc.Terminate(ctx, "node-z"); err == nil || !strings.Contains(err.Error(), "no VM named node-z") {
		t.Errorf("Terminate of an unknown node: %v", err)
	}

	calls, err := sc.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Failed == 0 || calls.Throttled != 1 || calls.Writes == 0 || calls.PerOp["RetrieveServiceContent"] < 3 || calls.PerOp["Login"] == 0 {
		t.Errorf("calls = %+v", calls)
	}
	if sec, err := sc.Secrets(ctx); err != nil || !slices.Equal(sec, []string{testPassword}) {
		t.Errorf("secrets = %d values, %v; want the password", len(sec), err)
	}
}
