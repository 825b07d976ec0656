package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/sourceranges"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// upstreamCluster is a cloud the upstream CCM managed: nodes (servers with ports) and K
// Services whose load balancers it made (fake.SeedUpstream), as the API server holds them
// (annotations upstream writes, status with the address it served).
type upstreamCluster struct {
	f     *fake.Cloud
	nodes []*v1.Node
	ports []string // the nodes' Neutron ports
	svcs  []*v1.Service
	addrs []string
	lbIDs []string
}

// upstreamSvc is a Service as the upstream CCM leaves it in the API server.
func upstreamSvc(name string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}
	}
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("0b7c3a4e-" + name), Annotations: map[string]string{}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports, IPFamilies: []v1.IPFamily{v1.IPv4Protocol}}}
}

func toUpstream(svc *v1.Service, nodes []*v1.Node, sgPorts []string) fake.UpstreamService {
	u := fake.UpstreamService{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID), Nodes: map[string]string{}, SecurityGroupPorts: sgPorts,
		ClientIP: svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP}
	for _, p := range svc.Spec.Ports {
		u.Ports = append(u.Ports, fake.UpstreamPort{Protocol: string(p.Protocol), Port: int(p.Port), NodePort: int(p.NodePort)})
	}
	for _, n := range nodes {
		u.Nodes[n.Name] = n.Status.Addresses[0].Address
	}
	return u
}

// seedUpstreamCluster seeds k Services (withSG: with upstream's per-Service security groups).
func seedUpstreamCluster(t testing.TB, f *fake.Cloud, k int, withSG bool) *upstreamCluster {
	t.Helper()
	u := &upstreamCluster{f: f}
	for i := range 2 {
		name, ip := fmt.Sprintf("mig-node-%d", i), fmt.Sprintf("10.0.9.%d", i+10)
		id := f.AddServer(fake.ServerSpec{Name: name, IPs: []string{ip}})
		n := node(name, "openstack:///"+id)
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
		u.nodes = append(u.nodes, n)
		u.ports = append(u.ports, f.ServerPortID(id))
	}
	for i := range k {
		svc := upstreamSvc(fmt.Sprintf("up-%d", i))
		var sgPorts []string
		if withSG {
			sgPorts = u.ports
		}
		id, addr := f.SeedUpstream(toUpstream(svc, u.nodes, sgPorts))
		adoptedByUpstream(svc, id, addr)
		u.svcs, u.addrs, u.lbIDs = append(u.svcs, svc), append(u.addrs, addr), append(u.lbIDs, id)
	}
	return u
}

// adoptedByUpstream writes what the upstream CCM writes onto a Service it manages.
func adoptedByUpstream(svc *v1.Service, lbID, addr string) {
	svc.Annotations[annLoadBalancerID] = lbID
	svc.Annotations[annLoadBalancerAddress] = addr
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
}

func migrationCloud(t *testing.T, f *fake.Cloud, extra string) (cloudprovider.LoadBalancer, *cloudtest.EventSink) {
	sink := cloudtest.NewEventSink()
	c := newTestCloud(t, f, extra)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	c.Initialize(sink, stop)
	return lbOf(t, c), sink
}

// servingDeletes counts deletes of what serves traffic and creates of load balancers.
func servingChanges(calls map[string]int) (creates, deletes int) {
	for op, n := range calls {
		switch {
		case op == "octavia.CreateLoadBalancer" || op == "neutron.CreateFloatingIP":
			creates += n
		case strings.HasPrefix(op, "octavia.Delete") || op == "neutron.DeleteFloatingIP":
			deletes += n
		}
	}
	return creates, deletes
}

func warnings(sink *cloudtest.EventSink, svc *v1.Service) []string {
	var out []string
	for _, e := range sink.On(svc) {
		if strings.HasPrefix(e, v1.EventTypeWarning) {
			out = append(out, e)
		}
	}
	return out
}

// Services the upstream CCM managed carry its load-balancer-id (their own load balancer) and
// load-balancer-address: ccm takes over in place, with no create or delete of anything that
// serves, the same addresses, no Warning; the next sync writes nothing.
func TestUpstreamAnnotationsAdoptInPlace(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 3, false)
	lb, sink := migrationCloud(t, f, "")
	for i, svc := range u.svcs {
		st := ensureUntilReady(t, lb, svc, u.nodes)
		if len(st.Ingress) != 1 || st.Ingress[0].IP != u.addrs[i] {
			t.Errorf("%s: status %v, want the upstream address %s", svc.Name, st.Ingress, u.addrs[i])
		}
		svc.Status.LoadBalancer = *st
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d creates, %d deletes of serving resources, want 0 and 0 (%s)", c, d, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond) // the broadcaster
	for _, svc := range u.svcs {
		if w := warnings(sink, svc); len(w) != 0 {
			t.Errorf("%s: Warnings %q", svc.Name, w)
		}
	}
	writes := f.Writes()
	for _, svc := range u.svcs {
		ensureUntilReady(t, lb, svc, u.nodes)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the sync after the takeover made %d writes, want 0 (%s)", w, f.CallSummary())
	}
}

