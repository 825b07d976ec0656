package dummy

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Node of another cloud (a providerID the inventory cannot hold) is an error, never gone;
// unknown and gone machines of this cloud are gone; a hand-set provider-id of a gone machine
// is gone.
func TestForeignProviderIDIsNotGone(t *testing.T) {
	c, err := New(strings.NewReader(testConfig + "\n[Instance \"custom\"]\nprovider-id = metal://rack1/7\nstate = gone\n"))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	ctx := context.Background()
	for _, tc := range []struct {
		name, providerID string
		exists, err      bool
	}{
		{"n1", "dummy:///n1", true, false},
		{"n1", "", true, false},
		{"unknown", "dummy:///unknown", false, false},
		{"unknown", "", false, false},
		{"n3", "dummy:///n3", false, false},
		{"custom", "metal://rack1/7", false, false},
		{"elsewhere", "aws:///us-east-1a/i-0123", false, true},
		{"x", "openstack:///5d0e", false, true},
	} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: v1.NodeSpec{ProviderID: tc.providerID}}
		exists, err := inst.InstanceExists(ctx, node)
		if exists != tc.exists || (err != nil) != tc.err {
			t.Errorf("%s %q: InstanceExists = (%v, %v), want (%v, error %v)", tc.name, tc.providerID, exists, err, tc.exists, tc.err)
		}
	}
}
