package openstack

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

const cluster = "kubernetes"

func lbService(name string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}
	}
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports, IPFamilies: []v1.IPFamily{v1.IPv4Protocol}}}
}

func lbNodes(ips ...string) []*v1.Node {
	var out []*v1.Node
	for i, ip := range ips {
		n := node("node-"+string(rune('a'+i)), "")
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
		out = append(out, n)
	}
	return out
}

func isRetry(err error) bool {
	var r *api.RetryError
	return errors.As(err, &r)
}

func lbOf(t *testing.T, c cloudprovider.Interface) cloudprovider.LoadBalancer {
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer")
	}
	return lb
}

// ensureUntilReady calls Ensure as the service controller would, honouring RetryErrors.
func ensureUntilReady(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
		if err == nil {
			return st
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatalf("EnsureLoadBalancer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fakeLB(t *testing.T, f *fake.Cloud, svcName string) fake.LoadBalancer {
	t.Helper()
	for _, lb := range f.LoadBalancers() {
		if lb.Name == "kube_service_"+cluster+"_default_"+svcName {
			return lb
		}
	}
	t.Fatalf("no load balancer for %s", svcName)
	return fake.LoadBalancer{}
}

// A load balancer still provisioning costs the caller one quick call and a RetryError, not a
// wait; the next pass finishes the job.
func TestPendingDoesNotBlock(t *testing.T) {
	f := newFake(t, fake.Options{ProvisionDelay: 700 * time.Millisecond})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc, nodes := lbService("web", nil), lbNodes("10.0.0.5", "10.0.0.6")
	start := time.Now()
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if !isRetry(err) {
		t.Fatalf("first Ensure = %v, want a RetryError", err)
	}
	// The fault harnesses tell a planned re-check from a failure by its wording.
	if msg := "Error syncing load balancer: failed to ensure load balancer: " + err.Error(); !testenv.IsRecheck("openstack", msg) {
		t.Errorf("%q is not read as a planned re-check", msg)
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Errorf("Ensure of a PENDING_CREATE load balancer took %v", d)
	}
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 1 {
		t.Errorf("creates = %d", n)
	}
	// Still pending: another RetryError and no second create.
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); !isRetry(err) {
		t.Fatalf("second Ensure = %v, want a RetryError", err)
	}
	st := ensureUntilReady(t, lb, svc, nodes)
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 1 {
		t.Errorf("creates = %d, want 1 (fully populated, never repeated)", n)
	}
	got := fakeLB(t, f, "web")
	if len(got.Listeners) != 1 || !slices.Equal(got.Listeners[0].Members, []string{"10.0.0.5:30080", "10.0.0.6:30080"}) {
		t.Errorf("listeners = %+v", got.Listeners)
	}
	if !strings.HasPrefix(st.Ingress[0].IP, "172.24.4.") {
		t.Errorf("ingress %v is not a floating IP", st.Ingress)
	}
	for _, op := range []string{"octavia.CreateListener", "octavia.BatchUpdateMembers"} {
		if n := f.Calls()[op]; n != 0 {
			t.Errorf("%s called %d times after a fully populated create", op, n)
		}
	}
}

// A new load balancer missing from lists for a while (eventual consistency) is not created twice.
func TestListLagDoesNotDuplicate(t *testing.T) {
	f := newFake(t, fake.Options{ProvisionDelay: 200 * time.Millisecond, ListLag: 5 * time.Second})
	lb := lbOf(t, newTestCloud(t, f, ""))
	ensureUntilReady(t, lb, lbService("web", nil), lbNodes("10.0.0.5"))
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 1 {
		t.Errorf("creates = %d, want 1", n)
	}
}

func TestErrorIsRecreated(t *testing.T) {
	f := newFake(t, fake.Options{})
	f.ErrorNextCreates(1)
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc, nodes := lbService("web", nil), lbNodes("10.0.0.5")
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if !isRetry(err) || !strings.Contains(err.Error(), "ERROR") {
		t.Fatalf("Ensure of an ERROR load balancer = %v, want a RetryError naming ERROR", err)
	}
	st := ensureUntilReady(t, lb, svc, nodes)
	if c := f.Calls(); c["octavia.CreateLoadBalancer"] != 2 || c["octavia.DeleteLoadBalancer"] != 1 {
		t.Errorf("creates/deletes = %d/%d, want 2/1", c["octavia.CreateLoadBalancer"], c["octavia.DeleteLoadBalancer"])
	}
	if got := fakeLB(t, f, "web"); got.Status != "ACTIVE" || st.Ingress[0].IP == "" {
		t.Errorf("after recreate: %s %v", got.Status, st.Ingress)
	}
}

func TestUpdateMembersOneBatchPerPool(t *testing.T) {
	f := newFake(t, fake.Options{UpdateDelay: 50 * time.Millisecond})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("mixed", nil,
		v1.ServicePort{Name: "dns-tcp", Port: 53, NodePort: 30053, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "dns-udp", Port: 53, NodePort: 30054, Protocol: v1.ProtocolUDP})
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	before := f.Calls()["octavia.BatchUpdateMembers"]
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7")); err != nil {
		t.Fatal(err)
	}
	if n := f.Calls()["octavia.BatchUpdateMembers"] - before; n != 2 {
		t.Errorf("batch member updates = %d, want 2 (one per pool)", n)
	}
	got := fakeLB(t, f, "mixed")
	if len(got.Listeners) != 2 || got.Listeners[0].Protocol == got.Listeners[1].Protocol {
		t.Fatalf("want a TCP and a UDP listener: %+v", got.Listeners)
	}
	for _, l := range got.Listeners {
		if len(l.Members) != 3 {
			t.Errorf("%s members = %v", l.Protocol, l.Members)
		}
	}
	writes := f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6", "10.0.0.7")); err != nil {
		t.Fatal(err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("unchanged update made %d writes", w)
	}
}