// [LoadBalancer] internal-lb = true is enforced as upstream does: a Service annotated
// openstack-internal-load-balancer=false still gets an internal address (its VIP, no floating
// IP), with a Warning naming the annotation.
func TestInternalLBConfigIsEnforced(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "internal-lb = true\n")
	for _, v := range []string{"false", "0", ""} {
		svc := lbService("pub-"+v, map[string]string{annInternal: v})
		if v == "" {
			svc = lbService("pub-none", nil)
		}
		st := ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
		if got := fakeLB(t, f, svc.Name); len(st.Ingress) != 1 || st.Ingress[0].IP != got.VipAddress {
			t.Errorf("%s: status %v, want the VIP %s", svc.Name, st.Ingress, got.VipAddress)
		}
		if v != "" {
			if found, evs := sink.Await(svc, 5*time.Second, v1.EventTypeWarning, annInternal, "internal-lb = true"); !found {
				t.Errorf("%s: no Warning naming %s: %q", svc.Name, annInternal, evs)
			}
		}
	}
	if n := f.Calls()["neutron.CreateFloatingIP"]; n != 0 || len(f.FloatingIPs()) != 0 {
		t.Errorf("%d floating IPs created, want none", n)
	}
}

// With no floating network configured, the first external network (Neutron's list order) with
// an IPv4 subnet gives the floating IP, as upstream picks it; several external networks are
// no error.
func TestFloatingNetworkIsTheFirstExternalOne(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.AddNetwork("ext-v6-only", "2001:db8:1::/64", true) // listed first, no IPv4 subnet: skipped
	ext, _ := f.AddNetwork("ext-second", "198.51.100.0/24", true)
	f.AddNetwork("ext-third", "203.0.113.0/24", true)
	lb, _ := migrationCloud(t, f, "")
	svc := lbService("fip-auto", nil)
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	fips := f.FloatingIPs()
	if len(fips) != 1 || fips[0].NetworkID != ext {
		t.Errorf("floating IPs %+v, want one on %s (the first external network with an IPv4 subnet)", fips, ext)
	}
}

