package openstack

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestSameRegion(t *testing.T) {
	n := func(pid string, labels map[string]string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: v1.NodeSpec{ProviderID: pid}}
	}
	for _, tc := range []struct {
		name   string
		node   *v1.Node
		region string
		err    bool
	}{
		{"no region in providerID", n("openstack:///id", nil), "RegionOne", false},
		{"providerID in region", n("openstack://RegionOne/id", nil), "RegionOne", false},
		{"providerID elsewhere", n("openstack://RegionTwo/id", nil), "RegionOne", true},
		{"region label elsewhere", n("openstack:///id", map[string]string{v1.LabelTopologyRegion: "RegionTwo"}), "RegionOne", true},
		{"beta label elsewhere, no providerID", n("", map[string]string{v1.LabelFailureDomainBetaRegion: "RegionTwo"}), "RegionOne", true},
		{"labels in region", n("", map[string]string{v1.LabelTopologyRegion: "RegionOne"}), "RegionOne", false},
		{"no configured region", n("openstack://RegionTwo/id", nil), "", false},
	} {
		if err := sameRegion(tc.node, tc.region); (err != nil) != tc.err {
			t.Errorf("%s: sameRegion = %v, want error %v", tc.name, err, tc.err)
		}
	}
}

// A Node of another region is not looked up in this one (Nova would answer 404, "gone"):
// InstanceExists is an error, and Nova is not asked.
func TestOtherRegionIsNotGone(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "n1", IPs: []string{"10.0.0.5"}})
	inst, _ := newTestCloud(t, f, "").InstancesV2()
	ctx := context.Background()
	if ok, err := inst.InstanceExists(ctx, node("n1", "openstack://"+f.Region()+"/"+id)); err != nil || !ok {
		t.Fatalf("own region: exists = %v, %v", ok, err)
	}
	f.DeleteServer(id)
	other := node("n1", "openstack://RegionElsewhere/"+id)
	if ok, err := inst.InstanceExists(ctx, other); err == nil {
		t.Errorf("providerID of another region: exists = (%v, nil), want an error", ok)
	}
	labelled := node("n1", "openstack:///"+id)
	labelled.Labels = map[string]string{v1.LabelTopologyRegion: "RegionElsewhere"}
	if ok, err := inst.InstanceExists(ctx, labelled); err == nil {
		t.Errorf("region label of another region: exists = (%v, nil), want an error", ok)
	}
	if ok, err := inst.InstanceExists(ctx, node("n1", "openstack:///"+id)); err != nil || ok {
		t.Errorf("deleted server in this region: exists = %v, %v; want false, nil", ok, err)
	}
}
