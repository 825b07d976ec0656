package openstack

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// harness is the fake OpenStack as the conformance suite sees it, driven through gophercloud.
type harness struct {
	fake *fake.Cloud
	mu   sync.Mutex
	n    int
}

func newFake(t testing.TB, o fake.Options) *fake.Cloud {
	t.Helper()
	f := fake.New(o)
	if _, err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func newTestCloud(t cloudtest.T, f *fake.Cloud, extra string) *Cloud {
	c, err := New(strings.NewReader(f.CloudConfig("pending-retry = 200ms") + extra))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface { return newTestCloud(t, h.fake, "") }

func (h *harness) AddInstance(t cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	i := h.n
	h.n++
	h.mu.Unlock()
	ip := fmt.Sprintf("10.0.%d.%d", i/250, i%250+10)
	zone := fmt.Sprintf("zone-%d", i%3)
	id := h.fake.AddServer(fake.ServerSpec{Name: name, AZ: zone, IPs: []string{ip}})
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, cloudprovider.InstanceMetadata{
		ProviderID: "openstack:///" + id, InstanceType: "m1.small", Zone: zone, Region: h.fake.Region(),
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}},
	}
}

func (h *harness) BreakInstances(t cloudtest.T) func() {
	for _, op := range []string{"nova.GetServer", "nova.ListServers"} {
		h.fake.SetFault(op, fake.Fault{Status: 500})
	}
	return func() {
		for _, op := range []string{"nova.GetServer", "nova.ListServers"} {
			h.fake.SetFault(op, fake.Fault{})
		}
	}
}

func (h *harness) Writes() int { return h.fake.Writes() }

func (h *harness) LoadBalancerTags(t cloudtest.T, clusterName string, svc *v1.Service) (map[string]string, bool) {
	name := lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name)
	for _, lb := range h.fake.LoadBalancers() {
		if lb.Name == name {
			return tagMap(lb.Tags), true
		}
	}
	return nil, false
}

func (h *harness) MaxNameLen() int { return 255 }

func TestConformance(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: &harness{fake: newFake(t, fake.Options{})}})
}
