package dummy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
)

// harness is the dummy cloud as the conformance suite sees it: the inventory file is the
// machine API, the MemStore the load balancer API.
type harness struct {
	dir      string
	store    *MemStore
	mu       sync.Mutex
	machines map[string]int // name -> index, for addresses
	broken   bool
	clouds   []*Cloud
}

func (h *harness) inventoryPath() string { return filepath.Join(h.dir, "inventory.conf") }

// writeInventory rewrites the inventory and makes every cloud re-read it now.
func (h *harness) writeInventory(t cloudtest.T) {
	var names []string
	for n := range h.machines {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		state := StateRunning
		if h.broken {
			state = StateError
		}
		fmt.Fprintf(&b, "[Instance %q]\ninternal-ip = 10.9.%d.%d\nzone = zone-%d\nstate = %s\n\n", n, h.machines[n]/250, h.machines[n]%250+1, h.machines[n]%3, state)
	}
	if err := os.WriteFile(h.inventoryPath(), []byte(b.String()), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	for _, c := range h.clouds {
		c.inventory.fileStamp = "" // the file changed; mtime granularity must not hide it
		if err := c.inventory.reload(); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
}

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface {
	h.mu.Lock()
	defer h.mu.Unlock()
	cfg := fmt.Sprintf("[Global]\nregion = lab\ninventory = %s\n\n[Pool \"p\"]\ncidr = 192.0.2.0/24\n", h.inventoryPath())
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.UseStore(h.store)
	h.clouds = append(h.clouds, c)
	return c
}

func (h *harness) AddInstance(t cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := len(h.machines)
	h.machines[name] = i
	h.writeInventory(t)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, cloudprovider.InstanceMetadata{
		ProviderID:   providerIDPrefix + name,
		InstanceType: "dummy.standard",
		Zone:         fmt.Sprintf("zone-%d", i%3),
		Region:       "lab",
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.9.%d.%d", i/250, i%250+1)},
			{Type: v1.NodeHostName, Address: name},
		},
	}
}

func (h *harness) BreakInstances(t cloudtest.T) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broken = true
	h.writeInventory(t)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.broken = false
		h.writeInventory(t)
	}
}

func (h *harness) Writes() int { return h.store.Writes() }

func (h *harness) LoadBalancerTags(t cloudtest.T, _ string, svc *v1.Service) (map[string]string, bool) {
	recs, _ := h.store.Load(context.Background())
	r, ok := recs[key(svc)]
	return r.Tags, ok
}

func (h *harness) MaxNameLen() int { return names.MaxLen }

func TestConformance(t *testing.T) {
	h := &harness{dir: t.TempDir(), store: NewMemStore(), machines: map[string]int{}}
	h.writeInventory(t)
	cloudtest.Run(t, cloudtest.Config{Harness: h})
}
