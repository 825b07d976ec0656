package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/reach"
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

// testConfig is a vsphere.conf for s with the test pools; extra is appended.
func testConfig(s *sim.Sim, extra string) string {
	return simConfig(s, `[Pool "vips"]
cidr = 192.0.2.0/24

[Pool "elsewhere"]
range = 198.51.100.1-198.51.100.9
namespace = cloudtest-elsewhere
`+extra)
}

// simConfig is a vsphere.conf for s whose pools (and more sections) are tail.
func simConfig(s *sim.Sim, tail string) string {
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

%s`, s.Host(), s.Port(), testUser, testPassword, tail)
}

type harness struct {
	s      *sim.Sim
	mu     sync.Mutex
	n      int
	events *cloudtest.EventSink
	// migration: Services seeded the upstream way, and every address served before a takeover
	seeded int
	known  map[string]bool
}

var (
	_ cloudtest.HostileHarness = (*harness)(nil)
	_ cloudtest.DriftHarness   = (*harness)(nil)
)

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface {
	return h.NewCloudFor(t, "conformance")
}

// NewCloudFor is a cloud of another cluster on the same vCenter, with the same pool range: the
// clusters share the address space as well as the tag category.
func (h *harness) NewCloudFor(t cloudtest.T, cluster string) cloudprovider.Interface {
	c, err := New(strings.NewReader(testConfig(h.s, "")))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.UseClusterName(cluster)
	c.Initialize(h.events, nil)
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
		InstanceType: "vsphere-vm.cpu-2.mem-4gb.os-ubuntu",
		Zone:         fmt.Sprintf("zone-%d-0", dc),
		Region:       fmt.Sprintf("region-%d", dc),
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: ip},
			{Type: v1.NodeExternalIP, Address: ip}, // no [Nodes] rules: upstream reports it as both
			{Type: v1.NodeHostName, Address: name},
		},
	}
}

func (h *harness) BreakInstances(t cloudtest.T) func() { return h.s.FailReads() }

// Writes is counted by the simulator (every tagging or inventory change any cloud made), not by
// the provider.
func (h *harness) Writes() int { return h.s.Calls().Writes }

// records reads the load balancer category through the simulator's own vAPI session.
func (h *harness) records(t cloudtest.T) map[string]string {
	recs, err := h.s.TagsInCategory(context.Background(), lbCategory)
	if err != nil {
		t.Fatalf("reading category %s at the simulator: %v", lbCategory, err)
	}
	return recs
}

// LoadBalancerTags reads the record from vCenter with the simulator's own client.
func (h *harness) LoadBalancerTags(t cloudtest.T, cluster string, svc *v1.Service) (map[string]string, bool) {
	desc, ok := h.records(t)[names.Name(cluster, svc.Namespace, svc.Name)]
	if !ok {
		return nil, false
	}
	r := parseRecord(desc)
	if r.unreadable {
		t.Fatalf("record of %s/%s: not a record: %q", svc.Namespace, svc.Name, desc)
	}
	return r.tags(), true
}

func (h *harness) MaxNameLen() int { return 255 }

// Snapshot is every tag of the load balancer category, its description decoded where it is a
// record, read at the simulator.
func (h *harness) Snapshot(t cloudtest.T) string {
	var lines []string
	for name, desc := range h.records(t) {
		if r := parseRecord(desc); !r.unreadable {
			lines = append(lines, fmt.Sprintf("tag %q: cluster=%s service=%s uid=%s ips=%v ports=%v fp=%s", name, r.Cluster, r.Service, r.UID, r.IPs, r.Ports, r.Fingerprint))
		} else {
			lines = append(lines, fmt.Sprintf("tag %q: description %q", name, desc))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// HostileCases seeds the category with tags made by hand (the simulator's vAPI session, not the
// provider) and returns what a tenant can write in spec.loadBalancerIP and at the record's
// name (the annotations are tried by the generated group, through Foreign).
func (h *harness) HostileCases(t cloudtest.T, victim string, victimSvc *v1.Service, attacker string) []cloudtest.HostileCase {
	ctx := context.Background()
	seed := func(name, desc string) {
		if _, err := h.s.PutTag(ctx, lbCategory, name, desc); err != nil {
			t.Fatalf("seeding tag %s: %v", name, err)
		}
	}
	if len(victimSvc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("the victim's Service has no address")
	}
	victimIP := victimSvc.Status.LoadBalancer.Ingress[0].IP
	seed("storage-array-vip", "reserved by hand for the storage array: 192.0.2.250.")
	seed("other-tool-vip", `{"ips":["192.0.2.251"]}`)
	const held = "is already in use by another Service"
	var cases []cloudtest.HostileCase
	add := func(name, reason, ip string) {
		cases = append(cases, cloudtest.HostileCase{Name: name, Reason: reason,
			Mutate: func(svc *v1.Service) { svc.Spec.LoadBalancerIP = ip }})
	}
	// own is the record name of the next case's Service.
	next := func() *v1.Service { return cloudtest.AttackService(len(cases)) }
	own := func() string { return names.Name(attacker, next().Namespace, next().Name) }
	add("loadBalancerIP of the other cluster's load balancer", held, victimIP)
	add("loadBalancerIP of the other cluster's load balancer, IPv4-mapped IPv6", "IPv4-mapped", "::ffff:"+victimIP)
	add("loadBalancerIP of a record made by hand (free text)", held, "192.0.2.250")
	add("loadBalancerIP of a record made by another tool (no ownership)", held, "192.0.2.251")
	seed(own(), "made by hand")
	add("a tag made by hand under the Service's own record name", "not this Service's", "")
	seed(own(), fmt.Sprintf(`{"c":%q,"s":"%s/%s","u":"uid-earlier","ips":["192.0.2.252"]}`, attacker, next().Namespace, next().Name))
	add("a record of an earlier Service of the same name (other UID)", "UID differs", "")
	seed(own(), fmt.Sprintf(`{"c":%q,"s":"%s/%s","u":%q,"ips":[%q]}`, victim, victimSvc.Namespace, victimSvc.Name, victimSvc.UID, victimIP))
	add("a record under the Service's own name claiming the other cluster's Service and address", "not this Service's", "")
	return cases
}

func TestConformance(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: &harness{s: startSim(t), events: cloudtest.NewEventSink()}})
}

// The drift part of the harness: out-of-band changes made through govmomi against vcsim with
// the simulator's own session, as a vSphere admin editing the tag in the vSphere Client would.

func (h *harness) Events() *cloudtest.EventSink { return h.events }

// editRecord rewrites fields of svc's record (its description's JSON) in vCenter.
func (h *harness) editRecord(t cloudtest.T, cluster string, svc *v1.Service, edit func(map[string]any)) {
	err := h.s.EditTag(context.Background(), lbCategory, names.Name(cluster, svc.Namespace, svc.Name), func(desc string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(desc), &m); err != nil {
			t.Fatalf("record %q: %v", desc, err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		return string(b)
	})
	if err != nil {
		t.Fatalf("editing the record at the simulator: %v", err)
	}
}

func (h *harness) DriftCases(cloudtest.T) []cloudtest.DriftCase {
	return []cloudtest.DriftCase{
		{Name: "record deleted", MaxWrites: 1, Mentions: "was deleted",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				if err := h.s.DeleteTag(context.Background(), lbCategory, names.Name(cluster, svc.Namespace, svc.Name)); err != nil {
					t.Fatalf("deleting the record at the simulator: %v", err)
				}
			}},
		{Name: "address changed", MaxWrites: 1, Mentions: "address",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(m map[string]any) { m["ips"] = []string{"192.0.2.200"} })
			}},
		{Name: "port changed", MaxWrites: 1, Mentions: "ports",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(m map[string]any) { m["p"] = []string{"TCP/8080"} })
			}},
		{Name: "second port added to the record", MaxWrites: 1, Mentions: "ports",
			Mutate: func(svc *v1.Service) {
				svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
			},
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				h.editRecord(t, cluster, svc, func(m map[string]any) { m["p"] = []string{"TCP/443", "TCP/80", "UDP/53"} })
			}},
	}
}

// LoadBalancerState is svc's record as vCenter holds it (read at the simulator): owner,
// addresses, ports and the fingerprint of the desired state (which covers the members; vSphere
// records do not list them). No tag ID.
func (h *harness) LoadBalancerState(t cloudtest.T, cluster string, svc *v1.Service) (string, bool) {
	desc, ok := h.records(t)[names.Name(cluster, svc.Namespace, svc.Name)]
	if !ok {
		return "", false
	}
	r := parseRecord(desc)
	return fmt.Sprintf("owner=%s/%s/%s ips=%v ports=%v fp=%s unreadable=%v", r.Cluster, r.Service, r.UID, r.IPs, r.Ports, r.Fingerprint, r.unreadable), true
}

// vSphere's load balancers have no firewall: annotation-only source ranges get one Warning
// (see cloudtest).
func TestLegacySourceRangesAdvised(t *testing.T) {
	h := &harness{s: startSim(t), events: cloudtest.NewEventSink()}
	lb, _ := h.NewCloudFor(t, "advice").LoadBalancer()
	cloudtest.LegacySourceRangesAreAdvised(t, lb, "advice", h.events, nil)
}

var _ cloudtest.ReachHarness = (*harness)(nil)

func (h *harness) Annotations() reach.Table { return annotations }

// Foreign: addresses no attacking Service holds (the victim cluster's, and one reserved by
// hand in the category), and pools not serving the attacker's namespace.
func (h *harness) Foreign(t cloudtest.T, kind, _ string, victimSvc *v1.Service, _ string) []cloudtest.Foreign {
	switch kind {
	case "address pool":
		return []cloudtest.Foreign{{Flavour: cloudtest.OtherNamespace, Value: "elsewhere"}, {Flavour: cloudtest.Unowned, Value: "no-such-pool"}}
	case "address":
	default:
		t.Errorf("the vSphere harness makes no foreign %s", kind)
		return nil
	}
	if _, err := h.s.PutTag(context.Background(), lbCategory, "reach-reservation", "reserved by hand: 192.0.2.249"); err != nil {
		t.Fatalf("seeding a reservation: %v", err)
	}
	return []cloudtest.Foreign{
		{Flavour: cloudtest.OtherCluster, Value: victimSvc.Status.LoadBalancer.Ingress[0].IP},
		{Flavour: cloudtest.Unowned, Value: "192.0.2.249"},
	}
}