func TestPickFloatingNetwork(t *testing.T) {
	v4, v6 := subnets.Subnet{ID: "s4", IPVersion: 4}, subnets.Subnet{ID: "s6", IPVersion: 6}
	for _, tc := range []struct {
		name string
		ids  []string
		subs []subnets.Subnet
		want bool
	}{
		{"an IPv4 subnet", []string{"s4"}, []subnets.Subnet{v4}, true},
		{"IPv6 only", []string{"s6"}, []subnets.Subnet{v6}, false},
		{"IPv6 then IPv4", []string{"s6", "s4"}, []subnets.Subnet{v6, v4}, true},
		{"a subnet the project cannot see", []string{"hidden"}, []subnets.Subnet{v6}, true},
		{"no subnet", nil, nil, false},
	} {
		if got := pickFloatingNetwork(tc.ids, tc.subs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The legacy annotation service.beta.kubernetes.io/load-balancer-source-ranges is honoured as
// upstream does (spec.loadBalancerSourceRanges wins when set): on the listeners' allowed CIDRs
// and on the security group's rules. A bad item is an error naming the annotation.
func TestLegacySourceRangesAnnotation(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, manageSG)
	nodes := lbNodes("10.0.0.5")
	only := lbService("ranges-ann", map[string]string{sourceranges.Annotation: "192.0.2.0/24, 198.51.100.0/24"})
	both := lbService("ranges-both", map[string]string{sourceranges.Annotation: "192.0.2.0/24"})
	both.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	for _, tc := range []struct {
		svc  *v1.Service
		want []string
	}{{only, []string{"192.0.2.0/24", "198.51.100.0/24"}}, {both, []string{"203.0.113.0/24"}}} {
		ensureUntilReady(t, lb, tc.svc, nodes)
		if got := fakeLB(t, f, tc.svc.Name); len(got.Listeners) != 1 || !slices.Equal(got.Listeners[0].AllowedCIDRs, tc.want) {
			t.Errorf("%s: listeners %+v, want allowed CIDRs %v", tc.svc.Name, got.Listeners, tc.want)
		}
		var prefixes []string
		for _, g := range f.SecurityGroups() {
			if g.Name != sgName("kube_service_"+cluster+"_default_"+tc.svc.Name) {
				continue
			}
			for _, r := range g.Rules {
				if r.Direction == "ingress" && r.RemoteIPPrefix != "10.0.0.0/16" {
					prefixes = append(prefixes, r.RemoteIPPrefix)
				}
			}
		}
		slices.Sort(prefixes)
		if !slices.Equal(prefixes, tc.want) {
			t.Errorf("%s: security group rules from %v, want %v", tc.svc.Name, prefixes, tc.want)
		}
	}
	bad := lbService("ranges-bad", map[string]string{sourceranges.Annotation: "192.0.2.0/24,everyone"})
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, bad, nodes); err == nil || !strings.Contains(err.Error(), sourceranges.Annotation) {
		t.Errorf("a bad annotation: %v, want an error naming it", err)
	}
	if found, evs := sink.Await(bad, 5*time.Second, v1.EventTypeWarning, sourceranges.Annotation, `"everyone"`); !found {
		t.Errorf("no Warning naming the annotation: %q", evs)
	}
}

// upstreamGroups are the fake's groups named as the upstream CCM names svc's, and the ports
// holding any of them.
func upstreamGroups(f *fake.Cloud, svc *v1.Service, ports []string) (groups []string, attached []string) {
	name := fake.UpstreamSGName(string(svc.UID), svc.Namespace, svc.Name)
	for _, g := range f.SecurityGroups() {
		if g.Name != name {
			continue
		}
		groups = append(groups, g.ID)
		for _, p := range ports {
			if slices.Contains(f.PortSecurityGroups(p), g.ID) {
				attached = append(attached, p)
			}
		}
	}
	return groups, attached
}

// With manage-security-groups, the upstream CCM's per-Service group is removed (detached from
// the nodes' ports, then deleted) once ccm's own group is attached to those ports; deleting a
// Service later leaves no group of either. A group of that name that is another cluster's
// (its description) is never touched.
func TestUpstreamSecurityGroupRetiredAfterReplacement(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 2, true)
	foreign := upstreamSvc("up-0") // same name and UID, another cluster's description
	foreignID := f.AddSecurityGroup(fake.UpstreamSGName(string(foreign.UID), "other", "up-0"))
	lb, _ := migrationCloud(t, f, manageSG)
	for i, svc := range u.svcs {
		if gs, at := upstreamGroups(f, svc, u.ports); len(gs) != 1 || len(at) != 2 {
			t.Fatalf("%s: seeded groups %v on ports %v", svc.Name, gs, at)
		}
		st := ensureUntilReady(t, lb, svc, u.nodes)
		if st.Ingress[0].IP != u.addrs[i] {
			t.Errorf("%s: address %s, want %s", svc.Name, st.Ingress[0].IP, u.addrs[i])
		}
		if gs, at := upstreamGroups(f, svc, u.ports); len(gs) != 0 || len(at) != 0 {
			t.Errorf("%s: upstream's group %v still there (on ports %v)", svc.Name, gs, at)
		}
		own := sgName("kube_service_" + cluster + "_default_" + svc.Name)
		for _, p := range u.ports {
			if !slices.ContainsFunc(f.SecurityGroups(), func(g fake.SecurityGroup) bool {
				return g.Name == own && slices.Contains(f.PortSecurityGroups(p), g.ID)
			}) {
				t.Errorf("%s: port %s does not hold ccm's group %s", svc.Name, p, own)
			}
		}
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d creates, %d deletes of serving resources, want 0 and 0", c, d)
	}
	for _, svc := range u.svcs {
		if err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc); err != nil && !isRetry(err) {
			t.Fatal(err)
		}
	}
	for _, g := range f.SecurityGroups() {
		if g.ID != foreignID && strings.HasPrefix(g.Name, "lb-sg-") {
			t.Errorf("group %s (%s) left after the Services were deleted", g.Name, g.Description)
		}
	}
	if !slices.ContainsFunc(f.SecurityGroups(), func(g fake.SecurityGroup) bool { return g.ID == foreignID }) {
		t.Errorf("another cluster's group of the same name was deleted")
	}
}

