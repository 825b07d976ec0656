package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
)

// fakeCloud holds fixed resources.
type fakeCloud struct{ res []simcontrol.Resource }

func (f *fakeCloud) CloudConfig() string                                     { return "" }
func (f *fakeCloud) SetOutage(context.Context, bool) error                   { return nil }
func (f *fakeCloud) SetThrottle(context.Context, int, float64) (bool, error) { return false, nil }
func (f *fakeCloud) Terminate(context.Context, string) error                 { return nil }
func (f *fakeCloud) Resources(context.Context) ([]simcontrol.Resource, error) {
	return f.res, nil
}
func (f *fakeCloud) Calls(context.Context) (simcontrol.Calls, error) { return simcontrol.Calls{}, nil }
func (f *fakeCloud) Secrets(context.Context) ([]string, error)       { return nil, nil }

func TestLeakReport(t *testing.T) {
	dir := t.TempDir()
	ccm := func(name, log string) *testenv.CCM {
		p := filepath.Join(dir, name+".log")
		if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
		return &testenv.CCM{Process: &testenv.Process{Name: name, LogPath: p}}
	}
	lbSvc := func(name string, ip string) *v1.Service {
		s := testenv.LoadBalancerService("churn", name, 80)
		if ip != "" {
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
		}
		return s
	}
	warn := &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "churn", Name: "c-18.1"}, Type: v1.EventTypeWarning, Count: 2,
		InvolvedObject: v1.ObjectReference{Kind: "Service", Namespace: "churn", Name: "c-18"}, Reason: "SyncLoadBalancerFailed",
		Message: "Error syncing load balancer: failed to delete load balancer: security group sg-0abc is still in use; retrying"}
	h := &harness{
		ctx:      context.Background(),
		env:      &testenv.Env{Client: fake.NewClientset(lbSvc("c-2", "10.0.0.2"), warn)},
		provider: "aws",
		cloud: &fakeCloud{res: []simcontrol.Resource{
			{Kind: "loadbalancer", Name: "lb-c-2", Service: "churn/c-2"},
			{Kind: "security-group", Name: "sg-0abc", Service: "churn/c-18"},
			{Kind: "target-group", Name: "tg-orphan"},
		}},
	}
	h.all = []*testenv.CCM{
		ccm("ccm-aws-0", "I1 other scenario churn/c-18 must not be read\n"),
		ccm("ccm-aws-1", "I1 controller.go] Ensuring load balancer for service churn/c-18\nI2 \"Deleting ELB\" service=\"churn/c-18\"\n"),
		ccm("ccm-aws-2", "I1 controller.go] Ensuring load balancer for service churn/c-2\n"),
	}
	j := &journal{start: time.Now(), firstCCM: 1}
	j.opDone(0, churnOp{Kind: opCreate, Service: "c-18"})
	j.opDone(1, churnOp{Kind: opCreate, Service: "c-2"})
	j.opDone(2, churnOp{Kind: opDelete, Service: "c-18"})
	j.killed(0, churnKill{AfterOp: 2}, "ccm-aws-1")

	problems, leaks, err := h.converged("churn", []string{"c-2"})
	if err != nil || len(leaks) != 2 || len(problems) != 2 {
		t.Fatalf("converged = %v, %v, %v; want the security group and the target group leaked", problems, leaks, err)
	}
	got := h.leakReport("churn", []string{"c-2"}, problems, j)
	for _, want := range []string{
		"2 problem(s) (times are since the churn's start at ",
		"leaked: security-group sg-0abc, owner by the cloud's ownership tags/description: churn/c-18",
		"leaked: target-group tg-orphan, owner by the cloud's ownership tags/description: (none",
		"churn/c-18:\n    operations: create (op 0 at ", ", delete (op 2 at ",
		"SIGKILL #1 of ccm-aws-1 at ",
		`ccm-aws-1, SIGKILLed (#1 at `, "its last lines about it:\n      I1 controller.go] Ensuring load balancer for service churn/c-18\n      I2 \"Deleting ELB\" service=\"churn/c-18\"\n",
		"(planned after op 2; its log names the Service)",
		"Warning SyncLoadBalancerFailed ×2 (re-check): Error syncing load balancer: failed to delete load balancer: security group sg-0abc is still in use; retrying",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the leak report lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"must not be read", "churn/c-2:"} {
		if strings.Contains(got, not) {
			t.Errorf("the leak report holds %q (another scenario's ccm, or a Service without a problem):\n%s", not, got)
		}
	}
}
