package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	ensure = "Error syncing load balancer: failed to ensure load balancer: "
	del    = "Error syncing load balancer: failed to delete load balancer: "
	update = "Error updating load balancer with new hosts [n-1 n-2] [node names limited, total number of nodes: 2], error: "
)

func TestIsRecheck(t *testing.T) {
	for _, c := range []struct {
		provider, msg string
		want          bool
	}{
		// The providers' own re-check messages, as the library words them.
		{"aws", ensure + "NLB k8s-churn-c-18-1a2b3c is provisioning", true},
		{"aws", del + "security group sg-0a1b2c3d is still in use; retrying", true},
		{"aws", del + "target group k8s-tg-1a2b is still in use; retrying", true},
		{"aws", update + "NLB k8s-x is provisioning", true},
		{"openstack", ensure + "load balancer kube_service_c_churn_c-1 is PENDING_CREATE; checking again in 1s", true},
		{"openstack", ensure + "load balancer <id> is still PENDING_UPDATE; checking again in 500ms", true},
		{"openstack", del + "deleting load balancer lb-1: load balancer busy (409), retrying; checking again in 5s", true},
		{"openstack", del + "load balancer lb-1 is being deleted; checking again in 1s", true},
		{"openstack", ensure + "the load balancer named by annotation loadbalancer.openstack.org/load-balancer-id is PENDING_UPDATE; checking again in 1s", true},
		// Two families pending: each item's text, joined, then retried once more.
		{"openstack", ensure + "load balancer a is PENDING_CREATE; checking again in 1s; load balancer b is PENDING_UPDATE; checking again in 1s; checking again in 1s", true},

		// Real failures whose text merely mentions PENDING_ or "still in use".
		{"openstack", ensure + "quota exceeded while PENDING_UPDATE", false},
		{"openstack", ensure + "creating listener: Octavia 500: load balancer lb-1 is PENDING_UPDATE", false},
		{"openstack", ensure + "load balancer a is PENDING_CREATE; checking again in 1s; quota exceeded", false},
		{"openstack", ensure + "load balancer lb-1 was in ERROR and is being recreated; checking again in 1s", false},
		{"aws", del + "aws: DeleteSecurityGroup sg-1: api error DependencyViolation: resource sg-1 is still in use", false},
		{"aws", ensure + "quota exceeded while PENDING_UPDATE", false},
		{"aws", ensure + "aws: CreateLoadBalancer: NLB x is provisioning and then failed", false},
		{"aws", ensure + "security group sg-1 is still in use; retrying (but LimitExceeded)", false},
		// Another provider's re-check text is not this provider's.
		{"openstack", ensure + "NLB k8s-x is provisioning", false},
		{"aws", ensure + "load balancer a is PENDING_CREATE; checking again in 1s", false},
		{"vsphere", ensure + "load balancer a is PENDING_CREATE; checking again in 1s", false},
		{"dummy", del + "security group sg-1 is still in use; retrying", false},
		// Not the library's wording around it.
		{"aws", "NLB k8s-x is provisioning", false},
		{"aws", "something else: " + ensure + "NLB k8s-x is provisioning", false},
	} {
		if got := IsRecheck(c.provider, c.msg); got != c.want {
			t.Errorf("IsRecheck(%s, %q) = %v, want %v", c.provider, c.msg, got, c.want)
		}
	}
}