// Without manage-security-groups, the upstream CCM's group stays while the Service lives (it
// may be what opens the NodePorts), and goes, detached from every port, with the Service.
func TestUpstreamSecurityGroupRemovedWithTheService(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 1, true)
	lb, _ := migrationCloud(t, f, "")
	svc := u.svcs[0]
	ensureUntilReady(t, lb, svc, u.nodes)
	if gs, at := upstreamGroups(f, svc, u.ports); len(gs) != 1 || len(at) != 2 {
		t.Errorf("after a sync without manage-security-groups: upstream's groups %v on %v, want it kept on both ports", gs, at)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc)
		if err == nil {
			break
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if gs, at := upstreamGroups(f, svc, u.ports); len(gs) != 0 || len(at) != 0 {
		t.Errorf("after the delete: upstream's groups %v on ports %v, want none", gs, at)
	}
	if n := len(f.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left", n)
	}
}

// Two Services sharing one load balancer through load-balancer-id, as the upstream CCM leaves
// them (the owner's listener tagged with its name, the other's with its own, both names in the
// load balancer's tags): syncs keep both Services' listeners, writing nothing after the
// takeover; a third Service is refused by max-shared-lb (upstream's default 2), an internal
// one always; the owner's delete removes only its listener, and the last user's delete
// removes the load balancer and its floating IP.
func TestSharedLoadBalancerAsUpstream(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 1, false)
	owner := u.svcs[0]
	guest := upstreamSvc("guest", v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	f.ShareUpstream(u.lbIDs[0], toUpstream(guest, u.nodes, nil))
	adoptedByUpstream(guest, u.lbIDs[0], u.addrs[0])
	lb, sink := migrationCloud(t, f, "")
	ports := func() []int {
		var out []int
		for _, l := range f.LoadBalancers() {
			for _, li := range l.Listeners {
				out = append(out, li.Port)
			}
		}
		return out
	}
	for round := range 2 {
		writes := f.Writes()
		for _, svc := range []*v1.Service{owner, guest, owner} {
			st := ensureUntilReady(t, lb, svc, u.nodes)
			if st.Ingress[0].IP != u.addrs[0] {
				t.Errorf("round %d, %s: address %s, want %s", round, svc.Name, st.Ingress[0].IP, u.addrs[0])
			}
		}
		if got := ports(); !slices.Equal(got, []int{80, 443}) {
			t.Errorf("round %d: listeners on ports %v, want [80 443]", round, got)
		}
		if round == 1 && f.Writes() != writes {
			t.Errorf("the syncs after the takeover made %d writes, want 0 (%s)", f.Writes()-writes, f.CallSummary())
		}
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d creates, %d deletes of serving resources, want 0 and 0 (%s)", c, d, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	for _, svc := range []*v1.Service{owner, guest} {
		if w := warnings(sink, svc); len(w) != 0 {
			t.Errorf("%s: Warnings %q", svc.Name, w)
		}
	}
	third := upstreamSvc("third", v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	third.Annotations[annLoadBalancerID] = u.lbIDs[0]
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, third, u.nodes); err == nil || !strings.Contains(err.Error(), "max-shared-lb") {
		t.Errorf("a third Service: %v, want a refusal naming max-shared-lb", err)
	}
	internal := upstreamSvc("inner", v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	internal.Annotations[annLoadBalancerID], internal.Annotations[annInternal] = u.lbIDs[0], "true"
	lb3, _ := migrationCloud(t, f, "max-shared-lb = 5\n")
	if _, err := lb3.EnsureLoadBalancer(context.Background(), cluster, internal, u.nodes); err == nil || !strings.Contains(err.Error(), "internal Service cannot share") {
		t.Errorf("an internal Service: %v, want a refusal", err)
	}
	if got := ports(); !slices.Equal(got, []int{80, 443}) {
		t.Errorf("after the refusals: listeners on ports %v, want [80 443]", got)
	}
	deleteUntilDone(t, lb, owner)
	if got := ports(); len(f.LoadBalancers()) != 1 || !slices.Equal(got, []int{443}) || len(f.FloatingIPs()) != 1 {
		t.Errorf("after the owner's delete: %d load balancers, listeners %v, %d floating IPs; want the guest's listener on it", len(f.LoadBalancers()), got, len(f.FloatingIPs()))
	}
	if st := ensureUntilReady(t, lb, guest, u.nodes); st.Ingress[0].IP != u.addrs[0] {
		t.Errorf("the guest after the owner left: address %s, want %s", st.Ingress[0].IP, u.addrs[0])
	}
	deleteUntilDone(t, lb, guest)
	if n, m := len(f.LoadBalancers()), len(f.FloatingIPs()); n != 0 || m != 0 {
		t.Errorf("after the last user's delete: %d load balancers, %d floating IPs; want none", n, m)
	}
}

func deleteUntilDone(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc)
		if err == nil {
			return
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatalf("delete %s: %v", svc.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With create-monitor = true, upstream's health monitors (TCP, UDP-CONNECT, and HTTP /healthz
// on the health-check NodePort for externalTrafficPolicy Local, members with monitor_port)
// are what ccm wants: kept, nothing replaced.
func TestUpstreamMonitorsKept(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	tcp := upstreamSvc("mon-tcp")
	udp := upstreamSvc("mon-udp", v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	local := upstreamSvc("mon-local")
	local.Spec.ExternalTrafficPolicy, local.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	// x-forwarded-for: HTTP listener and pool, but upstream's monitor is the port's TCP
	// (buildMonitorCreateOpts); with Local, HTTP /healthz all the same.
	xff := upstreamSvc("mon-xff")
	xff.Annotations[annXForwardedFor] = "true"
	xffLocal := upstreamSvc("mon-xff-local")
	xffLocal.Annotations[annXForwardedFor] = "true"
	xffLocal.Spec.ExternalTrafficPolicy, xffLocal.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32001
	var svcs []*v1.Service
	var addrs []string
	for _, svc := range []*v1.Service{tcp, udp, local, xff, xffLocal} {
		us := toUpstream(svc, u.nodes, nil)
		us.Monitor, us.HealthCheckNodePort = true, int(svc.Spec.HealthCheckNodePort)
		us.XForwardedFor = svc.Annotations[annXForwardedFor] == "true"
		id, addr := f.SeedUpstream(us)
		adoptedByUpstream(svc, id, addr)
		svcs, addrs = append(svcs, svc), append(addrs, addr)
	}
	lb, _ := migrationCloud(t, f, "create-monitor = true\n")
	for i, svc := range svcs {
		if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addrs[i] {
			t.Errorf("%s: address %s, want %s", svc.Name, st.Ingress[0].IP, addrs[i])
		}
	}
	c := f.Calls()
	if cr, d := servingChanges(c); cr != 0 || d != 0 || c["octavia.CreateHealthMonitor"]+c["octavia.UpdateHealthMonitor"]+c["octavia.BatchUpdateMembers"] != 0 {
		t.Errorf("takeover with monitors: %s", f.CallSummary())
	}
	for name, want := range map[string]string{"mon-xff": "TCP", "mon-xff-local": "HTTP"} {
		if l := fakeLB(t, f, name).Listeners[0]; l.Protocol != "HTTP" || l.PoolProtocol != "HTTP" || l.Monitor != want {
			t.Errorf("%s: listener %s, pool %s, monitor %s; want HTTP, HTTP, %s", name, l.Protocol, l.PoolProtocol, l.Monitor, want)
		}
	}
	writes := f.Writes()
	for _, svc := range svcs {
		ensureUntilReady(t, lb, svc, u.nodes)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the sync after the takeover made %d writes (%s)", w, f.CallSummary())
	}
}

// A load balancer as early upstream versions left it (named "a" + the UID, no tags, no
// load-balancer-id annotation on the Service) is found by that name, as upstream still looks
// it up, adopted in place and given the current name; nothing is created or deleted.
func TestEarlyUpstreamNameAdopted(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("early")
	us := toUpstream(svc, u.nodes, nil)
	us.Early = true
	_, addr := f.SeedUpstream(us)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
	lb, sink := migrationCloud(t, f, "")
	if _, exists, err := lb.GetLoadBalancer(context.Background(), cluster, svc); err != nil || !exists {
		t.Errorf("GetLoadBalancer = %v, %v; want it found under its early name", exists, err)
	}
	if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].IP, addr)
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d creates, %d deletes (%s)", c, d, f.CallSummary())
	}
	if got := fakeLB(t, f, "early"); len(got.Listeners) != 1 {
		t.Errorf("after the takeover: %+v", got)
	}
	writes := f.Writes()
	lb2, _ := migrationCloud(t, f, "") // a restart finds it by its current name
	ensureUntilReady(t, lb2, svc, u.nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the sync after the takeover made %d writes (%s)", w, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	if w := warnings(sink, svc); len(w) != 0 {
		t.Errorf("Warnings %q", w)
	}
}

// A floating IP a user allocated and named in spec.loadBalancerIP, which the upstream CCM put
// on the Service's load balancer, is the Service's in use: the takeover keeps it (no
// refusal), and deleting the Service leaves the user's floating IP allocated. Naming it from
// another Service is still refused.
func TestUserFloatingIPOnOwnLoadBalancerKept(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("user-fip")
	svc.Spec.LoadBalancerIP = "172.24.4.77" //nolint:staticcheck // the upstream way to ask for a floating IP
	us := toUpstream(svc, u.nodes, nil)
	us.UserFloatingIP = "172.24.4.77"
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(svc, id, addr)
	lb, _ := migrationCloud(t, f, "")
	if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != "172.24.4.77" {
		t.Errorf("address %v, want the user's floating IP", st.Ingress)
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d creates, %d deletes (%s)", c, d, f.CallSummary())
	}
	thief := upstreamSvc("thief")
	thief.Spec.LoadBalancerIP = "172.24.4.77" //nolint:staticcheck // the upstream way to ask for a floating IP
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, thief, u.nodes); err == nil || !strings.Contains(err.Error(), "does not own") {
		t.Errorf("another Service naming it: %v, want a refusal", err)
	}
	deleteUntilDone(t, lb, svc)
	if fips := f.FloatingIPs(); len(fips) != 1 || fips[0].Address != "172.24.4.77" {
		t.Errorf("after the delete: floating IPs %+v, want the user's kept", fips)
	}
}

