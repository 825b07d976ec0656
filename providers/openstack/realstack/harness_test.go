package realstack_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/providers/openstack"
)

var ctx = context.Background()

// harness is the real services as the conformance suite sees them: the provider talks to them
// through the recorder, which counts writes and injects Nova outages; the harness reads and
// breaks them directly.
type harness struct {
	t      *testing.T
	rec    *recorder
	extra  string
	events *cloudtest.EventSink
	stop   chan struct{}

	mu      sync.Mutex
	servers []servers.Server // the project's servers, handed out in turn by AddInstance
	next    int
	ips     map[string]string // node name -> its server's address (AddInstance)
	names   map[string]string // a server's address -> the name it was last given

	foreignNet, foreignSubnet string // made once for the generated hostile group (reach_test.go)
}

func (h *harness) ipOf(node string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ips[node]
}

func newHarness(t *testing.T, extra string) *harness {
	h := &harness{t: t, rec: newRecorder(t, rs.ports()), extra: extra, events: cloudtest.NewEventSink(), stop: make(chan struct{})}
	t.Cleanup(func() { close(h.stop) })
	pages, err := servers.List(rs.compute, servers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatalf("listing servers: %v", err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Status == "ACTIVE" {
			h.servers = append(h.servers, s)
		}
	}
	if len(h.servers) < minServers {
		t.Fatalf("the project has %d ACTIVE servers, the suite needs %d (make realstack boots them)", len(h.servers), minServers)
	}
	sort.Slice(h.servers, func(i, j int) bool { return h.servers[i].ID < h.servers[j].ID })
	t.Cleanup(func() { // the bootstrap finds its servers by name
		for _, s := range h.servers {
			_, _ = servers.Update(ctx, rs.compute, s.ID, servers.UpdateOpts{Name: s.Name}).Extract()
		}
	})
	return h
}

// minServers: the hostile checks hold a victim's two Nodes and an attacker's two at once.
const minServers = 4

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface {
	c, err := openstack.New(strings.NewReader(rs.cloudConf(h.rec, h.extra)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.Initialize(h.events, h.stop)
	return c
}

func (h *harness) NewCloudFor(t cloudtest.T, clusterName string) cloudprovider.Interface {
	c := h.NewCloud(t).(*openstack.Cloud)
	c.UseClusterName(clusterName)
	return c
}

// AddInstance renames the next of the project's servers (a real Nova server on the fake
// hypervisor) to name: booting one per call would cost half a minute each.
func (h *harness) AddInstance(t cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	s := h.servers[h.next%len(h.servers)]
	h.next++
	h.mu.Unlock()
	// Nova on SQLite answers an occasional 500 ("database is locked") under concurrent writes:
	// the rename is tried again, as a client of a real cloud would.
	var err error
	for try := 0; try < 5; try++ {
		if _, err = servers.Update(ctx, rs.compute, s.ID, servers.UpdateOpts{Name: name}).Extract(); err == nil || !gophercloud.ResponseCodeIs(err, 500) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatalf("renaming server %s to %s: %v", s.ID, name, err)
	}
	ip := ""
	for _, addrs := range s.Addresses {
		for _, a := range addrs.([]any) {
			if m, ok := a.(map[string]any); ok && m["OS-EXT-IPS:type"] == "fixed" && ip == "" {
				ip, _ = m["addr"].(string)
			}
		}
	}
	flavorID, _ := s.Flavor["id"].(string)
	flavor := must(flavors.Get(ctx, rs.compute, flavorID).Extract()).Name
	h.mu.Lock()
	if h.ips == nil {
		h.ips = map[string]string{}
	}
	h.ips[name] = ip
	if h.names == nil {
		h.names = map[string]string{}
	}
	h.names[ip] = name
	h.mu.Unlock()
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, cloudprovider.InstanceMetadata{
		ProviderID: "openstack:///" + s.ID, InstanceType: flavor, Zone: s.AvailabilityZone, Region: rs.ids["REGION"],
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}},
	}
}

func (h *harness) BreakInstances(t cloudtest.T) func() {
	h.rec.fail("nova", 503)
	return func() { h.rec.fail("nova", 0) }
}

func (h *harness) Writes() int { return h.rec.Writes() }

func (h *harness) MaxNameLen() int { return 255 }

func (h *harness) Events() *cloudtest.EventSink { return h.events }

// lbNamed is the project's load balancer of that name (nil if none).
func lbNamed(t cloudtest.T, name string) *loadbalancers.LoadBalancer {
	pages, err := loadbalancers.List(rs.lb, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatalf("listing load balancers: %v", err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for i := range all {
		if all[i].Name == name && all[i].ProvisioningStatus != "DELETED" {
			return &all[i]
		}
	}
	return nil
}

func (h *harness) LoadBalancerTags(t cloudtest.T, clusterName string, svc *v1.Service) (map[string]string, bool) {
	lb := lbNamed(t, lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name))
	if lb == nil {
		return nil, false
	}
	out := map[string]string{}
	for _, tag := range lb.Tags {
		k, v, _ := strings.Cut(tag, "=")
		out[k] = v
	}
	return out, true
}

// LoadBalancerState is the Service's load balancer as Octavia and Neutron hold it, without
// IDs: its listeners with their allowed CIDRs and descriptions, pools, members, monitors, and
// the floating IP on its VIP port.
func (h *harness) LoadBalancerState(t cloudtest.T, clusterName string, svc *v1.Service) (string, bool) {
	lb := lbNamed(t, lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name))
	if lb == nil {
		return "", false
	}
	return lbState(t, lb), true
}

func lbState(t cloudtest.T, lb *loadbalancers.LoadBalancer) string {
	var lines []string
	add := func(format string, a ...any) { lines = append(lines, fmt.Sprintf(format, a...)) }
	// Not the VIP: Octavia allocates a new one when a load balancer is created again.
	add("lb %s %s tags %v", lb.Name, lb.ProvisioningStatus, sorted(lb.Tags))
	lis := must(listeners.ExtractListeners(must(listeners.List(rs.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx))))
	for _, l := range lis {
		add("listener %s/%d cidrs %v desc %q headers %v status %s", l.Protocol, l.ProtocolPort, sorted(l.AllowedCIDRs), l.Description, l.InsertHeaders, l.ProvisioningStatus)
		if l.DefaultPoolID == "" {
			continue
		}
		p := must(pools.Get(ctx, rs.lb, l.DefaultPoolID).Extract())
		add("  pool %s %s %s persistence %q", p.Name, p.Protocol, p.LBMethod, p.Persistence.Type)
		ms := must(pools.ExtractMembers(must(pools.ListMembers(rs.lb, p.ID, pools.ListMembersOpts{}).AllPages(ctx))))
		var mm []string
		for _, m := range ms {
			mm = append(mm, fmt.Sprintf("%s:%d/%d", m.Address, m.ProtocolPort, m.MonitorPort))
		}
		add("  members %v", sorted(mm))
		if p.MonitorID != "" {
			m := must(monitors.Get(ctx, rs.lb, p.MonitorID).Extract())
			add("  monitor %s %d/%d/%d/%d %s", m.Type, m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown, m.URLPath)
		}
	}
	fips := must(floatingips.ExtractFloatingIPs(must(floatingips.List(rs.network, floatingips.ListOpts{PortID: lb.VipPortID}).AllPages(ctx))))
	for _, f := range fips {
		add("floating ip %s", f.FloatingIP)
	}
	sort.Strings(lines[1:])
	return strings.Join(lines, "\n")
}

// Snapshot is every load balancer of the project with its state, and every floating IP with
// its port.
func (h *harness) Snapshot(t cloudtest.T) string {
	all := must(loadbalancers.ExtractLoadBalancers(must(loadbalancers.List(rs.lb, loadbalancers.ListOpts{}).AllPages(ctx))))
	var out []string
	for i := range all {
		out = append(out, lbState(t, &all[i]))
	}
	for _, f := range must(floatingips.ExtractFloatingIPs(must(floatingips.List(rs.network, floatingips.ListOpts{}).AllPages(ctx)))) {
		out = append(out, fmt.Sprintf("fip %s port %s desc %q", f.FloatingIP, f.PortID, f.Description))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// waitLB waits until the load balancer is ACTIVE (or gone, with gone).
func waitLB(t cloudtest.T, id string, gone bool) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		lb, err := loadbalancers.Get(ctx, rs.lb, id).Extract()
		switch {
		case gone && gophercloud.ResponseCodeIs(err, 404):
			return
		case err != nil && !gone:
			t.Fatalf("getting load balancer %s: %v", id, err)
		case err == nil && !gone && lb.ProvisioningStatus == "ACTIVE":
			return
		case err == nil && lb.ProvisioningStatus == "ERROR":
			t.Fatalf("load balancer %s went ERROR", id)
		case time.Now().After(deadline):
			t.Fatalf("load balancer %s: still not there after 3 minutes", id)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cleanProject deletes the load balancers the tests make (ccm's kube_service_*, the hostile
// cases' hand-made ones) with the floating IPs on their VIPs and the VIP ports Octavia's noop
// network driver leaves behind, and unattached floating IPs of ccm's: each run starts from the
// bootstrap's state, and objects others made in the project are left alone.
func cleanProject(t *testing.T) {
	all := must(loadbalancers.ExtractLoadBalancers(must(loadbalancers.List(rs.lb, loadbalancers.ListOpts{}).AllPages(ctx))))
	var gone []loadbalancers.LoadBalancer
	for _, lb := range all {
		if !strings.HasPrefix(lb.Name, "kube_service_") && lb.Name != "hand-made-lb" && lb.Name != "shared-lb" {
			continue
		}
		if lb.ProvisioningStatus == "PENDING_DELETE" {
			gone = append(gone, lb)
			continue
		}
		if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
			waitLB(t, lb.ID, false)
		}
		if err := loadbalancers.Delete(ctx, rs.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Logf("deleting load balancer %s: %v", lb.ID, err)
		}
		gone = append(gone, lb)
	}
	vips := map[string]bool{}
	for _, lb := range gone {
		waitLB(t, lb.ID, true)
		vips[lb.VipPortID] = true
	}
	for _, f := range must(floatingips.ExtractFloatingIPs(must(floatingips.List(rs.network, floatingips.ListOpts{}).AllPages(ctx)))) {
		if vips[f.PortID] || (f.PortID == "" && strings.HasPrefix(f.Description, "ccm:")) {
			_ = floatingips.Delete(ctx, rs.network, f.ID).ExtractErr()
		}
	}
	for id := range vips {
		_ = ports.Delete(ctx, rs.network, id).ExtractErr()
	}
}
