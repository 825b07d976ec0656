package openstack

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// harness is the fake OpenStack as the conformance suite sees it, driven through gophercloud.
type harness struct {
	fake   *fake.Cloud
	extra  string // cloud.conf lines added to [LoadBalancer]
	events *cloudtest.EventSink
	stop   chan struct{}
	mu     sync.Mutex
	n      int
	ips    map[string]string // node name -> its address (AddInstance)
	// routerID is the router every RouteCloud shares (routes_test.go); providerIDs the
	// routes tests' Nodes'.
	routerID    string
	providerIDs map[string]string
}

// newHarness is a harness over a new fake whose clouds record Events into one sink.
func newHarness(t *testing.T, extra string) *harness { return newHarnessWith(t, extra, fake.Options{}) }

// pendingOptions: Octavia takes seconds for each change (build/realstack/FINDINGS.md); the
// fake's short delays keep the provider's PENDING_* paths in the conformance suite.
var pendingOptions = fake.Options{ProvisionDelay: 60 * time.Millisecond, UpdateDelay: 15 * time.Millisecond}

func newHarnessWith(t *testing.T, extra string, o fake.Options) *harness {
	h := &harness{fake: newFake(t, o), extra: extra, events: cloudtest.NewEventSink(), stop: make(chan struct{}), providerIDs: map[string]string{}}
	t.Cleanup(func() { close(h.stop) })
	return h
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

// NewCloud names the floating network: HostileCases adds a second external network.
func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface {
	c := newTestCloud(t, h.fake, "floating-network-id = "+fake.PublicNetworkID+"\n"+h.extra)
	c.Initialize(h.events, h.stop)
	return c
}

func (h *harness) AddInstance(t cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	i := h.n
	h.n++
	h.mu.Unlock()
	ip := fmt.Sprintf("10.0.%d.%d", i/250, i%250+10)
	h.mu.Lock()
	if h.ips == nil {
		h.ips = map[string]string{}
	}
	h.ips[name] = ip
	h.mu.Unlock()
	zone := fmt.Sprintf("zone-%d", i%3)
	id := h.fake.AddServer(fake.ServerSpec{Name: name, AZ: zone, IPs: []string{ip}})
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, cloudprovider.InstanceMetadata{
		ProviderID: "openstack:///" + id, InstanceType: "m1.small", Zone: zone, Region: h.fake.Region(),
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}, // no metadata hostname: none, as upstream
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

// NewCloudFor is a cloud of another cluster on the same fake (the cluster name reaches the
// provider as ccm hands it over, and in every LoadBalancer call).
func (h *harness) NewCloudFor(t cloudtest.T, clusterName string) cloudprovider.Interface {
	c := h.NewCloud(t).(*Cloud)
	c.UseClusterName(clusterName)
	return c
}

// HostileCases seeds the fake, as an operator or another tool would through its API, with a
// hand-made load balancer (with a listener and a floating IP), one shared with the attacker's
// cluster, a hand-made floating IP, and a network with a subnet and an external network that
// no cloud config names; and returns the attacks on them and on the victim's load balancer
// and floating IP.
func (h *harness) HostileCases(t cloudtest.T, victim string, victimSvc *v1.Service, attacker string) []cloudtest.HostileCase {
	victimLB := ""
	for _, lb := range h.fake.LoadBalancers() {
		if lb.Name == lbname.Octavia.Name(victim, victimSvc.Namespace, victimSvc.Name) {
			victimLB = lb.ID
		}
	}
	if victimLB == "" || len(victimSvc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("the victim's load balancer is not in the fake")
	}
	victimFIP := victimSvc.Status.LoadBalancer.Ingress[0].IP
	handLB := h.fake.AddLoadBalancerTagged("hand-made-lb", "made by hand")
	h.fake.AddListener(handLB, "the operator's listener", "TCP", 443, "10.0.9.9")
	handFIP := "172.24.4.20"
	h.fake.AssociateFloatingIP(h.fake.AddFloatingIP(handFIP), handLB)
	sharedLB := h.fake.AddLoadBalancerTagged("shared-lb", "", ownership.ClusterTagPrefix+attacker+"="+ownership.Shared)
	spareFIP := "172.24.4.21"
	h.fake.AddFloatingIP(spareFIP)
	netID, subnetID := h.fake.AddNetwork("another-clusters-net", "10.9.0.0/16", false)
	extID, extSubnetID := h.fake.AddNetwork("another-external-net", "198.51.100.0/24", true)
	const notOwned = "does not own"
	ann := func(k, v string) map[string]string { return map[string]string{k: v} }
	fip := func(addr string) func(*v1.Service) {
		return func(s *v1.Service) { s.Spec.LoadBalancerIP = addr } //nolint:staticcheck // the upstream way to ask for a floating IP
	}
	return []cloudtest.HostileCase{
		{Name: "load-balancer-id of the victim cluster's load balancer", Annotations: ann(annLoadBalancerID, victimLB), Reason: notOwned},
		{Name: "load-balancer-id of a hand-made load balancer", Annotations: ann(annLoadBalancerID, handLB), Reason: notOwned},
		{Name: "load-balancer-id of a load balancer shared with this cluster", Annotations: ann(annLoadBalancerID, sharedLB), Reason: notOwned},
		{Name: "loadBalancerIP of the victim's floating IP", Mutate: fip(victimFIP), Reason: notOwned},
		{Name: "loadBalancerIP of a hand-made floating IP in use", Mutate: fip(handFIP), Reason: notOwned},
		{Name: "loadBalancerIP of a hand-made spare floating IP", Mutate: fip(spareFIP), Reason: notOwned},
		{Name: "subnet-id of a subnet no config names", Annotations: ann(annSubnetID, subnetID), Reason: notOwned},
		{Name: "network-id of a network no config names", Annotations: ann(annNetworkID, netID), Reason: notOwned},
		{Name: "member-subnet-id of a subnet no config names", Annotations: ann(annMemberSubnetID, subnetID), Reason: notOwned},
		{Name: "floating-network-id of an external network no config names", Annotations: ann(annFloatingNetworkID, extID), Reason: notOwned},
		{Name: "floating-subnet-id of an external subnet no config names", Annotations: ann(annFloatingSubnetID, extSubnetID), Reason: notOwned},
	}
}

// Snapshot is the fake's state: every load balancer, listener, pool, member, monitor,
// floating IP, security group and rule, and the group lists of ports.
func (h *harness) Snapshot(t cloudtest.T) string { return h.fake.Snapshot() }

// The drift part of the harness.

func (h *harness) Events() *cloudtest.EventSink { return h.events }

func (h *harness) lbName(cluster string, svc *v1.Service) string {
	return lbname.Octavia.Name(cluster, svc.Namespace, svc.Name)
}

func (h *harness) LoadBalancerState(t cloudtest.T, cluster string, svc *v1.Service) (string, bool) {
	name := h.lbName(cluster, svc)
	return h.fake.LoadBalancerState(name, sgName(name))
}

// DriftCases break the Service's load balancer in the fake's state, one thing each, as an
// operator at the console would. The Service has one port, TCP/80.
func (h *harness) DriftCases(t cloudtest.T) []cloudtest.DriftCase {
	brk := func(what string, f func(name string) bool) func(cloudtest.T, string, *v1.Service) {
		return func(t cloudtest.T, cluster string, svc *v1.Service) {
			if !f(h.lbName(cluster, svc)) {
				t.Fatalf("%s: nothing to break in the fake", what)
			}
		}
	}
	monitored := func(svc *v1.Service) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annHealthMonitor] = "true"
	}
	httpMonitored := func(svc *v1.Service) { // externalTrafficPolicy Local: an HTTP monitor
		monitored(svc)
		svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	}
	cases := []cloudtest.DriftCase{
		// The listener created again on the pool the deleted listener left behind.
		{Name: "listener deleted", MaxWrites: 1, Mentions: "listener TCP/80 was deleted",
			Break: brk("listener", func(n string) bool { return h.fake.DeleteListener(n, 80) })},
		{Name: "health monitor deleted", Mutate: monitored, MaxWrites: 1, Mentions: "health monitor of TCP/80 was deleted",
			Break: brk("monitor", func(n string) bool { return h.fake.DeleteMonitor(n, 80) })},
		{Name: "health monitor changed", Mutate: monitored, MaxWrites: 1, Mentions: "health monitor of TCP/80 settings",
			Break: brk("monitor", func(n string) bool { return h.fake.SetMonitorDelay(n, 80, 60, 30) })},
		{Name: "listener disabled", MaxWrites: 1, Mentions: "listener TCP/80 admin_state_up was false",
			Break: brk("listener", func(n string) bool { return h.fake.SetListenerUp(n, 80, false) })},
		{Name: "pool disabled", MaxWrites: 1, Mentions: "pool TCP/80 admin_state_up was false",
			Break: brk("pool", func(n string) bool { return h.fake.SetPoolUp(n, 80, false) })},
		{Name: "member weight and backup changed", MaxWrites: 1, Mentions: "was weight=0 backup=true",
			Break: brk("member", func(n string) bool { return h.fake.SetMemberSettings(n, 80, 0, true, true) })},
		{Name: "HTTP health monitor method and codes changed", Mutate: httpMonitored, MaxWrites: 1, Mentions: `http_method="HEAD" expected_codes="404"`,
			Break: brk("monitor", func(n string) bool { return h.fake.SetMonitorHTTP(n, 80, "HEAD", "404") })},
		{Name: "member removed", MaxWrites: 1, Mentions: "members of TCP/80",
			Break: brk("member", func(n string) bool { return h.fake.RemoveMember(n, 80) })},
		{Name: "pool lb-method changed", MaxWrites: 1, Mentions: "lb-method was SOURCE_IP",
			Break: brk("pool", func(n string) bool { return h.fake.SetPoolMethod(n, 80, "SOURCE_IP") })},
		{Name: "pool session persistence set by hand", MaxWrites: 1, Mentions: "session persistence was HTTP_COOKIE",
			Break: brk("pool", func(n string) bool { return h.fake.SetPoolPersistence(n, 80, "HTTP_COOKIE", "") })},
		{Name: "listener allowed CIDRs changed", MaxWrites: 1, Mentions: "allowed CIDRs",
			Break: brk("listener", func(n string) bool { return h.fake.SetAllowedCIDRs(n, 80, "192.0.2.0/24") })},
		{Name: "floating IP detached", MaxWrites: 1, Mentions: "was detached",
			Break: brk("floating IP", func(n string) bool { return h.fake.DetachFloatingIP(n) })},
		// A load balancer create (populated) and the association of the Service's floating IP.
		{Name: "load balancer deleted", MaxWrites: 2, Mentions: "was deleted; created again",
			Break: brk("load balancer", func(n string) bool { return h.fake.DeleteLoadBalancerNamed(n) })},
	}
	if h.extra == manageSG {
		cases = append(cases, cloudtest.DriftCase{Name: "security group rule revoked", MaxWrites: 1, Mentions: "security group rule",
			Break: brk("rule", func(n string) bool { return h.fake.RevokeRule(sgName(n)) })})
	}
	return cases
}

