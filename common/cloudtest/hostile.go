package cloudtest

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// HostileHarness is what the hostile-tenant group needs from a simulator on top of Harness.
// The group plays two clusters in one cloud account, project or vCenter: a victim with a
// working load balancer, and an attacker whose tenants write hostile Services.
type HostileHarness interface {
	Harness
	// NewCloudFor returns a cloud of cluster clusterName (its own cluster ID where the provider
	// takes it from config) on the same simulator as every other cloud of the harness.
	NewCloudFor(t T, clusterName string) cloudprovider.Interface
	// HostileCases seeds the simulator with objects ccm did not create (as an operator or
	// another tool would) and returns the attacks a tenant of attacker can write against them
	// and against victim's load balancer for victimSvc. Every attack must be refused.
	HostileCases(t T, victim string, victimSvc *v1.Service, attacker string) []HostileCase
	// Snapshot is every load-balancing object the simulator holds (load balancers, listeners,
	// pools, members, monitors, target groups, security groups and their rules, floating IPs,
	// address records), with their settings and tags, in a canonical text: equal snapshots
	// mean nothing was created, changed or deleted.
	Snapshot(t T) string
}

// AttackService is the attacking tenant's Service for case i of HostileCases (before the case's
// annotations and Mutate): harnesses seed objects under the names ccm computes for it.
func AttackService(i int) *v1.Service { return attackService("attack", i) }

// attackService is the attacking tenant's Service of case i of a group whose Services are
// named prefix-i (the generated group's differ from HostileCases', whose harnesses seed
// objects under the names ccm computes for them).
func attackService(prefix string, i int) *v1.Service {
	return sameNamedService("tenant", fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("uid-%s-%d", prefix, i))
}

// HostileCase is one attack: a Service of the attacking cluster with these annotations (and
// Mutate applied) asks ccm to use or change an object it does not own.
type HostileCase struct {
	Name        string
	Annotations map[string]string
	Mutate      func(svc *v1.Service) // optional: spec fields, e.g. loadBalancerIP
	// Reason is a part of the refusal's text that says why (it reaches the Service as the
	// Warning Event the library makes of the error).
	Reason string
}

const (
	victimCluster   = "cloudtest-victim"
	attackerCluster = "cloudtest-attacker"
	victimNamespace = "victim-ns"
)

func hostile(t T, c Config) HostileHarness {
	t.Helper()
	h, ok := c.Harness.(HostileHarness)
	if !ok {
		t.Fatalf("the harness does not implement cloudtest.HostileHarness")
	}
	return h
}

// sameNamedService returns a Service that looks the same in any cluster: namespace, name and
// nodePorts; only the UID (which the API server makes) differs.
func sameNamedService(namespace, name, uid string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)},
		Spec: v1.ServiceSpec{
			Type:       v1.ServiceTypeLoadBalancer,
			Ports:      []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}},
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
		},
	}
}

// victimSetUp creates the victim cluster's load balancer and returns its cloud, Service,
// Nodes and status.
func victimSetUp(t T, c Config, h HostileHarness, name string) (cloudprovider.LoadBalancer, *v1.Service, []*v1.Node, *v1.LoadBalancerStatus) {
	t.Helper()
	lb := loadBalancer(t, h.NewCloudFor(t, victimCluster))
	nodes := twoNodes(t, Config{Harness: h, Pending: c.Pending}, "cloudtest-victim-"+name)
	svc := sameNamedService(victimNamespace, name, "uid-victim-"+name)
	st := ensure(t, lb, Config{Harness: h, ClusterName: victimCluster, Pending: c.Pending}, svc, nodes)
	svc.Status.LoadBalancer = *st
	return lb, svc, nodes, st
}

// victimUntouched checks the victim's load balancer is still there, unchanged, and that its
// own ensure finds nothing to write.
func victimUntouched(t T, h HostileHarness, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node, st *v1.LoadBalancerStatus) {
	t.Helper()
	before := h.Writes()
	again := ensure(t, lb, Config{Harness: h, ClusterName: victimCluster}, svc, nodes)
	if w := h.Writes() - before; w != 0 {
		t.Errorf("the victim's own ensure after the attacks made %d writes, want 0: the attacker changed its load balancer", w)
	}
	if !equality.Semantic.DeepEqual(again.Ingress, st.Ingress) {
		t.Errorf("the victim's address changed: %v -> %v", st.Ingress, again.Ingress)
	}
}

// leaks reports names of the victim that a refusal shown to the attacker's tenant must not
// carry, apart from inside what the tenant wrote itself (an object ID may hold a cluster name).
func leaks(err error, svc *v1.Service) string {
	text := err.Error()
	for _, v := range svc.Annotations {
		text = strings.ReplaceAll(text, v, "")
		// and each piece of it (a tag key, a list item), which an error may quote on its own
		for _, piece := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '=' || r == ' ' }) {
			text = strings.ReplaceAll(text, piece, "")
		}
	}
	for _, s := range []string{victimCluster, victimNamespace} {
		if strings.Contains(text, s) {
			return s
		}
	}
	return ""
}