// Only a group with upstream's name for the Service (its UID) and upstream's description for
// the cluster and Service is upstream's; names are cut to 255 as upstream cuts them.
func TestUpstreamSGsArePickedByNameAndDescription(t *testing.T) {
	svc := upstreamSvc("web")
	long := upstreamSvc(strings.Repeat("n", 250))
	name, desc := upstreamSGName(svc), upstreamSGDescription(cluster, svc)
	if name != "lb-sg-0b7c3a4e-web-default-web" || desc != "Security Group for default/web Service LoadBalancer in cluster "+cluster {
		t.Errorf("name %q, description %q", name, desc)
	}
	if n := upstreamSGName(long); len(n) != 255 || n != fake.UpstreamSGName(string(long.UID), long.Namespace, long.Name) {
		t.Errorf("a long name is %d characters, want 255 as upstream cuts it", len(n))
	}
	g := func(id, name, desc string) groups.SecGroup {
		return groups.SecGroup{ID: id, Name: name, Description: desc}
	}
	all := []groups.SecGroup{
		g("ok", name, desc),
		g("other-cluster", name, "Security Group for default/web Service LoadBalancer in cluster other"),
		g("other-service", "lb-sg-0b7c3a4e-web-default-api", "Security Group for default/api Service LoadBalancer in cluster "+cluster),
		g("hand-made", name, ""),
		g("ccm", sgName("kube_service_"+cluster+"_default_web"), legacySGDescription(ownership.Of(cluster, svc))),
	}
	if got := upstreamSGs(all, cluster, svc); len(got) != 1 || got[0].ID != "ok" {
		t.Errorf("picked %+v, want only the group with both marks", got)
	}
	noUID := svc.DeepCopy()
	noUID.UID = ""
	if got := upstreamSGs([]groups.SecGroup{g("x", upstreamSGName(noUID), desc)}, cluster, noUID); len(got) != 0 {
		t.Errorf("a Service without a UID picked %+v", got)
	}
}

