package cloudtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/fingerprint"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/routes"
	"github.com/ccm-project/ccm/common/servicecontroller"
	"github.com/ccm-project/ccm/common/sourceranges"
	"github.com/ccm-project/ccm/common/svcevents"
)

// breakage names one way a provider can break the contract.
type breakage string

const (
	none               breakage = ""
	unknownIsError     breakage = "unknown instance is an error"
	errorIsGone        breakage = "cloud error reads as gone"
	noLookupByID       breakage = "providerID not used"
	wrongZone          breakage = "wrong zone"
	alwaysWrites       breakage = "every ensure writes"
	forgetsOnRestart   breakage = "fingerprints kept in process memory"
	updateChangesIP    breakage = "update moves the address"
	deleteMissingFails breakage = "deleting a missing LB fails"
	keepsAfterDelete   breakage = "delete leaves the LB"
	longNames          breakage = "names ignore the limit"
	noTags             breakage = "no ownership tags"
	updateCreates      breakage = "an update creates a missing LB"
	noUID              breakage = "ownership tags without the Service UID"
	adoptsForeign      breakage = "adopts any load balancer named by annotation"
	ignoresCluster     breakage = "names load balancers without the cluster"
	leaksOwner         breakage = "a refusal names the owner"
	trustsFingerprint  breakage = "skips the comparison when the fingerprint matches"
	repairsSilently    breakage = "repairs without an Event"
	rewritesAll        breakage = "a repair rewrites everything"
	recreatesUpstream  breakage = "replaces upstream's load balancers"
	orphansUpstream    breakage = "leaves upstream's unused objects behind"
	listsForeign       breakage = "the owned listing reports any tagged load balancer"
	deletesUnchecked   breakage = "an orphan is deleted without checking its marks again"
	skipsReach         breakage = "annotation values are not checked by their reach"
	routesListAll      breakage = "lists every route on the router as its own"
	routesByHopOnly    breakage = "owns routes by their hop only, with no record"
	routesAlwaysWrite  breakage = "names a route's Node by its address and re-adds routes"
	routesNoRepair     breakage = "trusts its record that a route exists"
)

// Upstream's marks on the load balancers it made, in the fake's world.
const (
	upstreamCluster = "upstream/cluster"
	upstreamService = "upstream/service"
)

// idleTimeout is the one setting of the fake's load balancers.
const idleTimeout = 60

// annAdopt names an existing load balancer for the Service to use, as load-balancer-id does.
const annAdopt = "fake/adopt"

// fakeAnnotations is the fake's annotation table: one of each reach it can act on.
var fakeAnnotations = reach.Table{
	{Name: annAdopt, Reach: reach.Object, Object: "load balancer"},
	{Name: "fake/probe-port", Reach: reach.NodePort},
	{Name: "fake/tag", Reach: reach.Text, Max: 256},
	{Name: "fake/idle", Reach: reach.Setting},
	{Name: sourceranges.Annotation, Reach: reach.Ranges},
}

var fakeChecker = &reach.Checker{Table: fakeAnnotations, Prefixes: []string{"fake/"}}

// sim is a tiny cloud: machines and load balancers.
type sim struct {
	mu       sync.Mutex
	machines map[string]cloudprovider.InstanceMetadata // by name
	lbs      map[string]simLB                          // by LB name
	writes   int
	broken   bool
	// lbCreates and servingDeletes count what the migration check forbids; upstreamGroups
	// are upstream's per-Service groups (Service key -> group name).
	lbCreates, servingDeletes int
	upstreamGroups            map[string]string
	// routes are the shared router's; records the clusters' records of theirs
	// ("<cluster>|<route>").
	routes  []routes.Route
	records map[string]bool
}

type simLB struct {
	ip      string
	fp      string
	tags    map[string]string
	members []string
	idle    int
}

// fakeHarness implements Harness over sim, with a provider that breaks the contract as told.
type fakeHarness struct {
	sim    *sim
	brk    breakage
	nextIP int
	events *EventSink
}

