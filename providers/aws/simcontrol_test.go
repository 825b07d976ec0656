package aws

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/simcontrol"
)

func oneAttempt(o *ec2.Options) { o.RetryMaxAttempts = 1 }

// The fault harness's view of the fake, over the control protocol: an outage fails the
// provider's SDK calls, the ELB and its group made for a Service are listed with
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
	// One attempt: the provider's retryer would retry the 503 for most of a minute.
	if _, err := c.api.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}, oneAttempt); !isCode(err, "Unavailable") {
		t.Fatalf("during the outage DescribeInstances: %v, want Unavailable", err)
	}
	calls, err := ctl.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Failed != 1 || calls.Total < calls.Failed || calls.Writes == 0 || calls.PerOp["ec2:DescribeInstances"] == 0 {
		t.Errorf("calls %+v: want the failed call and the ELB's writes counted", calls)
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
	c.inst.Invalidate(id)
	if ok, err := inst.InstanceExists(ctx, node); err != nil || ok {
		t.Errorf("after Terminate: exists %v, %v; want false", ok, err)
	}

	if err := ctl.SetThrottle(ctx, 1, 0.001); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first call takes the only token
		_, err = c.api.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}, oneAttempt)
	}
	if calls, _ := ctl.Calls(ctx); calls.Throttled != 1 || !isCode(err, "RequestLimitExceeded") {
		t.Errorf("calls %+v, %v: want one throttled answer under a 1-token bucket", calls, err)
	}
	if sec, _ := ctl.Secrets(ctx); !slices.Equal(sec, []string{testSecret}) {
		t.Errorf("secrets %v", sec)
	}
}