// A Service of another namespace may not put its listeners on a load balancer of this cluster
// by naming it in load-balancer-id (a namespace is a tenant's boundary; upstream allows it):
// refused, naming the annotation, with nothing written, until the operator allows that
// namespace in [LoadBalancer] allowed-resource-namespaces.
func TestSharingAcrossNamespacesNeedsTheOperator(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 1, false)
	lb, _ := migrationCloud(t, f, "")
	ensureUntilReady(t, lb, u.svcs[0], u.nodes)
	intruder := upstreamSvc("intruder", v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	intruder.Namespace = "tenant-b"
	intruder.Annotations[annLoadBalancerID] = u.lbIDs[0]
	writes := f.Writes()
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, intruder, u.nodes)
	if !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), annLoadBalancerID) {
		t.Errorf("a Service of another namespace: %v, want a refusal naming %s", err, annLoadBalancerID)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the refusal wrote %d times (%s)", w, f.CallSummary())
	}
	allowed, _ := migrationCloud(t, f, "allowed-resource-namespaces = tenant-b\n")
	if st := ensureUntilReady(t, allowed, intruder, u.nodes); st.Ingress[0].IP != u.addrs[0] {
		t.Errorf("allowed: address %s, want %s", st.Ingress[0].IP, u.addrs[0])
	}
	deleteUntilDone(t, allowed, intruder)
	var ports []int
	for _, l := range f.LoadBalancers() {
		for _, li := range l.Listeners {
			ports = append(ports, li.Port)
		}
	}
	if !slices.Equal(ports, []int{80}) {
		t.Errorf("after the allowed Service's delete: listeners on ports %v, want the owner's [80]", ports)
	}
}

