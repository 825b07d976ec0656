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
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// harness is the fake OpenStack as the conformance suite sees it, driven through gophercloud.
type harness struct {
	fake  *fake.Cloud
	extra string // cloud.conf lines added to [LoadBalancer]
	mu    sync.Mutex
	n     int
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
	return newTestCloud(t, h.fake, "floating-network-id = "+fake.PublicNetworkID+"\n"+h.extra)
}

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

func TestConformance(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: &harness{fake: newFake(t, fake.Options{})}})
}

// The same suite with per-Service security groups: two clusters' groups and port lists.
func TestConformanceWithSecurityGroups(t *testing.T) {
	cloudtest.Run(t, cloudtest.Config{Harness: &harness{fake: newFake(t, fake.Options{}), extra: manageSG}})
}