func newFake(b breakage) *fakeHarness {
	return &fakeHarness{sim: &sim{machines: map[string]cloudprovider.InstanceMetadata{}, lbs: map[string]simLB{}, upstreamGroups: map[string]string{}, records: map[string]bool{}}, brk: b, events: NewEventSink()}
}

func (h *fakeHarness) NewCloud(T) cloudprovider.Interface {
	c := &fakeCloud{h: h, mem: map[string]string{}, rec: svcevents.New(nil)}
	c.Initialize(h.events, nil)
	return c
}

func (h *fakeHarness) AddInstance(_ T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.sim.mu.Lock()
	n := len(h.sim.machines)
	md := cloudprovider.InstanceMetadata{ProviderID: "fake:///" + name, InstanceType: "t1", Zone: "z1", Region: "r1",
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", n/250, n%250+1)}}}
	h.sim.machines[name] = md
	h.sim.mu.Unlock()
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, md
}

func (h *fakeHarness) BreakInstances(T) func() {
	h.sim.mu.Lock()
	h.sim.broken = true
	h.sim.mu.Unlock()
	return func() { h.sim.mu.Lock(); h.sim.broken = false; h.sim.mu.Unlock() }
}

func (h *fakeHarness) Writes() int { h.sim.mu.Lock(); defer h.sim.mu.Unlock(); return h.sim.writes }

func (h *fakeHarness) LoadBalancerTags(_ T, cluster string, svc *v1.Service) (map[string]string, bool) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	lb, ok := h.sim.lbs[h.name(cluster, svc)]
	return lb.tags, ok
}

func (h *fakeHarness) MaxNameLen() int { return 32 }

func (h *fakeHarness) name(cluster string, svc *v1.Service) string {
	if h.brk == longNames {
		return "lb-" + cluster + "-" + svc.Namespace + "-" + svc.Name
	}
	if h.brk == ignoresCluster {
		cluster = "any"
	}
	if adopt := svc.Annotations[annAdopt]; adopt != "" {
		return adopt
	}
	return lbname.AWSELB.Name(cluster, svc.Namespace, svc.Name)
}

// fakeCloud is the provider under test.
type fakeCloud struct {
	h   *fakeHarness
	mem map[string]string // fingerprints, for the forgetsOnRestart breakage
	rec *svcevents.Recorder
}

func (c *fakeCloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.rec.Start(b, "fake-cloud-provider", stop)
}
func (c *fakeCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }
func (c *fakeCloud) Instances() (cloudprovider.Instances, bool)       { return nil, false }
func (c *fakeCloud) InstancesV2() (cloudprovider.InstancesV2, bool)   { return c, true }
func (c *fakeCloud) Zones() (cloudprovider.Zones, bool)               { return nil, false }
func (c *fakeCloud) Clusters() (cloudprovider.Clusters, bool)         { return nil, false }
func (c *fakeCloud) Routes() (cloudprovider.Routes, bool)             { return nil, false }
func (c *fakeCloud) ProviderName() string                             { return "fake" }
func (c *fakeCloud) HasClusterID() bool                               { return true }

var errOutage = errors.New("cloud API unavailable")

func (c *fakeCloud) machine(node *v1.Node) (cloudprovider.InstanceMetadata, bool, error) {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return cloudprovider.InstanceMetadata{}, false, errOutage
	}
	name := node.Name
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, "fake:///"); ok && c.h.brk != noLookupByID {
		name = id
	}
	md, ok := s.machines[name]
	return md, ok, nil
}

func (c *fakeCloud) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	_, ok, err := c.machine(node)
	switch {
	case err != nil && c.h.brk == errorIsGone:
		return false, nil
	case !ok && err == nil && c.h.brk == unknownIsError:
		return false, errors.New("no such instance")
	}
	return ok, err
}

func (c *fakeCloud) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	_, ok, err := c.machine(node)
	if err == nil && !ok {
		err = cloudprovider.InstanceNotFound
	}
	return false, err
}

