package openstack

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestOwnerLeft(t *testing.T) {
	owner := ownership.Identity{Cluster: cluster, Namespace: "default", Name: "api", UID: "uid-api"}
	name := "kube_service_" + cluster + "_default_api"
	guest := "kube_service_" + cluster + "_default_web"
	clusterTag := ownership.ClusterTagPrefix + cluster + "=" + ownership.Owned
	tagged := append(ownerTags(owner), guest)
	cases := []struct {
		name string
		tags []string
		keep bool
		want []string
	}{
		{"owner's tags go, the guest's name and the cluster tag stay", tagged, false, []string{clusterTag, guest}},
		{"keep-floatingip is recorded", tagged, true, []string{clusterTag, guest, tagKeepFIP}},
		{"upstream's: its own name goes, the cluster tag is added", []string{name, guest}, false, []string{guest, clusterTag}},
		{"a stale record without keep goes", append(slices.Clone(tagged), tagKeepFIP), false, []string{clusterTag, guest}},
		{"recorded once", append(slices.Clone(tagged), tagKeepFIP), true, []string{clusterTag, guest, tagKeepFIP}},
	}
	for _, c := range cases {
		if got := ownerLeft(owner, name, c.tags, c.keep); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The owner of a shared load balancer asked to keep its floating IP and left while another
// Service used the load balancer: when that last user leaves, the load balancer goes and the
// floating IP stays, unassociated.
func TestSharedKeepFloatingIPOutlivesTheOwner(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	api := lbService("api", map[string]string{annKeepFloatingIP: "true"})
	st := ensureUntilReady(t, c.lb, api, nodes)
	web := lbService("web", map[string]string{annLoadBalancerID: fakeLB(t, f, "api").ID}, v1.ServicePort{Name: "alt", Port: 8080, NodePort: 30081, Protocol: v1.ProtocolTCP})
	ensureUntilReady(t, c.lb, web, nodes)
	deleteUntilDone(t, c.lb, api)
	if fip := fipOf(t, f, st.Ingress[0].IP); fip.PortID == "" {
		t.Errorf("the owner's delete detached the floating IP the other Service is served at")
	}
	deleteUntilDone(t, c.lb, web)
	if n := len(f.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers after the last user's delete, want none", n)
	}
	if fip := fipOf(t, f, st.Ingress[0].IP); fip.PortID != "" {
		t.Errorf("the kept floating IP is still associated with port %s", fip.PortID)
	}
}