func hostileRefused(t T, c Config) {
	h := hostile(t, c)
	vlb, vsvc, vnodes, vst := victimSetUp(t, c, h, "shop")
	cases := h.HostileCases(t, victimCluster, vsvc, attackerCluster)
	if len(cases) == 0 {
		t.Fatalf("HostileCases returned no attack")
	}
	attack(t, c, h, "cloudtest-attacker", "attack", cases)
	victimUntouched(t, h, vlb, vsvc, vnodes, vst)
}

// attack runs each case as a Service of the attacking cluster: every ensure must be refused
// with its Reason, and nothing the attacker does not own may change at the simulator.
func attack(t T, c Config, h HostileHarness, nodePrefix, svcPrefix string, cases []HostileCase) {
	before := h.Snapshot(t)
	alb := loadBalancer(t, h.NewCloudFor(t, attackerCluster))
	anodes := twoNodes(t, c, nodePrefix)
	ac := Config{Harness: h, ClusterName: attackerCluster, Pending: c.Pending}
	for i, hc := range cases {
		svc := attackService(svcPrefix, i)
		svc.Annotations = hc.Annotations
		if hc.Mutate != nil {
			hc.Mutate(svc)
		}
		_, err := alb.EnsureLoadBalancer(ctx, ac.ClusterName, svc, anodes)
		switch {
		case err == nil:
			t.Errorf("%s: EnsureLoadBalancer accepted the attack (annotations %.300v)", hc.Name, hc.Annotations)
		case !strings.Contains(err.Error(), hc.Reason):
			t.Errorf("%s: refused, but the error does not say why (want %q): %.500v", hc.Name, hc.Reason, err)
		case leaks(err, svc) != "":
			t.Errorf("%s: the refusal names the victim's %q to the attacking tenant: %v", hc.Name, leaks(err, svc), err)
		default:
			t.Logf("%s: refused: %.300v", hc.Name, err)
		}
		if err := alb.UpdateLoadBalancer(ctx, ac.ClusterName, svc, anodes[:1]); err == nil {
			t.Logf("%s: UpdateLoadBalancer returned nil", hc.Name)
		}
		// Deleting the tenant's Service must remove only what ccm made for it: nothing here.
		if err := again(c, func() error { return alb.EnsureLoadBalancerDeleted(ctx, ac.ClusterName, svc) }); err != nil {
			t.Logf("%s: EnsureLoadBalancerDeleted: %v", hc.Name, err)
		}
	}
	if after := h.Snapshot(t); after != before {
		t.Errorf("the attacks changed objects ccm does not own:\n%s", diffLines(before, after))
	}
}

func twoClusters(t T, c Config) {
	h := hostile(t, c)
	vlb, vsvc, vnodes, vst := victimSetUp(t, c, h, "web")
	before := h.Snapshot(t)
	alb := loadBalancer(t, h.NewCloudFor(t, attackerCluster))
	anodes := twoNodes(t, c, "cloudtest-twin")
	ac := Config{Harness: h, ClusterName: attackerCluster, Pending: c.Pending}
	twin := sameNamedService(victimNamespace, "web", "uid-twin-web")
	st := ensure(t, alb, ac, twin, anodes)
	if equality.Semantic.DeepEqual(st.Ingress, vst.Ingress) {
		t.Errorf("the second cluster's Service got the first cluster's load balancer address %v", st.Ingress)
	}
	if tags, ok := h.LoadBalancerTags(t, victimCluster, vsvc); !ok {
		t.Errorf("the victim's load balancer is gone after the second cluster's ensure")
	} else {
		checkOwner(t, victimCluster, vsvc, tags)
	}
	twin.Status.LoadBalancer = *st
	if err := again(c, func() error { return alb.UpdateLoadBalancer(ctx, ac.ClusterName, twin, anodes[:1]) }); err != nil {
		t.Errorf("UpdateLoadBalancer of the second cluster: %v", err)
	}
	if err := again(c, func() error { return alb.EnsureLoadBalancerDeleted(ctx, ac.ClusterName, twin) }); err != nil {
		t.Fatalf("EnsureLoadBalancerDeleted of the second cluster: %v", err)
	}
	if after := h.Snapshot(t); after != before {
		t.Errorf("the second cluster's Service with the same name changed or left objects behind:\n%s", diffLines(before, after))
	}
	victimUntouched(t, h, vlb, vsvc, vnodes, vst)
	// The victim deletes its own: the second cluster's leftovers, if any, are not its to take.
	if err := again(c, func() error { return vlb.EnsureLoadBalancerDeleted(ctx, victimCluster, vsvc) }); err != nil {
		t.Errorf("the victim's own delete: %v", err)
	}
	if _, ok := h.LoadBalancerTags(t, victimCluster, vsvc); ok {
		t.Errorf("the victim's load balancer is still there after its own delete")
	}
}

// diffLines lists the lines only in a (-) or only in b (+).
func diffLines(a, b string) string {
	in := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if mb[l] == 0 {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if ma[l] == 0 {
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		return "(the same lines in another order or number)"
	}
	return strings.Join(out, "\n")
}