func (c *fakeCloud) InstanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	md, ok, err := c.machine(node)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, cloudprovider.InstanceNotFound
	}
	if c.h.brk == wrongZone {
		md.Zone = "elsewhere"
	}
	return &md, nil
}

func (c *fakeCloud) GetLoadBalancer(_ context.Context, cluster string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[c.h.name(cluster, svc)]
	if !ok {
		return nil, false, nil
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: lb.ip}}}, true, nil
}

func (c *fakeCloud) GetLoadBalancerName(_ context.Context, cluster string, svc *v1.Service) string {
	return c.h.name(cluster, svc)
}

func nodeNames(nodes []*v1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// write makes svc's load balancer what it should be: it compares the cloud's with the desired
// one and writes each difference (one write per field). A difference while the desired state
// is the one last applied (same fingerprint) is drift, and is reported.
func (c *fakeCloud) write(cluster string, svc *v1.Service, nodes []*v1.Node, newIP bool) (*v1.LoadBalancerStatus, error) {
	if c.h.brk != skipsReach {
		if err := fakeChecker.Values(svc); err != nil {
			return nil, err
		}
	}
	s := c.h.sim
	s.mu.Lock()
	name := c.h.name(cluster, svc)
	lb, exists := s.lbs[name]
	id := ownership.Of(cluster, svc)
	upstream := exists && lb.tags[upstreamCluster] == cluster && lb.tags[upstreamService] == id.Service()
	if upstream && c.h.brk == recreatesUpstream {
		delete(s.lbs, name) // deleted and made again: a new address
		s.servingDeletes++
		lb, exists, upstream = simLB{}, false, false
	}
	if exists && !upstream && c.h.brk != adoptsForeign && c.h.brk != ignoresCluster {
		err := ownership.Check(id, "load balancer", name, lb.tags)
		if a, _ := fakeAnnotations.Lookup(annAdopt); svc.Annotations[annAdopt] != "" && c.h.brk != skipsReach {
			err = reach.Named(id, ownership.Allow{}, a, name, reach.Evidence{Tags: lb.tags})
		}
		if err != nil {
			s.mu.Unlock()
			if c.h.brk == leaksOwner {
				return nil, fmt.Errorf("%w (owner tags %v)", err, lb.tags)
			}
			return nil, err
		}
	}
	members := nodeNames(nodes)
	fp := fingerprint.Of([]any{members, idleTimeout})
	stored := lb.fp
	if c.h.brk == forgetsOnRestart {
		stored = c.mem[name]
	}
	unchanged := exists && !fingerprint.Changed(stored, fp)
	if unchanged && !newIP && (c.h.brk == trustsFingerprint || c.h.brk == forgetsOnRestart) {
		s.mu.Unlock()
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: lb.ip}}}, nil
	}
	var diffs []string
	if c.h.brk == forgetsOnRestart && !unchanged {
		diffs = append(diffs, "everything") // no comparison: what memory does not hold is rewritten
	}
	if c.h.brk != orphansUpstream {
		delete(s.upstreamGroups, id.Service()) // the fake's own rules replace it at once
	}
	if !exists || newIP {
		s.lbCreates++
		c.h.nextIP++
		lb.ip = fmt.Sprintf("192.0.2.%d", c.h.nextIP)
		diffs = append(diffs, "load balancer")
	}
	if exists && !slices.Equal(lb.members, members) {
		diffs = append(diffs, "members")
	}
	if exists && lb.idle != idleTimeout {
		diffs = append(diffs, "idle timeout")
	}
	if c.h.brk == alwaysWrites && len(diffs) == 0 {
		diffs = append(diffs, "nothing")
	}
	if c.h.brk == rewritesAll && len(diffs) > 0 {
		diffs = append(diffs, "members (again)", "idle timeout (again)", "tags")
	}
	lb.members, lb.idle, lb.fp = members, idleTimeout, fp
	c.mem[name] = fp
	switch c.h.brk {
	case noTags:
	case noUID:
		id.UID = ""
		lb.tags = id.Tags()
	default:
		lb.tags = id.Tags()
	}
	s.lbs[name] = lb
	s.writes += len(diffs)
	s.mu.Unlock()
	if unchanged && len(diffs) > 0 && c.h.brk != repairsSilently {
		c.rec.Repaired(svc, diffs)
	}
	// A Service with an address whose load balancer is gone had it deleted out of band.
	if !exists && len(svc.Status.LoadBalancer.Ingress) > 0 && c.h.brk != repairsSilently {
		c.rec.Repaired(svc, []string{"load balancer was deleted"})
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: lb.ip}}}, nil
}

