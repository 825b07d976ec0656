package aws

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Nodes without a providerID, initialised concurrently as the node controller's workers do,
// share DescribeInstances calls (a private-dns-name filter with many values), and each still
// gets its own instance; a terminated instance that had the name is skipped, two live ones
// are an error.
func TestLookupByDNSNameIsBatched(t *testing.T) {
	h := newHarness(t, "dnsbatch")
	c := h.cloud(t, "")
	inst, _ := c.InstancesV2()
	const n = 60
	want := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("ip-10-0-0-%d.ec2.internal", i)
		_, md := h.machine(name)
		want[name] = md.ProviderID
	}
	old := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: "ip-10-0-0-0.ec2.internal"})
	h.fake.SetInstanceState(old, "terminated")
	h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: "twice"})
	h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1b", PrivateDNS: "twice"})

	before := h.fake.Operations()["ec2:DescribeInstances"]
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]string{}
	for name := range want {
		wg.Go(func() {
			md, err := inst.InstanceMetadata(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			got[name] = md.ProviderID
			mu.Unlock()
		})
	}
	wg.Wait()
	calls := h.fake.Operations()["ec2:DescribeInstances"] - before
	for name, id := range want {
		if got[name] != id {
			t.Errorf("%s: providerID %q, want %q", name, got[name], id)
		}
	}
	if calls > 3 {
		t.Errorf("%d Nodes looked up by DNS name with %d DescribeInstances calls; want them batched (1 to 3)", n, calls)
	}
	t.Logf("%d Nodes by DNS name: %d DescribeInstances", n, calls)

	if _, err := inst.InstanceMetadata(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "twice"}}); err == nil || !strings.Contains(err.Error(), "2 instances match") {
		t.Errorf("two live instances with the name: err %v", err)
	}
	if ok, err := inst.InstanceExists(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}}); ok || err != nil {
		t.Errorf("unknown name: exists %v, %v", ok, err)
	}
}