func TestPortChangeReplacesOnlyThatListener(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("web", nil, v1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "b", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	nodes := lbNodes("10.0.0.5")
	ensureUntilReady(t, lb, svc, nodes)
	svc.Spec.Ports[1].Port = 8443
	ensureUntilReady(t, lb, svc, nodes)
	c := f.Calls()
	if c["octavia.DeleteListener"] != 1 || c["octavia.CreateListener"] != 1 {
		t.Errorf("listener deletes/creates = %d/%d, want 1/1", c["octavia.DeleteListener"], c["octavia.CreateListener"])
	}
	got := fakeLB(t, f, "web")
	if len(got.Listeners) != 2 || got.Listeners[0].Port != 80 || got.Listeners[1].Port != 8443 {
		t.Errorf("listeners = %+v", got.Listeners)
	}
}

func TestBusyLoadBalancerIsARetry(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("web", nil)
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	f.SetFault("octavia.BatchUpdateMembers", fake.Fault{Status: 409, Count: 1})
	err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6"))
	if !isRetry(err) {
		t.Fatalf("409 = %v, want a RetryError", err)
	}
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6")); err != nil {
		t.Fatalf("after the conflict: %v", err)
	}
}

func TestHealthMonitorForLocalTraffic(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("local", map[string]string{annHealthMonitor: "true", annLBMethod: "SOURCE_IP", annProxyProtocol: "v2"})
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	l := fakeLB(t, f, "local").Listeners[0]
	if l.Monitor != "HTTP" || l.Method != "SOURCE_IP" || l.PoolProtocol != "PROXYV2" {
		t.Errorf("listener = %+v, want HTTP monitor, SOURCE_IP, PROXYV2", l)
	}
}

func TestFloatingIPOwnership(t *testing.T) {
	f := newFake(t, fake.Options{})
	// A floating IP allocated by hand is used only when the operator allows it (issue 14).
	lb := lbOf(t, newTestCloud(t, f, "allowed-resource-ids = 172.24.4.50\n"))
	ctx := context.Background()
	nodes := lbNodes("10.0.0.5")

	// Allocated by us: released with the load balancer.
	ours := lbService("ours", nil)
	st := ensureUntilReady(t, lb, ours, nodes)
	// Given as spec.loadBalancerIP, allocated by the user: kept.
	userFIP := "172.24.4.50"
	f.AddFloatingIP(userFIP)
	theirs := lbService("theirs", nil)
	theirs.Spec.LoadBalancerIP = userFIP
	if st := ensureUntilReady(t, lb, theirs, nodes); st.Ingress[0].IP != userFIP {
		t.Fatalf("ingress %v, want %s", st.Ingress, userFIP)
	}
	// Allocated by us but keep-floatingip: kept.
	kept := lbService("kept", map[string]string{annKeepFloatingIP: "true"})
	keptSt := ensureUntilReady(t, lb, kept, nodes)
	// keep-floatingip: "True" is not upstream's "true" (getBoolFromServiceAnnotation): released,
	// as upstream releases it (the syncs before warned of the value).
	notKept := lbService("not-kept", map[string]string{annKeepFloatingIP: "True"})
	notKeptSt := ensureUntilReady(t, lb, notKept, nodes)

	for _, s := range []*v1.Service{ours, theirs, kept, notKept} {
		if err := lb.EnsureLoadBalancerDeleted(ctx, cluster, s); err != nil {
			t.Fatalf("delete %s: %v", s.Name, err)
		}
	}
	have := map[string]bool{}
	for _, fip := range f.FloatingIPs() {
		have[fip.Address] = true
		if fip.PortID != "" {
			t.Errorf("floating IP %s still associated with %s", fip.Address, fip.PortID)
		}
	}
	if have[st.Ingress[0].IP] || have[notKeptSt.Ingress[0].IP] {
		t.Errorf("our floating IPs %s and %s (keep-floatingip: True) were not both released", st.Ingress[0].IP, notKeptSt.Ingress[0].IP)
	}
	if !have[userFIP] || !have[keptSt.Ingress[0].IP] {
		t.Errorf("floating IPs left %v, want %s and %s kept", have, userFIP, keptSt.Ingress[0].IP)
	}
	if n := len(f.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left", n)
	}
}