func (c *fakeCloud) EnsureLoadBalancer(_ context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return c.write(cluster, svc, nodes, false)
}

func (c *fakeCloud) UpdateLoadBalancer(_ context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	if _, ok, _ := c.GetLoadBalancer(context.Background(), cluster, svc); !ok && c.h.brk != updateCreates {
		return errors.New("load balancer not found")
	}
	_, err := c.write(cluster, svc, nodes, c.h.brk == updateChangesIP)
	return err
}

func (c *fakeCloud) EnsureLoadBalancerDeleted(_ context.Context, cluster string, svc *v1.Service) error {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	name := c.h.name(cluster, svc)
	if lb, ok := s.lbs[name]; ok && c.h.brk != adoptsForeign && c.h.brk != ignoresCluster && !ownership.Is(ownership.Of(cluster, svc), lb.tags) {
		return nil // not ours: nothing of this Service's to delete
	}
	if _, ok := s.lbs[name]; !ok {
		if c.h.brk == deleteMissingFails {
			return errors.New("load balancer not found")
		}
		return nil
	}
	if c.h.brk != keepsAfterDelete {
		delete(s.lbs, name)
		delete(s.upstreamGroups, svc.Namespace+"/"+svc.Name)
		s.writes++
		s.servingDeletes++
	}
	return nil
}

// The migration part of the harness: upstream's load balancers carry its own marks (no
// ownership tags), and a per-Service group the provider replaces.

func (h *fakeHarness) SeedUpstream(_ T, cluster string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	var out []*v1.Service
	for i, svc := range svcs {
		svc = svc.DeepCopy()
		ip := fmt.Sprintf("198.51.100.%d", i+1)
		key := svc.Namespace + "/" + svc.Name
		h.sim.lbs[h.name(cluster, svc)] = simLB{ip: ip, members: nodeNames(nodes), idle: idleTimeout,
			tags: map[string]string{upstreamCluster: cluster, upstreamService: key}}
		h.sim.upstreamGroups[key] = "upstream-sg-" + string(svc.UID)
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
		out = append(out, svc)
	}
	return out
}

func (h *fakeHarness) MigrationCounts() (int, int) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	return h.sim.lbCreates, h.sim.servingDeletes
}

func (h *fakeHarness) Leftovers(_ T, _ string, svc *v1.Service) []string {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	if g, ok := h.sim.upstreamGroups[svc.Namespace+"/"+svc.Name]; ok {
		return []string{"security group " + g}
	}
	return nil
}

func (h *fakeHarness) Remains(t T, cluster string, svc *v1.Service) []string {
	out := h.Leftovers(t, cluster, svc)
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	if _, ok := h.sim.lbs[h.name(cluster, svc)]; ok {
		out = append(out, "load balancer "+h.name(cluster, svc))
	}
	return out
}

// The hostile-tenant part of the harness.

func (h *fakeHarness) NewCloudFor(t T, _ string) cloudprovider.Interface { return h.NewCloud(t) }

func (h *fakeHarness) HostileCases(_ T, victim string, victimSvc *v1.Service, _ string) []HostileCase {
	h.sim.mu.Lock()
	h.sim.lbs["made-by-hand"] = simLB{ip: "198.51.100.7", tags: map[string]string{"team": "payments"}}
	h.sim.mu.Unlock()
	return []HostileCase{
		{Name: "adopt an unowned load balancer", Annotations: map[string]string{annAdopt: "made-by-hand"}, Reason: "does not own"},
		{Name: "adopt the other cluster's load balancer", Annotations: map[string]string{annAdopt: h.name(victim, victimSvc)}, Reason: "does not own"},
	}
}