// Dual-stack Services the upstream CCM served (one load balancer each, of spec.ipFamilies[0]:
// IPv4 first with a floating IP, or IPv6 first on its VIP) are taken over with 0 creates and
// 0 deletes, the same single address, no Warning and a Normal SingleFamilyLoadBalancer Event;
// the load balancer carries tagSingleFamily, so neither the next sync nor a restart creates
// the second family's. Removing the tag by hand gets it (one create, the first address kept);
// deleting the Service leaves nothing of either.
func TestDualStackTakeoverCreatesNothing(t *testing.T) {
	for _, first := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
		t.Run(string(first), func(t *testing.T) {
			f := newFake(t, fake.Options{})
			u := seedUpstreamCluster(t, f, 0, false)
			for i, n := range u.nodes {
				n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: fmt.Sprintf("fd00::9:%d", i+10)})
			}
			var svcs []*v1.Service
			var addrs, ids []string
			for i := range 3 {
				svc := upstreamSvc(fmt.Sprintf("dual-%d", i))
				svc.Spec.IPFamilies = []v1.IPFamily{first, map[v1.IPFamily]v1.IPFamily{v1.IPv4Protocol: v1.IPv6Protocol, v1.IPv6Protocol: v1.IPv4Protocol}[first]}
				us := toUpstream(svc, u.nodes, nil)
				if first == v1.IPv6Protocol {
					us.IPv6 = true
					for j, n := range u.nodes {
						us.Nodes[n.Name] = fmt.Sprintf("fd00::9:%d", j+10)
					}
				}
				id, addr := f.SeedUpstream(us)
				adoptedByUpstream(svc, id, addr)
				svcs, addrs, ids = append(svcs, svc), append(addrs, addr), append(ids, id)
			}
			lb, sink := migrationCloud(t, f, "")
			for i, svc := range svcs {
				st := ensureUntilReady(t, lb, svc, u.nodes)
				if len(st.Ingress) != 1 || st.Ingress[0].IP != addrs[i] {
					t.Errorf("%s: status %v, want only the upstream address %s", svc.Name, st.Ingress, addrs[i])
				}
				svc.Status.LoadBalancer = *st
			}
			if c, d := servingChanges(f.Calls()); c != 0 || d != 0 {
				t.Errorf("takeover: %d creates, %d deletes of serving resources, want 0 and 0 (%s)", c, d, f.CallSummary())
			}
			if n := len(f.LoadBalancers()); n != 3 {
				t.Errorf("%d load balancers after the takeover, want 3", n)
			}
			for _, l := range f.LoadBalancers() {
				if !slices.Contains(l.Tags, tagSingleFamily) {
					t.Errorf("%s: tags %q lack %s", l.Name, l.Tags, tagSingleFamily)
				}
			}
			for _, svc := range svcs {
				if ok, evs := sink.Await(svc, 3*time.Second, "Normal SingleFamilyLoadBalancer", string(first)+" only", "unset --tag "+tagSingleFamily); !ok {
					t.Errorf("%s: no SingleFamilyLoadBalancer Event: %q", svc.Name, evs)
				}
				if w := warnings(sink, svc); len(w) != 0 {
					t.Errorf("%s: Warnings %q", svc.Name, w)
				}
			}
			writes := f.Writes()
			lb2, _ := migrationCloud(t, f, "") // a restart
			for _, svc := range svcs {
				ensureUntilReady(t, lb, svc, u.nodes)
				ensureUntilReady(t, lb2, svc, u.nodes)
				if err := lb2.UpdateLoadBalancer(context.Background(), cluster, svc, u.nodes); err != nil {
					t.Errorf("%s: UpdateLoadBalancer: %v", svc.Name, err)
				}
			}
			if w := f.Writes() - writes; w != 0 {
				t.Errorf("the syncs after the takeover (and after a restart) made %d writes (%s)", w, f.CallSummary())
			}

			// The operator asks for the second family: the tag goes, the next sync creates it.
			c := newTestCloud(t, f, "")
			cl, err := c.sess.get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := loadbalancers.Get(context.Background(), cl.lb, ids[0]).Extract()
			if err != nil {
				t.Fatal(err)
			}
			tags := slices.DeleteFunc(slices.Clone(got.Tags), func(s string) bool { return s == tagSingleFamily })
			if _, err := loadbalancers.Update(context.Background(), cl.lb, ids[0], loadbalancers.UpdateOpts{Tags: &tags}).Extract(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // PENDING_UPDATE
			creates := f.Calls()["octavia.CreateLoadBalancer"]
			// The first sync may still compare with the bulk read of another Service's sync
			// from before the change by hand (observe.go); the one after reads it again.
			ensureUntilReady(t, lb2, svcs[0], u.nodes)
			st := ensureUntilReady(t, lb2, svcs[0], u.nodes)
			if n := f.Calls()["octavia.CreateLoadBalancer"] - creates; n != 1 {
				t.Errorf("after the tag's removal: %d creates, want 1", n)
			}
			if len(st.Ingress) != 2 || st.Ingress[0].IP != addrs[0] {
				t.Errorf("after the tag's removal: status %v, want %s and the second family's", st.Ingress, addrs[0])
			}
			svcs[0].Status.LoadBalancer = *st
			for _, svc := range svcs {
				deleteUntilDone(t, lb2, svc)
			}
			if left := f.LoadBalancers(); len(left) != 0 {
				t.Errorf("after the deletes: %+v", left)
			}
			if fips := f.FloatingIPs(); len(fips) != 0 {
				t.Errorf("floating IPs left: %+v", fips)
			}
		})
	}
}

