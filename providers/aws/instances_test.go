package aws

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Concurrent look-ups of many instances share a few DescribeInstances calls, and a second
// round within the TTL is served from the cache.
func TestLookupsAreBatchedAndCached(t *testing.T) {
	h := newHarness(t, "batch")
	c := h.cloud(t, "")
	const n = 450 // more than two full batches
	ids := make([]string, n)
	for i := range ids {
		ids[i], _ = h.machine(fmt.Sprintf("batch-%d", i))
	}
	inst, _ := c.InstancesV2()
	for round := 0; round < 2; round++ {
		before := h.fake.Operations()["ec2:DescribeInstances"]
		var wg sync.WaitGroup
		errs := make(chan error, n+1)
		for i, id := range append(ids, "i-unknown") {
			wg.Add(1)
			go func() {
				defer wg.Done()
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}, Spec: v1.NodeSpec{ProviderID: "aws:////" + id}}
				ok, err := inst.InstanceExists(context.Background(), node)
				if err != nil || ok != (id != "i-unknown") {
					errs <- fmt.Errorf("%s: exists=%v err=%v", id, ok, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		calls := h.fake.Operations()["ec2:DescribeInstances"] - before
		if round == 0 && (calls < 1 || calls > 4) {
			t.Errorf("%d look-ups made %d DescribeInstances calls, want 3 (batches of 200)", n+1, calls)
		}
		if round == 1 && calls != 0 {
			t.Errorf("cached round made %d calls, want 0", calls)
		}
	}
}

func TestShutdownTerminatedAndEventualConsistency(t *testing.T) {
	h := newHarness(t, "states")
	c := h.cloud(t, "[Global]\nInstanceCacheTTL = 0s\n")
	inst, _ := c.InstancesV2()
	ctx := context.Background()
	id, md := h.machine("states-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "states-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}

	h.fake.SetInstanceState(id, "stopped")
	if down, err := inst.InstanceShutdown(ctx, node); err != nil || !down {
		t.Errorf("stopped: InstanceShutdown = %v, %v; want true", down, err)
	}
	h.fake.SetInstanceState(id, "terminated")
	if ok, err := inst.InstanceExists(ctx, node); err != nil || ok {
		t.Errorf("terminated: InstanceExists = %v, %v; want false", ok, err)
	}
	if _, err := inst.InstanceMetadata(ctx, node); err != cloudprovider.InstanceNotFound {
		t.Errorf("terminated: InstanceMetadata error %v, want InstanceNotFound", err)
	}

	// A new instance EC2 does not list yet is "not found" (the deletion guard confirms over
	// time), then found: never an error.
	h.fake.SetFaults(fakeaws.Faults{Visibility: 300 * time.Millisecond})
	_, md2 := h.machine("states-b")
	h.fake.SetFaults(fakeaws.Faults{})
	late := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "states-b"}, Spec: v1.NodeSpec{ProviderID: md2.ProviderID}}
	if ok, err := inst.InstanceExists(ctx, late); err != nil || ok {
		t.Errorf("not yet visible: InstanceExists = %v, %v; want false, nil", ok, err)
	}
	time.Sleep(350 * time.Millisecond)
	if ok, err := inst.InstanceExists(ctx, late); err != nil || !ok {
		t.Errorf("visible: InstanceExists = %v, %v; want true", ok, err)
	}
}

func TestFindByTagAndInternalIP(t *testing.T) {
	h := newHarness(t, "find")
	c := h.cloud(t, "[Global]\nNodeNameTag = k8s-node\n")
	inst, _ := c.InstancesV2()
	ctx := context.Background()
	id := h.fake.AddInstance(fakeaws.Instance{Type: "t3.small", Zone: "us-east-1a", PrivateDNS: "ip-1", Tags: map[string]string{"k8s-node": "worker-7"},
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{"10.5.0.7"}}}})
	id2 := h.fake.AddInstance(fakeaws.Instance{Type: "t3.small", Zone: "us-east-1b", PrivateDNS: "ip-2",
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{"10.5.0.8"}}}})
	for _, tc := range []struct {
		node *v1.Node
		want string
	}{
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-7"}}, "aws:///us-east-1a/" + id},
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-8"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.5.0.8"}}}}, "aws:///us-east-1b/" + id2},
	} {
		md, err := inst.InstanceMetadata(ctx, tc.node)
		if err != nil || md.ProviderID != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.node.Name, md, err, tc.want)
		}
	}
}

// Throttled calls are retried by the SDK and counted by the fake.
func TestThrottlingIsRetried(t *testing.T) {
	h := newHarness(t, "throttle")
	c := h.cloud(t, "[Global]\nInstanceCacheTTL = 0s\n")
	inst, _ := c.InstancesV2()
	_, md := h.machine("thr-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "thr-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	h.fake.Throttle(1, 5)
	ok := 0
	for i := 0; i < 4; i++ {
		if exists, err := inst.InstanceExists(context.Background(), node); err == nil && exists {
			ok++
		}
	}
	if h.fake.Throttled()["ec2:DescribeInstances"] == 0 {
		t.Error("the fake throttled nothing")
	}
	if ok == 0 {
		t.Error("no call succeeded despite SDK retries")
	}
}
