package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

const (
	testUser     = "ccm@vsphere.local"
	testPassword = "s3cret;#pw"
)

// startSim starts a vcsim with two datacenters and zone/region tags, stopped at test end.
func startSim(t testing.TB) *sim.Sim {
	t.Helper()
	s, err := sim.Start(context.Background(), sim.Options{User: testUser, Password: testPassword, Datacenters: 2,
		ZoneCategory: "k8s-zone", RegionCategory: "k8s-region"})
	if err != nil {
		t.Fatalf("vcsim: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// testConfig is a vsphere.conf for s; extra is appended.
func testConfig(s *sim.Sim, extra string) string {
	return fmt.Sprintf(`[Global]
server = %s
port = %s
user = %q
password = %q
insecure-flag = 1
datacenters = "DC0,DC1"

[Labels]
zone = k8s-zone
region = k8s-region

[Pool "vips"]
cidr = 192.0.2.0/24
%s`, s.Host(), s.Port(), testUser, testPassword, extra)
}

type harness struct {
	s      *sim.Sim
	mu     sync.Mutex
	n      int
	clouds []*Cloud
}

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface {
	c, err := New(strings.NewReader(testConfig(h.s, "")))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.mu.Lock()
	h.clouds = append(h.clouds, c)
	h.mu.Unlock()
	return c
}

func (h *harness) AddInstance(t cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	i := h.n
	h.n++
	h.mu.Unlock()
	dc := i % 2
	ip := fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
	vm, err := h.s.AddVM(context.Background(), name, dc, 0, []sim.NIC{{Network: "VM Network", IPs: []string{ip, "fe80::1"}}})
	if err != nil {
		t.Fatalf("AddVM: %v", err)
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, cloudprovider.InstanceMetadata{
		ProviderID:   "vsphere://" + vm.UUID,
		InstanceType: "vsphere-vm.cpu-2.mem-4gb.os-ubuntu64",
		Zone:         fmt.Sprintf("zone-%d-0", dc),
		Region:       fmt.Sprintf("region-%d", dc),
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: ip},
			{Type: v1.NodeHostName, Address: name},
		},
	}
}

func (h *harness) BreakInstances(t cloudtest.T) func() { return h.s.FailReads() }

func (h *harness) Writes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.clouds {
		c.lb.mu.Lock()
		n += c.lb.writes
		c.lb.mu.Unlock()
	}
	return n
}

// LoadBalancerTags reads the record from vCenter with the test's own client.
func (h *harness) LoadBalancerTags(t cloudtest.T, cluster string, svc *v1.Service) (map[string]string, bool) {
	ctx := context.Background()
	rc := rest.NewClient(h.s.Admin())
	if err := rc.Login(ctx, h.s.Server.URL.User); err != nil {
		t.Fatalf("vAPI login: %v", err)
	}
	m := tags.NewManager(rc)
	ts, err := m.GetTagsForCategory(ctx, lbCategory)
	if err != nil {
		return nil, false
	}
	for _, tg := range ts {
		if tg.Name == names.Name(cluster, svc.Namespace, svc.Name) {
			var r lbRecord
			if err := json.Unmarshal([]byte(tg.Description), &r); err != nil {
				t.Fatalf("record %s: %v", tg.Name, err)
			}
			return r.tags(), true
		}
	}
	return nil, false
}

func (h *harness) MaxNameLen() int { return 255 }

func TestConformance(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: &harness{s: startSim(t)}})
}