// A dual-stack Service created by ccm keeps one load balancer per family: nothing of the
// takeover rule applies to it (no tag, both families served).
func TestDualStackOwnServiceKeepsBothFamilies(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, _ := migrationCloud(t, f, "")
	svc := lbService("own-dual", nil)
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	if st := ensureUntilReady(t, lb, svc, nodes); len(st.Ingress) != 2 {
		t.Errorf("status %v, want two families", st.Ingress)
	}
	for _, l := range f.LoadBalancers() {
		if slices.Contains(l.Tags, tagSingleFamily) {
			t.Errorf("%s carries %s", l.Name, tagSingleFamily)
		}
	}
	if n := len(f.LoadBalancers()); n != 2 {
		t.Errorf("%d load balancers, want 2", n)
	}
}

// The conformance harness seeds dual-stack Services the upstream way too (one load balancer of
// spec.ipFamilies[0] each): taking them over through a harness cloud makes 0 creates and 0
// deletes of serving resources and keeps each address.
func TestHarnessSeedsDualStackUpstream(t *testing.T) {
	h := newHarness(t, "")
	var nodes []*v1.Node
	for i := range 2 {
		n, md := h.AddInstance(t, fmt.Sprintf("ds-node-%d", i))
		n.Status.Addresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: fmt.Sprintf("fd00::7:%d", i+1)})
		nodes = append(nodes, n)
	}
	var svcs []*v1.Service
	for i, fs := range [][]v1.IPFamily{{v1.IPv4Protocol, v1.IPv6Protocol}, {v1.IPv6Protocol, v1.IPv4Protocol}, {v1.IPv4Protocol, v1.IPv6Protocol}} {
		svc := upstreamSvc(fmt.Sprintf("hds-%d", i))
		svc.Spec.IPFamilies = fs
		svcs = append(svcs, svc)
	}
	svcs = h.SeedUpstream(t, cluster, svcs, nodes)
	lb := lbOf(t, h.NewCloud(t))
	for _, svc := range svcs {
		want := svc.Status.LoadBalancer.Ingress[0].IP
		if st := ensureUntilReady(t, lb, svc, nodes); len(st.Ingress) != 1 || st.Ingress[0].IP != want {
			t.Errorf("%s (%v): status %v, want only %s", svc.Name, svc.Spec.IPFamilies, st.Ingress, want)
		}
	}
	if c, d := h.MigrationCounts(); c != 0 || d != 0 {
		t.Errorf("takeover of dual-stack Services: %d creates, %d serving deletes, want 0 and 0 (%s)", c, d, h.fake.CallSummary())
	}
	if v6 := svcs[1].Status.LoadBalancer.Ingress[0].IP; !strings.HasPrefix(v6, "fd00::") {
		t.Errorf("the IPv6-first Service was seeded at %s, want an IPv6 VIP", v6)
	}
}
