package integration

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// With --configure-cloud-routes and --cluster-cidr, a Node's podCIDR is routed to its instance
// in the cluster's route table, and the route goes when the Node goes.
func TestRoutes(t *testing.T) {
	name := "ip-10-0-6-61.ec2.internal"
	id := machine(name, "10.0.6.61", "us-east-1b")
	newNode(t, name, "")
	n := initialised(t, name)
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "100.64.61.0/24", []string{"100.64.61.0/24"}
	if _, err := env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fakeaws.Route{CIDR: "100.64.61.0/24", Instance: id}
	eventually(t, 60*time.Second, "route to the Node's instance", func() (bool, error) {
		tbl, _ := fake.RouteTable(fakeaws.MainRouteTable)
		return slices.Contains(tbl.Routes, want), nil
	})
	if fake.SourceDestCheck(id) {
		t.Error("source/destination check still on for a routed instance")
	}
	if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "stale route removed", func() (bool, error) {
		tbl, _ := fake.RouteTable(fakeaws.MainRouteTable)
		return !slices.Contains(tbl.Routes, want), nil
	})
	tbl, _ := fake.RouteTable(fakeaws.MainRouteTable)
	if !slices.Contains(tbl.Routes, fakeaws.Route{CIDR: "10.0.0.0/16", Gateway: "local"}) {
		t.Errorf("the local route was removed: %v", tbl.Routes)
	}
}