func TestInternalUsesVIP(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("int", map[string]string{annInternal: "true"})
	st := ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	if !strings.HasPrefix(st.Ingress[0].IP, "10.0.") || len(f.FloatingIPs()) != 0 {
		t.Errorf("internal: ingress %v, floating IPs %v", st.Ingress, f.FloatingIPs())
	}
}

func TestAnnotationWarnings(t *testing.T) {
	c, _ := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = s\n"))
	svc := lbService("w", map[string]string{annLBMethod: "FASTEST", annKeepFloatingIP: "maybe", annPrefix + "no-such-setting": "x", annProxyProtocol: "v3"})
	spec, err := c.lb.spec("n", svc)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(spec.warnings, "\n")
	for _, want := range []string{annLBMethod, annKeepFloatingIP, annPrefix + "no-such-setting", annProxyProtocol} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %s:\n%s", want, all)
		}
	}
	if spec.listeners[0].Method != "ROUND_ROBIN" || spec.keepFIP {
		t.Errorf("bad values did not fall back to defaults: %+v", spec)
	}
	svc.Annotations = map[string]string{annClass: "nope"}
	if _, err := c.lb.spec("n", svc); err == nil || !strings.Contains(err.Error(), annClass) {
		t.Errorf("unknown class: %v", err)
	}
}

func TestClassChoosesNetworks(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "\n[LoadBalancerClass \"internal-net\"]\nsubnet-id = "+fake.PrivateSubnetID+"\nfloating-network-id = "+fake.PublicNetworkID+"\n")
	svc := lbService("cls", map[string]string{annClass: "internal-net"})
	st := ensureUntilReady(t, lbOf(t, c), svc, lbNodes("10.0.0.5"))
	if !strings.HasPrefix(st.Ingress[0].IP, "172.24.4.") {
		t.Errorf("ingress %v", st.Ingress)
	}
}

// A dual-stack Service gets one load balancer per family: IPv4 behind a floating IP, IPv6 on
// its routed VIP, each with the nodes' addresses of its family. Turning dual-stack off drops
// the second one; deleting the Service deletes both.
func TestDualStackOneLoadBalancerPerFamily(t *testing.T) {
	f := newFake(t, fake.Options{ProvisionDelay: 300 * time.Millisecond})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("dual", nil)
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	for i, n := range nodes {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::" + string(rune('5'+i))})
	}
	start := time.Now()
	st := ensureUntilReady(t, lb, svc, nodes)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("two families took %v with a 300ms provisioning delay", d)
	}
	if len(st.Ingress) != 2 || !strings.HasPrefix(st.Ingress[0].IP, "172.24.4.") || !strings.HasPrefix(st.Ingress[1].IP, "fd00::") {
		t.Fatalf("ingress = %v, want a floating IPv4 then an IPv6 VIP", st.Ingress)
	}
	v6 := fakeLB(t, f, "dual_ipv6")
	if !slices.Equal(v6.Listeners[0].Members, []string{"fd00::5:30080", "fd00::6:30080"}) {
		t.Errorf("IPv6 members = %v", v6.Listeners[0].Members)
	}
	if v4 := fakeLB(t, f, "dual"); !slices.Equal(v4.Listeners[0].Members, []string{"10.0.0.5:30080", "10.0.0.6:30080"}) {
		t.Errorf("IPv4 members = %v", v4.Listeners[0].Members)
	}
	if n := len(f.FloatingIPs()); n != 1 {
		t.Errorf("%d floating IPs, want 1 (IPv4 only)", n)
	}
	if _, exists, err := lb.GetLoadBalancer(context.Background(), cluster, svc); err != nil || !exists {
		t.Errorf("GetLoadBalancer = %v, %v", exists, err)
	}

	single := svc.DeepCopy()
	single.Spec.IPFamilies = single.Spec.IPFamilies[:1]
	single.Status.LoadBalancer = *st
	if st := ensureUntilReady(t, lb, single, nodes); len(st.Ingress) != 1 {
		t.Errorf("single-stack ingress = %v", st.Ingress)
	}
	for _, l := range f.LoadBalancers() {
		if strings.HasSuffix(l.Name, "_ipv6") && l.Status != "PENDING_DELETE" {
			t.Errorf("IPv6 load balancer %s still %s after dual-stack was turned off", l.Name, l.Status)
		}
	}

	ensureUntilReady(t, lb, svc, nodes)
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc)
		if err == nil {
			break
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatalf("delete: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(f.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left after delete", n)
	}
}