func (h *fakeHarness) Annotations() reach.Table { return fakeAnnotations }

func (h *fakeHarness) Foreign(_ T, kind, victim string, victimSvc *v1.Service, _ string) []Foreign {
	if kind != "load balancer" {
		return nil
	}
	h.sim.mu.Lock()
	h.sim.lbs["hand-made-2"] = simLB{ip: "198.51.100.8", tags: map[string]string{"team": "search"}}
	h.sim.mu.Unlock()
	return []Foreign{{Flavour: Unowned, Value: "hand-made-2"}, {Flavour: OtherCluster, Value: h.name(victim, victimSvc)}}
}

// The drift part of the harness.

func (h *fakeHarness) Events() *EventSink { return h.events }

// change applies f to svc's load balancer in the simulator; f returns false to delete it.
func (h *fakeHarness) change(cluster string, svc *v1.Service, f func(lb *simLB) bool) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	name := h.name(cluster, svc)
	lb := h.sim.lbs[name]
	if f(&lb) {
		h.sim.lbs[name] = lb
	} else {
		delete(h.sim.lbs, name)
	}
}

func (h *fakeHarness) DriftCases(T) []DriftCase {
	return []DriftCase{
		{Name: "member removed", MaxWrites: 1, Mentions: "members",
			Break: func(_ T, cluster string, svc *v1.Service) {
				h.change(cluster, svc, func(lb *simLB) bool { lb.members = lb.members[1:]; return true })
			}},
		{Name: "setting changed", MaxWrites: 1, Mentions: "idle timeout",
			Break: func(_ T, cluster string, svc *v1.Service) {
				h.change(cluster, svc, func(lb *simLB) bool { lb.idle = 5; return true })
			}},
		{Name: "load balancer deleted", MaxWrites: 1, Mentions: "deleted",
			Break: func(_ T, cluster string, svc *v1.Service) {
				h.change(cluster, svc, func(*simLB) bool { return false })
			}},
	}
}

func (h *fakeHarness) LoadBalancerState(_ T, cluster string, svc *v1.Service) (string, bool) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	lb, ok := h.sim.lbs[h.name(cluster, svc)]
	return fmt.Sprintf("members=%v idle=%d tags=%v", lb.members, lb.idle, lb.tags), ok
}

func (h *fakeHarness) Snapshot(T) string {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	var lines []string
	for name, lb := range h.sim.lbs {
		lines = append(lines, fmt.Sprintf("%s ip=%s fp=%s tags=%v", name, lb.ip, lb.fp, lb.tags))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The orphan collection part: the fake lists by the ownership tags and deletes after checking
// them again, unless broken.

func (c *fakeCloud) OwnedLoadBalancers(_ context.Context, cluster string) ([]servicecontroller.OwnedLoadBalancer, error) {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []servicecontroller.OwnedLoadBalancer
	for name, lb := range s.lbs {
		owner, ok := ownership.Owner(cluster, lb.tags)
		if c.h.brk == listsForeign {
			if ns, n, tagged := strings.Cut(lb.tags[ownership.ServiceTag], "/"); tagged {
				owner, ok = ownership.Identity{Cluster: cluster, Namespace: ns, Name: n, UID: lb.tags[ownership.ServiceUIDTag]}, true
			}
		}
		if ok {
			out = append(out, servicecontroller.OwnedLoadBalancer{Owner: owner, ID: name})
		}
	}
	return out, nil
}

func (c *fakeCloud) DeleteOwnedLoadBalancer(_ context.Context, cluster string, o servicecontroller.OwnedLoadBalancer) error {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.lbs[o.ID]
	if !ok {
		return nil
	}
	id := o.Owner
	id.Cluster = cluster
	if err := ownership.Check(id, "load balancer", o.ID, lb.tags); err != nil && c.h.brk != deletesUnchecked {
		return err
	}
	delete(s.lbs, o.ID)
	s.writes++
	return nil
}
