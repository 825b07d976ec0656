package dummy

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
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
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
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
	// byCluster is the latest cloud of each cluster NewCloudFor made, so that HostileCases
	// seeds through the victim's own ccm rather than a second leader of it.
	byCluster map[string]*Cloud
	events    *cloudtest.EventSink
}

var _ cloudtest.DriftHarness = (*harness)(nil)

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

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface { return h.newCloud(t) }

func (h *harness) newCloud(t cloudtest.T) *Cloud {
	h.mu.Lock()
	defer h.mu.Unlock()
	cfg := fmt.Sprintf("[Global]\nregion = lab\ninventory = %s\n\n[Pool \"p\"]\ncidr = 192.0.2.0/24\ncidr = 2001:db8:c::/120\n\n[Pool \"elsewhere\"]\nrange = 198.51.100.1-198.51.100.9\nnamespace = cloudtest-elsewhere\n", h.inventoryPath())
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.UseStore(h.store)
	c.Initialize(h.events, nil)
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

func (h *harness) LoadBalancerTags(t cloudtest.T, clusterName string, svc *v1.Service) (map[string]string, bool) {
	recs, _ := h.store.Load(context.Background())
	r, ok := recs[recordKey(clusterName, svc)]
	return r.Tags, ok
}

func (h *harness) MaxNameLen() int { return names.MaxLen }

func TestConformance(t *testing.T) {
	h := &harness{dir: t.TempDir(), store: NewMemStore(), machines: map[string]int{}, byCluster: map[string]*Cloud{}, events: cloudtest.NewEventSink()}
	h.writeInventory(t)
	cloudtest.Run(t, cloudtest.Config{Harness: h})
}

// NewCloudFor is a ccm of another cluster over the same store: two clusters in one cloud.
func (h *harness) NewCloudFor(t cloudtest.T, clusterName string) cloudprovider.Interface {
	c := h.newCloud(t)
	c.UseClusterName(clusterName)
	h.mu.Lock()
	h.byCluster[clusterName] = c
	h.mu.Unlock()
	return c
}

// HostileCases seeds the store with what a tenant could aim at: more Services of the victim
// (one sharing an address by key, one with an IPv6 address) made through the victim's own
// ccm, a record made by hand holding an address and a sharing key, and records made by hand
// (or forged) under the names ccm would compute for the attacker's Services.
func (h *harness) HostileCases(t cloudtest.T, victim string, victimSvc *v1.Service, attacker string) []cloudtest.HostileCase {
	ctx := context.Background()
	h.mu.Lock()
	vc := h.byCluster[victim]
	h.mu.Unlock()
	if vc == nil {
		vc = h.NewCloudFor(t, victim).(*Cloud)
	}
	vaddr := victimSvc.Status.LoadBalancer.Ingress[0].IP
	ensureVictim := func(name string, mutate func(*v1.Service)) string {
		s := victimSvc.DeepCopy()
		s.Name, s.UID, s.Status = name, types.UID("uid-victim-"+name), v1.ServiceStatus{}
		mutate(s)
		st, err := vc.lb.EnsureLoadBalancer(ctx, victim, s, nil)
		if err != nil {
			t.Fatalf("victim Service %s: %v", name, err)
		}
		return st.Ingress[0].IP
	}
	const victimKey, handKey = "victim-share", "hand-share"
	shared := ensureVictim(victimSvc.Name+"-shared", func(s *v1.Service) {
		s.Annotations = map[string]string{AnnotationSharedIP: victimKey}
	})
	v6 := ensureVictim(victimSvc.Name+"-v6", func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol} })
	v6a := netip.MustParseAddr(v6)
	put := func(k string, r Record) {
		r.Name = k
		if err := h.store.Put(ctx, k, r); err != nil {
			t.Fatalf("seeding %s: %v", k, err)
		}
	}
	// An address record made outside ccm (an operator's reservation), with a sharing key.
	put("handmade-reservation", Record{IPs: []string{"192.0.2.250"}, Ports: []string{"TCP/9999"}, SharingKey: handKey})

	ipv6 := func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol} }
	lbIP := func(ip string, more ...func(*v1.Service)) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Spec.LoadBalancerIP = ip
			for _, m := range more {
				m(s)
			}
		}
	}
	// Ports that collide with nobody's, so that only the scope of the sharing key refuses.
	otherPort := func(s *v1.Service) { s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = 8443, 30443 }
	const inUse = "already in use"
	cases := []cloudtest.HostileCase{
		{Name: "loadBalancerIP is the victim's address", Mutate: lbIP(vaddr), Reason: inUse},
		{Name: "annotation asks for the victim's address", Annotations: map[string]string{AnnotationLoadBalancerIPs: vaddr}, Reason: inUse},
		{Name: "kube-vip annotation asks for the victim's address", Annotations: map[string]string{AnnotationKubeVIPLoadBalancerIPs: " " + vaddr + " "}, Reason: inUse},
		{Name: "the victim's address with a zone", Mutate: lbIP(vaddr + "%eth0"), Reason: "zone"},
		{Name: "the victim's address IPv4-mapped", Mutate: lbIP("::ffff:" + vaddr), Reason: "IPv4-mapped"},
		{Name: "the victim's address IPv4-mapped in hex", Mutate: lbIP(netip.AddrFrom16(netip.MustParseAddr(vaddr).As16()).StringExpanded()), Reason: "IPv4-mapped"},
		{Name: "the victim's address with leading zeros", Mutate: lbIP(leadingZeros(vaddr)), Reason: "not an IP address"},
		{Name: "the victim's IPv6 address", Mutate: lbIP(v6, ipv6), Reason: inUse},
		{Name: "the victim's IPv6 address in upper case", Mutate: lbIP(strings.ToUpper(v6a.StringExpanded()), ipv6), Reason: inUse},
		{Name: "the victim's IPv6 address with leading zeros", Mutate: lbIP(v6a.StringExpanded(), ipv6), Reason: inUse},
		{Name: "the victim's IPv6 address with a zone", Mutate: lbIP(v6+"%eth0", ipv6), Reason: "zone"},
		{Name: "the victim's sharing key and shared address", Annotations: map[string]string{AnnotationSharedIP: victimKey, AnnotationLoadBalancerIPs: shared}, Mutate: otherPort, Reason: inUse},
		{Name: "the victim's sharing key and its main address", Annotations: map[string]string{AnnotationSharedIP: victimKey}, Mutate: lbIP(vaddr, otherPort), Reason: inUse},
		{Name: "an address reserved by hand", Mutate: lbIP("192.0.2.250"), Reason: inUse},
		{Name: "the sharing key and address of a record made by hand", Annotations: map[string]string{AnnotationSharedIP: handKey}, Mutate: lbIP("192.0.2.250", otherPort), Reason: inUse},
	}
	// Records under the very names ccm computes for the next attacks' Services.
	squat := []struct {
		name   string
		tags   func(id ownership.Identity) map[string]string
		reason string
	}{
		{"a record made by hand under the Service's load balancer name", func(ownership.Identity) map[string]string { return nil }, "no ownership mark"},
		{"a record under the Service's name marked for the victim's cluster", func(id ownership.Identity) map[string]string {
			id.Cluster = victim
			return id.Tags()
		}, "no ownership mark"},
		{"a record under the Service's name marked for another Service", func(id ownership.Identity) map[string]string {
			id.Name += "-other"
			return id.Tags()
		}, "belongs to another Service"},
		{"a record under the Service's name of an earlier Service of that name", func(id ownership.Identity) map[string]string {
			id.UID = "uid-earlier"
			return id.Tags()
		}, "earlier Service"},
		{"a record under the Service's name marked shared with the cluster", func(id ownership.Identity) map[string]string {
			return map[string]string{ownership.ClusterTagPrefix + attacker: ownership.Shared, ownership.ServiceTag: id.Service()}
		}, "shared"},
	}
	for j, sq := range squat {
		i := len(cases)
		id := ownership.Of(attacker, cloudtest.AttackService(i)) // a record squatting the name ccm computes for it
		put(names.Name(attacker, id.Namespace, id.Name), Record{IPs: []string{fmt.Sprintf("192.0.2.%d", 240+j)}, Ports: []string{"TCP/80"}, Tags: sq.tags(id)})
		cases = append(cases, cloudtest.HostileCase{Name: sq.name, Reason: sq.reason})
	}
	return cases
}

