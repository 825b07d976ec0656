package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/cloud-provider/api"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// gcCloud is a cloud whose listing is lbs; deletes are recorded (and fail for failIDs).
type gcCloud struct {
	fakecloud.Cloud
	lbs     []servicecontroller.OwnedLoadBalancer
	listErr error
	failIDs map[string]bool
	busyIDs map[string]bool // the delete is accepted and finished later (api.RetryError)
	deleted []string
}

func (g *gcCloud) OwnedLoadBalancers(context.Context, string) ([]servicecontroller.OwnedLoadBalancer, error) {
	return g.lbs, g.listErr
}

func (g *gcCloud) DeleteOwnedLoadBalancer(_ context.Context, _ string, lb servicecontroller.OwnedLoadBalancer) error {
	if g.failIDs[lb.ID] {
		return errors.New("throttled")
	}
	g.deleted = append(g.deleted, lb.ID)
	if g.busyIDs[lb.ID] {
		return api.NewRetryError("load balancer "+lb.ID+" is being deleted", time.Second)
	}
	return nil
}

func gcLB(id, ns, name, uid string) servicecontroller.OwnedLoadBalancer {
	return servicecontroller.OwnedLoadBalancer{ID: id, Owner: ownership.Identity{Cluster: "c1", Namespace: ns, Name: name, UID: uid}}
}

func gcService(name, uid string, typ v1.ServiceType) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}, Spec: v1.ServiceSpec{Type: typ}}
}

func TestGC(t *testing.T) {
	client := fake.NewClientset(gcService("live", "u-live", v1.ServiceTypeLoadBalancer), gcService("now-clusterip", "u-cip", v1.ServiceTypeClusterIP))
	lbs := []servicecontroller.OwnedLoadBalancer{
		gcLB("lb-live", "ns", "live", "u-live"),
		gcLB("lb-replaced", "ns", "live", "u-earlier"),
		gcLB("lb-gone", "ns", "gone", "u-gone"),
		gcLB("lb-cip", "ns", "now-clusterip", "u-cip"),
		gcLB("lb-legacy", "ns", "live", ""),
	}
	ctx := context.Background()

	cloud := &gcCloud{lbs: lbs}
	var out bytes.Buffer
	if err := gc(ctx, &out, cloud, client, "c1", servicecontroller.DefaultClasses(), true); err != nil {
		t.Fatal(err)
	}
	if len(cloud.deleted) != 0 {
		t.Errorf("--dry-run deleted %v", cloud.deleted)
	}
	for _, want := range []string{
		"lb-cip", "orphan: would be deleted", "lb-live ", "kept (its Service wants it)",
		"5 load balancers of cluster c1, 3 orphaned; dry run: nothing deleted",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "lb-live ") || strings.HasPrefix(line, "lb-legacy ") {
			if strings.Contains(line, "orphan") {
				t.Errorf("a load balancer its Service wants is called an orphan: %q", line)
			}
		}
	}

	out.Reset()
	if err := gc(ctx, &out, cloud, client, "c1", servicecontroller.DefaultClasses(), false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cloud.deleted, ","); got != "lb-cip,lb-gone,lb-replaced" {
		t.Errorf("deleted %s, want only the orphans", got)
	}
	if !strings.Contains(out.String(), "3 orphaned, 3 deleted") {
		t.Errorf("output:\n%s", out.String())
	}

	// A failed listing deletes nothing; a failed delete is an error naming it.
	failing := &gcCloud{lbs: lbs, listErr: errors.New("denied")}
	if err := gc(ctx, &out, failing, client, "c1", servicecontroller.DefaultClasses(), false); err == nil || len(failing.deleted) != 0 {
		t.Errorf("a failed listing: %v, deleted %v", err, failing.deleted)
	}
	partly := &gcCloud{lbs: lbs, failIDs: map[string]bool{"lb-gone": true}}
	if err := gc(ctx, &out, partly, client, "c1", servicecontroller.DefaultClasses(), false); err == nil || !strings.Contains(err.Error(), "lb-gone") {
		t.Errorf("a failed delete: %v", err)
	}
	// A delete the cloud accepted and finishes later is a delete, not a failure.
	out.Reset()
	busy := &gcCloud{lbs: lbs, busyIDs: map[string]bool{"lb-gone": true}}
	if err := gc(ctx, &out, busy, client, "c1", servicecontroller.DefaultClasses(), false); err != nil {
		t.Errorf("a delete under way is not a failure: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "3 orphaned, 3 deleted (1 still being deleted by the cloud)") {
		t.Errorf("output:\n%s", out.String())
	}
	// A provider without a listing says so.
	if err := gc(ctx, &out, &fakecloud.Cloud{}, client, "c1", servicecontroller.DefaultClasses(), true); err == nil {
		t.Error("a provider without OwnedLister must be an error")
	}
}
