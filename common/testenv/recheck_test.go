package testenv

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLBSyncWarnings(t *testing.T) {
	ev := func(name, obj, typ, reason, msg string, count int32) *v1.Event {
		return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, InvolvedObject: v1.ObjectReference{Name: obj},
			Type: typ, Reason: reason, Message: msg, Count: count}
	}
	e := &Env{Client: fake.NewClientset(
		ev("1", "thr-1", v1.EventTypeWarning, "SyncLoadBalancerFailed", "boom", 2),
		ev("2", "thr-2", v1.EventTypeWarning, "UpdateLoadBalancerFailed", "load balancer is provisioning; checking again in 1s", 3),
		ev("3", "thr-3", v1.EventTypeWarning, "SyncLoadBalancerFailed", "PENDING_CREATE", 0), // no count: one
		ev("4", "other", v1.EventTypeWarning, "SyncLoadBalancerFailed", "boom", 1),           // another prefix
		ev("5", "thr-4", v1.EventTypeNormal, "EnsuredLoadBalancer", "ok", 1),
	)}
	failed, rechecks, examples, err := e.LBSyncWarnings(context.Background(), "ns", "thr-")
	if err != nil || failed != 2 || rechecks != 4 || len(examples) != 1 || examples[0] != "thr-1: boom" {
		t.Errorf("LBSyncWarnings = %d failed, %d re-checks, %v, %v; want 2, 4, [thr-1: boom], nil", failed, rechecks, examples, err)
	}
}