// leadingZeros spells an IPv4 address with three digits per byte.
func leadingZeros(ip string) string {
	b := netip.MustParseAddr(ip).As4()
	return fmt.Sprintf("%03d.%03d.%03d.%03d", b[0], b[1], b[2], b[3])
}

// Snapshot is every record of the store, read from the MemStore (the simulator), not from a
// cloud's memory: key, name, addresses, ports, sharing key, tags and the fingerprint of the
// desired state (which covers the backends).
func (h *harness) Snapshot(t cloudtest.T) string {
	recs, err := h.store.Load(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	return snapshotOf(recs)
}

func snapshotOf(recs map[string]Record) string {
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		r := recs[k]
		tags := make([]string, 0, len(r.Tags))
		for tk, tv := range r.Tags {
			tags = append(tags, tk+"="+tv)
		}
		sort.Strings(tags)
		fmt.Fprintf(&b, "record %q name=%q ips=%q ports=%q sharing=%q tags=%q fingerprint=%s\n",
			k, r.Name, r.IPs, r.Ports, r.SharingKey, tags, r.Fingerprint)
	}
	return b.String()
}

// The drift part of the harness: another writer of the store (an operator's script, a second
// tool) changes or deletes the Service's record, through the store, not through the provider.

func (h *harness) Events() *cloudtest.EventSink { return h.events }