var _ cloudtest.DriftHarness = (*harness)(nil)

func TestConformance(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: newHarnessWith(t, "", pendingOptions), Pending: 10 * time.Second})
}

// The same suite with per-Service security groups: two clusters' groups and port lists.
func TestConformanceWithSecurityGroups(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: newHarnessWith(t, manageSG, pendingOptions), Pending: 10 * time.Second})
}

var _ cloudtest.ReachHarness = (*harness)(nil)

func (h *harness) Annotations() reach.Table { return annotations }

// Foreign seeds objects of kind no attacking Service owns: the victim cluster's, another
// namespace's of the attacker's own cluster, an operator's untagged one, one tagged as the
// upstream CCM tags (no UID), and one in use.
func (h *harness) Foreign(t cloudtest.T, kind, victim string, victimSvc *v1.Service, attacker string) []cloudtest.Foreign {
	neighbour := cloudtest.AttackService(0)
	neighbour.Namespace, neighbour.UID = "neighbour", "uid-neighbour"
	nsTags := ownerTags(ownership.Of(attacker, neighbour))
	upstreamTags := []string{ownership.ClusterTagPrefix + attacker + "=" + ownership.Owned, ownership.ServiceTag + "=neighbour/old-web"}
	f := func(flavour, value string) cloudtest.Foreign {
		return cloudtest.Foreign{Flavour: flavour, Value: value}
	}
	switch kind {
	case "load balancer":
		victimLB := ""
		for _, lb := range h.fake.LoadBalancers() {
			if lb.Name == lbname.Octavia.Name(victim, victimSvc.Namespace, victimSvc.Name) {
				victimLB = lb.ID
			}
		}
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, victimLB),
			f(cloudtest.OtherNamespace, h.fake.AddLoadBalancerTagged("reach-neighbour", "", nsTags...)),
			f(cloudtest.Unowned, h.fake.AddLoadBalancerTagged("reach-hand-made", "made by hand")),
			f(cloudtest.UpstreamMade, h.fake.AddLoadBalancerTagged("reach-upstream", "", upstreamTags...)),
		}
	case "port":
		victimTags := ownerTags(ownership.Of(victim, victimSvc))
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, h.fake.AddPort(fake.PrivateSubnetID, "10.0.91.1", "", victimTags...)),
			f(cloudtest.OtherNamespace, h.fake.AddPort(fake.PrivateSubnetID, "10.0.91.2", "", nsTags...)),
			f(cloudtest.Unowned, h.fake.AddPort(fake.PrivateSubnetID, "10.0.91.3", "")),
			f(cloudtest.UpstreamMade, h.fake.AddPort(fake.PrivateSubnetID, "10.0.91.4", "", upstreamTags...)),
			f(cloudtest.InUse, h.fake.AddPort(fake.PrivateSubnetID, "10.0.91.5", "keepalived-1")),
		}
	case "subnet":
		_, sub := h.fake.AddNetwork("reach-other-net", "10.92.0.0/16", false)
		_, ext := h.fake.AddNetwork("reach-other-ext", "198.51.92.0/24", true)
		return []cloudtest.Foreign{f(cloudtest.Unowned, sub), f(cloudtest.Unowned, ext)}
	case "network":
		n, _ := h.fake.AddNetwork("reach-net", "10.93.0.0/16", false)
		e, _ := h.fake.AddNetwork("reach-ext", "198.51.93.0/24", true)
		return []cloudtest.Foreign{f(cloudtest.Unowned, n), f(cloudtest.Unowned, e)}
	}
	t.Errorf("the OpenStack harness makes no foreign %s", kind)
	return nil
}
