package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// routerID is the router of [Route] router-id; operatorRoute is on it before ccm starts, in
// the cluster CIDR through an address no Node has.
var (
	routerID      string
	operatorRoute = fake.RouterRoute{Destination: "10.244.250.0/24", NextHop: "10.0.255.250"}
)

// With [Route] router-id, --configure-cloud-routes and --cluster-cidr, the library's route
// controller routes a Node's Pod CIDR through its address, allowed on its port; the route and
// the pair go when the Node goes, and the operator's route stays throughout.
func TestRoutes(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(ccm.Log(), "\n") {
				if strings.Contains(l, "oute") && !strings.Contains(l, "request.go") && len(l) < 2000 {
					t.Log(l)
				}
			}
		}
	})
	id := machine(t, "os-route-a", "10.0.1.61", "")
	n := waitInitialised(t, "os-route-a")
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.61.0/24", []string{"10.244.61.0/24"}
	if _, err := env.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fake.RouterRoute{Destination: "10.244.61.0/24", NextHop: "10.0.1.61"}
	port := cloud.ServerPortID(id)
	eventually(t, 60*time.Second, "the Node's route and its port's address pair", func() (bool, error) {
		pairs := cloud.PortAddressPairs(port)
		return slices.Contains(cloud.RouterRoutes(routerID), want) && len(pairs) == 1 && pairs[0].IPAddress == "10.244.61.0/24", nil
	})
	if err := env.Client.CoreV1().Nodes().Delete(context.Background(), "os-route-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the deleted Node's route and address pair removed", func() (bool, error) {
		return !slices.Contains(cloud.RouterRoutes(routerID), want) && len(cloud.PortAddressPairs(port)) == 0, nil
	})
	if got := cloud.RouterRoutes(routerID); !slices.Equal(got, []fake.RouterRoute{operatorRoute}) {
		t.Errorf("the router holds %v; want only the operator's route", got)
	}
	if tags := cloud.RouterTags(routerID); len(tags) != 0 {
		t.Errorf("records left on the router: %v", tags)
	}
}