// editRecord changes svc's record in the store with edit.
func (h *harness) editRecord(t cloudtest.T, cluster string, svc *v1.Service, edit func(r *Record)) {
	ctx := context.Background()
	k := recordKey(cluster, svc)
	r, ok, err := h.store.Get(ctx, k)
	if err != nil || !ok {
		t.Fatalf("record %s: found %v, %v", k, ok, err)
	}
	edit(&r)
	if err := h.store.Put(ctx, k, r); err != nil {
		t.Fatalf("editing record %s: %v", k, err)
	}
}

func (h *harness) DriftCases(cloudtest.T) []cloudtest.DriftCase {
	return []cloudtest.DriftCase{
		{Name: "record deleted", MaxWrites: 1, Mentions: "was deleted",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				if err := h.store.Delete(context.Background(), recordKey(cluster, svc)); err != nil {
					t.Fatalf("deleting the record: %v", err)
				}
			}},
		{Name: "address changed", MaxWrites: 1, Mentions: "address",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(r *Record) { r.IPs = []string{"192.0.2.200"} })
			}},
		{Name: "port changed", MaxWrites: 1, Mentions: "ports",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(r *Record) { r.Ports = []string{"TCP/8080"} })
			}},
		{Name: "sharing key changed", MaxWrites: 1, Mentions: "sharing key",
			Mutate: func(svc *v1.Service) { svc.Annotations = map[string]string{AnnotationSharedIP: "team-a"} },
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(r *Record) { r.SharingKey = "team-b" })
			}},
		{Name: "name changed", MaxWrites: 1, Mentions: "name",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(r *Record) { r.Name = "renamed-by-hand" })
			}},
		{Name: "tag added", MaxWrites: 1, Mentions: "tags",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(r *Record) { r.Tags = maps.Clone(r.Tags); r.Tags["team"] = "payments" })
			}},
	}
}

// LoadBalancerState is svc's record as the store (the simulator) holds it, in the snapshot's
// canonical text.
func (h *harness) LoadBalancerState(t cloudtest.T, cluster string, svc *v1.Service) (string, bool) {
	k := recordKey(cluster, svc)
	r, ok, err := h.store.Get(context.Background(), k)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return snapshotOf(map[string]Record{k: r}), ok
}

// The dummy has no firewall: annotation-only source ranges get one Warning (see cloudtest).
func TestLegacySourceRangesAdvised(t *testing.T) {
	h := &harness{dir: t.TempDir(), store: NewMemStore(), machines: map[string]int{}, byCluster: map[string]*Cloud{}, events: cloudtest.NewEventSink()}
	h.writeInventory(t)
	lb, _ := h.NewCloudFor(t, "advice").LoadBalancer()
	cloudtest.LegacySourceRangesAreAdvised(t, lb, "advice", h.events, nil)
}

var _ cloudtest.ReachHarness = (*harness)(nil)

func (h *harness) Annotations() reach.Table { return annotations }

// Foreign: addresses no attacking Service holds: the victim cluster's, and one an operator
// reserved by hand in the store.
func (h *harness) Foreign(t cloudtest.T, kind, victim string, victimSvc *v1.Service, attacker string) []cloudtest.Foreign {
	switch kind {
	case "address pool": // a pool that serves another namespace only, and one that does not exist
		return []cloudtest.Foreign{{Flavour: cloudtest.OtherNamespace, Value: "elsewhere"}, {Flavour: cloudtest.Unowned, Value: "no-such-pool"}}
	case "address":
	default:
		t.Errorf("the dummy harness makes no foreign %s", kind)
		return nil
	}
	if err := h.store.Put(context.Background(), "reach-reservation", Record{Name: "reach-reservation", IPs: []string{"192.0.2.249"}, Ports: []string{"TCP/9999"}}); err != nil {
		t.Fatalf("seeding a reservation: %v", err)
	}
	return []cloudtest.Foreign{
		{Flavour: cloudtest.OtherCluster, Value: victimSvc.Status.LoadBalancer.Ingress[0].IP},
		{Flavour: cloudtest.Unowned, Value: "192.0.2.249"},
	}
}
