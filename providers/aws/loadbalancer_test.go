package aws

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// A classic ELB as the annotations and spec ask: internal subnets, TLS on one port, a Local
// health check, source ranges on its group, only labelled nodes; a removed node is
// deregistered with one write; delete leaves nothing.
func TestClassicELBFromAnnotations(t *testing.T) {
	h := newHarness(t, "classic")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for i, n := range []string{"cl-a", "cl-b", "cl-c"} {
		_, md := h.machine(n)
		pool := "web"
		if i == 2 {
			pool = "db"
		}
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"pool": pool}}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	before := h.fake.Inventory()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shop", Annotations: map[string]string{
		annotations.Prefix + "internal":           "true",
		annotations.Prefix + "ssl-cert":           "arn:aws:acm:us-east-1:1:certificate/x",
		annotations.Prefix + "ssl-ports":          "443",
		annotations.Prefix + "target-node-labels": "pool=web",
	}}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 32000,
		LoadBalancerSourceRanges: []string{"192.0.2.0/24"},
		Ports:                    []v1.ServicePort{{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}, {Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := h.fake.ClassicLB(c.lb.name(svc))
	if !ok {
		t.Fatal("no ELB")
	}
	if e.Scheme != "internal" || !strings.HasPrefix(st.Ingress[0].Hostname, "internal-") || st.Ingress[0].Hostname != strings.ToLower(st.Ingress[0].Hostname) {
		t.Errorf("scheme %s, hostname %s", e.Scheme, st.Ingress[0].Hostname)
	}
	if len(e.Subnets) != 3 {
		t.Errorf("subnets %v, want one internal-elb subnet per zone", e.Subnets)
	}
	wantListeners := []fakeaws.Listener{{Protocol: "SSL", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443, SSLCertificateID: "arn:aws:acm:us-east-1:1:certificate/x"},
		{Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}
	if !slices.Equal(e.Listeners, wantListeners) {
		t.Errorf("listeners %v, want %v", e.Listeners, wantListeners)
	}
	if e.HealthCheck.Target != "HTTP:32000/healthz" {
		t.Errorf("health check %v", e.HealthCheck)
	}
	if len(e.Instances) != 2 {
		t.Errorf("instances %v, want the two pool=web nodes", e.Instances)
	}
	g, _ := h.fake.Group(e.SecurityGroups[0])
	if len(g.Rules) != 2 || g.Rules[0].CIDR != "192.0.2.0/24" {
		t.Errorf("ELB group rules %v, want ports 443 and 80 from 192.0.2.0/24", g.Rules)
	}

	// A node leaves: exactly one write (the deregistration).
	w := h.fake.Writes()
	if err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes[1:]); err != nil {
		t.Fatal(err)
	}
	e, _ = h.fake.ClassicLB(c.lb.name(svc))
	if d := h.fake.Writes() - w; d != 1 || len(e.Instances) != 1 {
		t.Errorf("node removed: %d writes, instances %v; want 1 write, 1 instance", d, e.Instances)
	}

	// A port change is a reconcile of listeners and the group's rules, not a new ELB.
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e2, _ := h.fake.ClassicLB(c.lb.name(svc))
	g, _ = h.fake.Group(e2.SecurityGroups[0])
	if e2.DNSName != e.DNSName || len(e2.Listeners) != 1 || len(g.Rules) != 1 {
		t.Errorf("after the port change: DNS %s (was %s), listeners %v, rules %v", e2.DNSName, e.DNSName, e2.Listeners, g.Rules)
	}

	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if after := h.fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("leftovers:\nbefore %v\nafter  %v", before, after)
	}
}