// Listeners made by the upstream CCM (same port and pool settings, no fingerprint of ours) are
// adopted with one description update, not deleted and recreated.
func TestMigratedListenersAdopted(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("legacy", nil)
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	f.ForgetListenerDescriptions("kube_service_" + cluster + "_default_legacy")
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	c := f.Calls()
	if c["octavia.UpdateListener"] != 1 || c["octavia.DeleteListener"] != 0 || c["octavia.CreateListener"] != 0 {
		t.Errorf("update/delete/create listener = %d/%d/%d, want 1/0/0", c["octavia.UpdateListener"], c["octavia.DeleteListener"], c["octavia.CreateListener"])
	}
	writes := f.Writes()
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("after adoption, Ensure made %d writes", w)
	}
}

// A provider that cannot create populated load balancers gets a bare one, then the listeners
// one by one once it is ACTIVE.
func TestSerialCreateFallback(t *testing.T) {
	f := newFake(t, fake.Options{NoFullyPopulated: true, ProvisionDelay: 100 * time.Millisecond, UpdateDelay: 20 * time.Millisecond})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("serial", nil, v1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	c := f.Calls()
	if c["octavia.CreateLoadBalancer"] != 2 || c["octavia.CreateListener"] != 2 {
		t.Errorf("creates: load balancer %d (want 2: refused, bare), listeners %d (want 2)", c["octavia.CreateLoadBalancer"], c["octavia.CreateListener"])
	}
	if got := fakeLB(t, f, "serial"); len(got.Listeners) != 2 || len(got.Listeners[0].Members) != 1 {
		t.Errorf("listeners = %+v", got.Listeners)
	}
	// The fallback is this load balancer's only: the next Service's create is tried populated
	// again (another Octavia provider or flavor may take it), never the whole process switched.
	ensureUntilReady(t, lb, lbService("serial-2", nil), lbNodes("10.0.0.5"))
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 4 {
		t.Errorf("load balancer creates after a second Service = %d, want 4 (refused, bare)", n)
	}
}

// provider-requires-serial-api-calls = true, as upstream: the load balancer is created bare even
// where Octavia would take it populated, and its listeners, pools, monitors and members come
// one call at a time; a second sync writes nothing.
func TestProviderRequiresSerialAPICalls(t *testing.T) {
	f := newFake(t, fake.Options{ProvisionDelay: 50 * time.Millisecond, UpdateDelay: 10 * time.Millisecond})
	lb := lbOf(t, newTestCloud(t, f, "provider-requires-serial-api-calls = true\ncreate-monitor = true\n"))
	svc := lbService("serial", nil, v1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "b", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	ensureUntilReady(t, lb, svc, nodes)
	c := f.Calls()
	if c["octavia.CreateLoadBalancer"] != 1 || c["octavia.CreateListener"] != 2 || c["octavia.CreatePool"] != 2 || c["octavia.CreateHealthMonitor"] != 2 {
		t.Errorf("creates: load balancer %d (want 1, bare), listeners %d, pools %d, monitors %d (want 2 each): %s",
			c["octavia.CreateLoadBalancer"], c["octavia.CreateListener"], c["octavia.CreatePool"], c["octavia.CreateHealthMonitor"], f.CallSummary())
	}
	got := fakeLB(t, f, "serial")
	if len(got.Listeners) != 2 || len(got.Listeners[0].Members) != 2 || len(got.Listeners[1].Members) != 2 {
		t.Errorf("listeners = %+v", got.Listeners)
	}
	writes := f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("a second sync wrote %d times (%s)", w, f.CallSummary())
	}
}

// load-balancer-id of a load balancer the operator allowed: our listener goes onto the user's
// load balancer, and deleting the Service removes only what we added.
func TestAdoptedLoadBalancer(t *testing.T) {
	f := newFake(t, fake.Options{})
	id := f.AddLoadBalancer("users-lb")
	lb := lbOf(t, newTestCloud(t, f, "allowed-resource-ids = "+id+"\n"))
	svc := lbService("adopt", map[string]string{annLoadBalancerID: id, annInternal: "true"})
	st := ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	got := f.LoadBalancers()
	if len(got) != 1 || got[0].ID != id || len(got[0].Listeners) != 1 || st.Ingress[0].IP != got[0].VipAddress {
		t.Fatalf("load balancers %+v, status %v", got, st.Ingress)
	}
	if err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc); err != nil {
		t.Fatal(err)
	}
	got = f.LoadBalancers()
	if len(got) != 1 || len(got[0].Listeners) != 0 {
		t.Errorf("after delete: %+v, want the user's load balancer without our listener", got)
	}
}

