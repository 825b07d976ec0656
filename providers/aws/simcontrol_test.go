package aws

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/simcontrol"
)

// The fault harness's view of the fake, over the control protocol: an outage fails calls the
// provider makes through the SDK, the ELB and its group made for a Service are listed with
// that Service, Terminate ends the instance behind a Node name, and the counters add up.
func TestSimControl(t *testing.T) {
	h := newHarness(t, "ctl")
	ctx := context.Background()
	url, stop, err := simcontrol.Serve(h.fake.Control(testSecret), "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctl := simcontrol.Client{URL: url}
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	inst, _ := c.InstancesV2()

	id, md := h.machine("ctl-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ctl-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, []*v1.Node{node}); err != nil {
		t.Fatal(err)
	}
	res, err := ctl.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range res {
		if r.Service != "ns/web" {
			t.Errorf("resource %+v: service %q, want ns/web", r, r.Service)
		}
		kinds = append(kinds, r.Kind)
	}
	if !slices.Equal(kinds, []string{"loadbalancer", "security-group"}) {
		t.Errorf("resources %+v, want the ELB and its security group", res)
	}

	if err := ctl.SetOutage(ctx, true); err != nil {
		t.Fatal(err)
	}
	c.inst.invalidate(id)
	if ok, err := inst.InstanceExists(ctx, node); err == nil {
		t.Fatalf("during the outage InstanceExists = %v with no error", ok)
	}
	calls, err := ctl.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Failed == 0 || calls.Total < calls.Failed || calls.Writes == 0 || calls.PerOp["ec2:DescribeInstances"] == 0 {
		t.Errorf("calls %+v: want failed calls and the ELB's writes counted", calls)
	}
	if err := ctl.SetOutage(ctx, false); err != nil {
		t.Fatal(err)
	}

	if err := ctl.Terminate(ctx, "ctl-a"); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Terminate(ctx, "no-such-node"); err == nil {
		t.Error("terminating an unknown node succeeded")
	}
	c.inst.invalidate(id)
	if ok, err := inst.InstanceExists(ctx, node); err != nil || ok {
		t.Errorf("after Terminate: exists %v, %v; want false", ok, err)
	}

	if err := ctl.SetThrottle(ctx, 1, 0.001); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first call takes the only token
		c.inst.invalidate(id)
		inst.InstanceExists(ctx, node) //nolint:errcheck // only the throttle count matters
	}
	if calls, _ := ctl.Calls(ctx); calls.Throttled == 0 {
		t.Errorf("calls %+v: want throttled answers under a 1-token bucket", calls)
	}
	if sec, _ := ctl.Secrets(ctx); !slices.Equal(sec, []string{testSecret}) {
		t.Errorf("secrets %v", sec)
	}
}