// A load balancer with the Service's name that this cluster does not own is never touched.
func TestForeignELBIsNotTouched(t *testing.T) {
	h := newHarness(t, "mine")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nil); err != nil {
		t.Fatal(err)
	}
	// Make it foreign: without the cluster's ownership tag, as another tool's ELB would be.
	name := c.lb.name(svc)
	if _, err := c.api.elb.RemoveTags(ctx, removeOwner(name, "mine")); err != nil {
		t.Fatal(err)
	}
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nil); !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), "is not this Service's") {
		t.Errorf("Ensure on a foreign ELB: %v, want a NotOwnedError", err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fake.ClassicLB(name); !ok || h.fake.Writes() != w {
		t.Errorf("the foreign ELB was changed or deleted (exists %v, writes +%d)", ok, h.fake.Writes()-w)
	}
}

func removeOwner(name, cluster string) *elb.RemoveTagsInput {
	return &elb.RemoveTagsInput{LoadBalancerNames: []string{name}, Tags: []elbtypes.TagKeyOnly{{Key: aws.String("kubernetes.io/cluster/" + cluster)}}}
}

// proxy-protocol "*" on a classic ELB: one ProxyProtocolPolicyType policy (ProxyProtocol=true)
// on every backend port; a restart and a repeat cost no write; removing the annotation takes
// the policy off every port; a bad value is refused naming the annotation and changes nothing.
func TestClassicELBProxyProtocol(t *testing.T) {
	h := newHarness(t, "proxy")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	_, md := h.machine("pp-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "pp-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pp", Annotations: map[string]string{annotations.Prefix + "proxy-protocol": "*"}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{{Name: "a", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}, {Name: "b", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	name := c.lb.name(svc)
	calls := func(op string) int { return h.fake.Operations()["elb:"+op] }
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, _ := h.fake.ClassicLB(name)
	p, ok := e.Policies[elbplan.ProxyPolicyName]
	if !ok || p.Type != "ProxyProtocolPolicyType" || p.Attributes["ProxyProtocol"] != "true" {
		t.Fatalf("policies %+v, want %s of type ProxyProtocolPolicyType with ProxyProtocol=true", e.Policies, elbplan.ProxyPolicyName)
	}
	for _, port := range []int{30443, 30080} {
		if !slices.Equal(e.BackendPolicies[port], []string{elbplan.ProxyPolicyName}) {
			t.Errorf("backend port %d policies %v, want [%s]", port, e.BackendPolicies[port], elbplan.ProxyPolicyName)
		}
	}
	// The policy as ELB's own API describes it, through the SDK.
	dp, err := c.api.elb.DescribeLoadBalancerPolicies(ctx, &elb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: aws.String(name)})
	if err != nil || len(dp.PolicyDescriptions) != 1 || aws.ToString(dp.PolicyDescriptions[0].PolicyTypeName) != "ProxyProtocolPolicyType" ||
		len(dp.PolicyDescriptions[0].PolicyAttributeDescriptions) != 1 || aws.ToString(dp.PolicyDescriptions[0].PolicyAttributeDescriptions[0].AttributeValue) != "true" {
		t.Errorf("DescribeLoadBalancerPolicies: %+v, %v", dp, err)
	}
	if n := calls("CreateLoadBalancerPolicy"); n != 1 {
		t.Errorf("CreateLoadBalancerPolicy called %d times, want 1", n)
	}

	// Same cloud again, then a restart (a new Cloud): no write at all.
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	c2 := h.cloud(t, "")
	lb2, _ := c2.LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("unchanged proxy-protocol: %d writes, want 0", d)
	}

	// A new port while enabled: the policy goes on it too, with one Set call, no new policy.
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "c", Port: 8080, NodePort: 30808, Protocol: v1.ProtocolTCP})
	set := calls("SetLoadBalancerPoliciesForBackendServer")
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, _ = h.fake.ClassicLB(name)
	if !slices.Equal(e.BackendPolicies[30808], []string{elbplan.ProxyPolicyName}) || calls("SetLoadBalancerPoliciesForBackendServer")-set != 1 || calls("CreateLoadBalancerPolicy") != 1 {
		t.Errorf("new port: backend policies %v, Set calls +%d, Create calls %d; want the policy on 30808, +1, 1",
			e.BackendPolicies, calls("SetLoadBalancerPoliciesForBackendServer")-set, calls("CreateLoadBalancerPolicy"))
	}

	// A bad value: refused naming the annotation, nothing changed.
	svc.Annotations[annotations.Prefix+"proxy-protocol"] = "v2"
	w = h.fake.Writes()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+"proxy-protocol") {
		t.Errorf("proxy-protocol=v2: error %v, want one naming the annotation", err)
	}
	if e2, _ := h.fake.ClassicLB(name); h.fake.Writes() != w || len(e2.BackendPolicies) != 3 || e2.DNSName != e.DNSName {
		t.Errorf("bad value changed the cloud: writes +%d, backend policies %v", h.fake.Writes()-w, e2.BackendPolicies)
	}

	// Annotation removed: the policy comes off every port, one Set call per port, same ELB.
	delete(svc.Annotations, annotations.Prefix+"proxy-protocol")
	set = calls("SetLoadBalancerPoliciesForBackendServer")
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e2, _ := h.fake.ClassicLB(name)
	if len(e2.BackendPolicies) != 0 || calls("SetLoadBalancerPoliciesForBackendServer")-set != 3 || e2.DNSName != e.DNSName {
		t.Errorf("disabled: backend policies %v, Set calls +%d; want none, +3", e2.BackendPolicies, calls("SetLoadBalancerPoliciesForBackendServer")-set)
	}
	// And disabled stays at zero writes after a restart.
	w = h.fake.Writes()
	c3 := h.cloud(t, "")
	lb3, _ := c3.LoadBalancer()
	if _, err := lb3.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("disabled, restart: %d writes, want 0", d)
	}
}

// A CreateLoadBalancer whose answer is lost (done, then a 500) is retried by the SDK and meets
// DuplicateLoadBalancerName: the ccm carries on with its own ELB instead of failing the sync.
func TestClassicELBCreateAnswerLost(t *testing.T) {
	h := newHarness(t, "mine")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lost"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30081, Protocol: v1.ProtocolTCP}}}}
	h.fake.SetFaults(fakeaws.Faults{LoseAnswers: map[string]int{"CreateLoadBalancer": 1}})
	st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nil)
	if err != nil {
		t.Fatalf("Ensure with a lost create answer: %v", err)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].Hostname == "" {
		t.Errorf("status = %+v, want the ELB's DNS name", st)
	}
	if n := h.fake.Calls()["elb:CreateLoadBalancer"]; n != 2 {
		t.Errorf("CreateLoadBalancer calls = %d, want 2 (the lost one and the duplicate)", n)
	}
	if names := h.fake.ClassicLBNames(); len(names) != 1 {
		t.Errorf("ELBs = %v, want exactly one", names)
	}
}