// A Node change that meets a Service whose load balancer is not created yet is no error (its
// pending create uses the Nodes of that moment) and writes nothing; a Service that has an
// address but no load balancer (deleted behind our back) gets it back (drift_test.go).
func TestUpdateBeforeCreate(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	svc := lbService("early", nil, v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP})
	writes := f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5")); err != nil {
		t.Errorf("update before the create: %v, want none", err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("update before the create made %d writes", w)
	}
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "172.24.4.10"}}
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5")); err != nil && !isRetry(err) {
		t.Errorf("update of a Service whose load balancer vanished: %v, want it created again", err)
	}
	if n := len(f.LoadBalancers()); n != 1 {
		t.Errorf("%d load balancers after the update of a Service whose load balancer vanished, want 1", n)
	}
}

// An unsupported annotation is advice about the Service's own spec: one Warning, not one per
// sync (a resync of an unchanged Service must write nothing, Events included; client-go folds
// repeats into one Event object, but each repeat is still a write).
func TestUnsupportedAnnotationWarnedOnce(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "")
	svc := lbService("adv", map[string]string{annPrefix + "no-such-setting": "x"})
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	if ok, evs := sink.Await(svc, 5*time.Second, "UnsupportedAnnotation", "no-such-setting"); !ok {
		t.Fatalf("no UnsupportedAnnotation Warning naming no-such-setting: %q", evs)
	}
	before := sink.Writes()
	for range 3 {
		ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	}
	time.Sleep(300 * time.Millisecond) // the broadcaster delivers asynchronously
	if w := sink.Writes() - before; w != 0 {
		t.Errorf("3 more syncs of the unchanged Service wrote %d Events (%q), want 0", w, sink.On(svc))
	}
}

// A Service's spec.loadBalancerClass naming a [LoadBalancerClass] section chooses it, as the
// upstream class annotation does (a ccm run with --load-balancer-class of that name serves it);
// a class with no section takes the defaults; the annotation wins, with a Warning, when both
// name a section.
func TestSpecClassChoosesSection(t *testing.T) {
	cfg := "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = default-subnet\n" +
		"[LoadBalancerClass \"example.com/internal\"]\nsubnet-id = internal-subnet\n" +
		"[LoadBalancerClass \"other\"]\nsubnet-id = other-subnet\n"
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	class := func(name string) func(*v1.Service) { return func(s *v1.Service) { s.Spec.LoadBalancerClass = &name } }
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		mod      func(*v1.Service)
		subnet   string
		warnPart string
	}{
		{"no class", nil, func(*v1.Service) {}, "default-subnet", ""},
		{"spec class with a section", nil, class("example.com/internal"), "internal-subnet", ""},
		{"spec class without a section", nil, class("example.com/vip"), "default-subnet", ""},
		{"annotation wins", map[string]string{annClass: "other"}, class("example.com/internal"), "other-subnet", "wins over spec.loadBalancerClass"},
	} {
		svc := lbService("c", tc.ann)
		tc.mod(svc)
		spec, err := c.lb.spec("n", svc)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if spec.subnetID != tc.subnet {
			t.Errorf("%s: subnet %q, want %q", tc.name, spec.subnetID, tc.subnet)
		}
		if w := strings.Join(spec.warnings, "\n"); (tc.warnPart == "") != (w == "") || !strings.Contains(w, tc.warnPart) {
			t.Errorf("%s: warnings %q, want one with %q", tc.name, w, tc.warnPart)
		}
	}
}