func TestClassifyLBWarnings(t *testing.T) {
	ev := func(obj, typ, reason, msg string, count int32) v1.Event {
		return v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, InvolvedObject: v1.ObjectReference{Kind: "Service", Name: obj},
			Type: typ, Reason: reason, Message: msg, Count: count}
	}
	w := ClassifyLBWarnings("openstack", []v1.Event{
		ev("t-1", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"quota exceeded while PENDING_UPDATE", 2),
		ev("t-2", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"load balancer x is PENDING_CREATE; checking again in 1s", 3),
		ev("t-3", v1.EventTypeWarning, "UpdateLoadBalancerFailed", update+"load balancer x is still PENDING_UPDATE; checking again in 1s", 0), // no count: one
		ev("t-4", v1.EventTypeWarning, "SyncLoadBalancerFailed", del+"security group sg-1 is still in use", 1),
		ev("t-5", v1.EventTypeNormal, "EnsuredLoadBalancer", "Ensured load balancer", 1),
		ev("t-6", v1.EventTypeWarning, "UnsupportedAnnotation", "PENDING_ nothing", 1), // not a sync failure
	})
	if w.Failed != 3 || w.Rechecks != 4 {
		t.Errorf("failed, re-checks = %d, %d; want 3, 4", w.Failed, w.Rechecks)
	}
	if len(w.Examples) != 2 || !strings.HasPrefix(w.Examples[0], "t-1: ") || !strings.HasPrefix(w.Examples[1], "t-4: ") {
		t.Errorf("examples = %q; want t-1's and t-4's failures", w.Examples)
	}
	if len(w.ByService["t-2"]) != 0 || len(w.ByService["t-1"]) != 1 {
		t.Errorf("failures by Service = %v; want t-1 and t-4 only", w.ByService)
	}
}

// TestRecheckMessagesInProviders keeps the table above honest: each re-check format the
// harness recognises must still be in the provider's code. When a provider rewords one, this
// fails (and the harness would otherwise count that provider's re-checks as failures).
func TestRecheckMessagesInProviders(t *testing.T) {
	for provider, formats := range map[string][]string{
		"aws": {`"NLB %s is provisioning"`, `"security group %s is still in use; retrying"`, `"target group %s is still in use; retrying"`},
		"openstack": {`"%s; checking again in %v"`, `"load balancer %s is %s"`, `"load balancer %s is still %s"`,
			`"%s: load balancer busy (409), retrying"`, `"the load balancer named by annotation %s is %s"`, `"load balancer %s is being deleted"`},
	} {
		files, err := filepath.Glob(filepath.Join("..", "..", "providers", provider, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources of %s found (%v)", provider, err)
		}
		var src strings.Builder
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		for _, f := range formats {
			if !strings.Contains(src.String(), f) {
				t.Errorf("%s no longer words a re-check as %s: update recheckMessages in common/testenv/recheck.go", provider, f)
			}
		}
	}
}

// LBSyncWarnings applies the same rule to the Services of one name prefix.
func TestLBSyncWarnings(t *testing.T) {
	ev := func(name, obj, typ, reason, msg string, count int32) *v1.Event {
		return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, InvolvedObject: v1.ObjectReference{Name: obj},
			Type: typ, Reason: reason, Message: msg, Count: count}
	}
	e := &Env{Client: fake.NewClientset(
		ev("1", "thr-1", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"boom", 2),
		ev("2", "thr-2", v1.EventTypeWarning, "UpdateLoadBalancerFailed", update+"NLB k8s-x is provisioning", 3),
		ev("3", "thr-3", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"NLB k8s-y is provisioning", 0), // no count: one
		ev("4", "thr-4", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"aws: x: resource is still in use", 1),
		ev("5", "other", v1.EventTypeWarning, "SyncLoadBalancerFailed", ensure+"boom", 1), // another prefix
		ev("6", "thr-5", v1.EventTypeNormal, "EnsuredLoadBalancer", "ok", 1),
	)}
	w, err := e.LBSyncWarnings(context.Background(), "aws", "ns", "thr-")
	if err != nil || w.Failed != 3 || w.Rechecks != 4 || len(w.Examples) != 2 || w.Examples[0] != "thr-1: "+ensure+"boom" {
		t.Errorf("LBSyncWarnings = %d failed, %d re-checks, %q, %v; want 3, 4, thr-1's and thr-4's failures, nil", w.Failed, w.Rechecks, w.Examples, err)
	}
}
