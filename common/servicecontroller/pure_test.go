package servicecontroller

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/utils/ptr"
)

func lbService(name string, mods ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080, TargetPort: intstr.FromInt(8080)}}},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

func withClass(c string) func(*v1.Service) {
	return func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(c) }
}
func withType(t v1.ServiceType) func(*v1.Service) { return func(s *v1.Service) { s.Spec.Type = t } }
func withFinalizer(s *v1.Service) {
	s.Finalizers = append(s.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
}
func deleting(s *v1.Service) { s.DeletionTimestamp = ptr.To(metav1.Now()) }

func TestClassesWantsAndCleanup(t *testing.T) {
	def := DefaultClasses()
	vip := Classes{Names: []string{"example.com/vip"}}
	both := Classes{Names: []string{"example.com/vip"}, Unclassed: true}
	cases := []struct {
		name                string
		c                   Classes
		svc                 *v1.Service
		wants, needsCleanup bool
	}{
		{"default serves unclassed", def, lbService("a"), true, false},
		{"default leaves a class alone", def, lbService("a", withClass("example.com/vip")), false, false},
		{"class served", vip, lbService("a", withClass("example.com/vip")), true, false},
		{"other class", vip, lbService("a", withClass("other.io/lb")), false, false},
		{"unclassed not served", vip, lbService("a"), false, false},
		{"both", both, lbService("a"), true, false},
		{"ClusterIP", def, lbService("a", withType(v1.ServiceTypeClusterIP)), false, false},
		{"finalizer while wanted", def, lbService("a", withFinalizer), true, false},
		{"deleting with finalizer", def, lbService("a", withFinalizer, deleting), true, true},
		{"deleting without finalizer", def, lbService("a", deleting), true, false},
		{"type left LoadBalancer", def, lbService("a", withFinalizer, withType(v1.ServiceTypeNodePort)), false, true},
		// The API server clears the class when the type leaves LoadBalancer: any implementation
		// may have made it, each looks.
		{"type left, class-only controller looks too", vip, lbService("a", withFinalizer, withType(v1.ServiceTypeClusterIP)), false, true},
		{"other class deleting: its finalizer is not ours", vip, lbService("a", withClass("other.io/lb"), withFinalizer, deleting), false, false},
		{"other class deleting, default controller", def, lbService("a", withClass("other.io/lb"), withFinalizer, deleting), false, false},
		{"own class deleting", vip, lbService("a", withClass("example.com/vip"), withFinalizer, deleting), true, true},
		{"unclassed deleting, class-only controller", vip, lbService("a", withFinalizer, deleting), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Wants(tc.svc); got != tc.wants {
				t.Errorf("Wants = %v, want %v", got, tc.wants)
			}
			if got := tc.c.NeedsCleanup(tc.svc); got != tc.needsCleanup {
				t.Errorf("NeedsCleanup = %v, want %v", got, tc.needsCleanup)
			}
		})
	}
}

func TestClassesValidate(t *testing.T) {
	for _, tc := range []struct {
		c  Classes
		ok bool
	}{
		{DefaultClasses(), true},
		{Classes{Names: []string{"example.com/vip"}}, true},
		{Classes{Names: []string{"example.com/a", "example.com/b"}, Unclassed: true}, true},
		{Classes{Names: []string{"vip"}}, false}, // no domain prefix: the API refuses it
		{Classes{Names: []string{"Example.com/-bad-"}}, false},
		{Classes{Names: []string{"example.com/a", "example.com/a"}}, false},
		{Classes{}, false}, // serves nothing
	} {
		if err := tc.c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: err %v, want ok=%v", tc.c, err, tc.ok)
		}
	}
}

func node(name string, mods ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "dummy://" + name}}
	for _, m := range mods {
		m(n)
	}
	return n
}

func label(k, v string) func(*v1.Node) {
	return func(n *v1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
	}
}
func taint(k string) func(*v1.Node) {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule})
	}
}
func notReady(n *v1.Node) {
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
}
func nodeDeleting(n *v1.Node) { n.DeletionTimestamp = ptr.To(metav1.Now()) }

func TestMember(t *testing.T) {
	ex := v1.LabelNodeExcludeBalancers
	for _, tc := range []struct {
		n    *v1.Node
		want bool
	}{
		{node("plain"), true},
		{node("exclude-true", label(ex, "true")), false},
		{node("exclude-empty", label(ex, "")), false}, // does not parse: excluded
		{node("exclude-garbage", label(ex, "yes")), false},
		{node("exclude-false", label(ex, "false")), true},
		{node("exclude-0", label(ex, "0")), true},
		{node("autoscaler", taint(toBeDeletedTaint)), false},
		{node("other taint", taint("node.kubernetes.io/unschedulable")), true},
		{node("not ready", notReady), true}, // v0.37 does not filter on readiness
		{node("deleting", nodeDeleting), false},
		{node("no providerID", func(n *v1.Node) { n.Spec.ProviderID = "" }), true},
	} {
		if got := Member(tc.n); got != tc.want {
			t.Errorf("%s: Member = %v, want %v", tc.n.Name, got, tc.want)
		}
	}
	all := []*v1.Node{node("a"), node("b", taint(toBeDeletedTaint)), node("c")}
	if got := Members(all); len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" {
		t.Errorf("Members = %v", got)
	}
}

func TestNodeUpdateMatters(t *testing.T) {
	ex := v1.LabelNodeExcludeBalancers
	for _, tc := range []struct {
		name     string
		old, cur *v1.Node
		want     bool
	}{
		{"identical (resync)", node("a"), node("a"), false},
		{"excluded", node("a"), node("a", label(ex, "true")), true},
		{"included again", node("a", label(ex, "true")), node("a", label(ex, "false")), true},
		{"exclusion value changed, still excluded", node("a", label(ex, "true")), node("a", label(ex, "")), false},
		{"providerID", node("a"), node("a", func(n *v1.Node) { n.Spec.ProviderID = "dummy://other" }), true},
		{"readiness", node("a"), node("a", notReady), false},
		{"autoscaler taint (drains)", node("a"), node("a", taint(toBeDeletedTaint)), false},
		{"other label", node("a"), node("a", label("x", "y")), false},
	} {
		if got := NodeUpdateMatters(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	a, b, c := node("a"), node("b"), node("c")
	d := DigestOf([]*v1.Node{a, b, c})
	if DigestOf([]*v1.Node{c, a, b}) != d {
		t.Error("order must not matter")
	}
	for name, other := range map[string][]*v1.Node{
		"one fewer":    {a, b},
		"one more":     {a, b, c, node("d")},
		"providerID":   {a, b, node("c", func(n *v1.Node) { n.Spec.ProviderID = "dummy://moved" })},
		"renamed":      {a, b, node("cc", func(n *v1.Node) { n.Spec.ProviderID = "dummy://c" })},
		"run together": {node("ab"), node("", func(n *v1.Node) { n.Spec.ProviderID = "" }), c},
		"empty":        {},
	} {
		if DigestOf(other) == d {
			t.Errorf("%s: same digest as {a,b,c}", name)
		}
	}
	if DigestOf(nil) != DigestOf([]*v1.Node{}) {
		t.Error("nil and empty are the same set")
	}
	// Fields a sync does not compare leave the digest alone.
	if DigestOf([]*v1.Node{a, b, node("c", notReady, label("x", "y"))}) != d {
		t.Error("readiness and labels are not part of the member set's identity")
	}
}

func TestNeedsSync(t *testing.T) {
	def := DefaultClasses()
	base := lbService("a")
	mod := func(f func(*v1.Service)) *v1.Service { s := base.DeepCopy(); f(s); return s }
	cases := []struct {
		name string
		cur  *v1.Service
		want bool
	}{
		{"identical (resync)", base.DeepCopy(), false},
		{"labels", mod(func(s *v1.Service) { s.Labels = map[string]string{"a": "b"} }), false},
		{"finalizer", mod(withFinalizer), false},
		{"status", mod(func(s *v1.Service) { s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "1.2.3.4"}} }), false},
		{"resourceVersion", mod(func(s *v1.Service) { s.ResourceVersion = "9" }), false},
		{"selector", mod(func(s *v1.Service) { s.Spec.Selector = map[string]string{"app": "x"} }), false},
		{"type away", mod(withType(v1.ServiceTypeClusterIP)), true},
		{"source ranges", mod(func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }), true},
		{"port number", mod(func(s *v1.Service) { s.Spec.Ports[0].Port = 81 }), true},
		{"port name", mod(func(s *v1.Service) { s.Spec.Ports[0].Name = "web" }), true},
		{"port protocol", mod(func(s *v1.Service) { s.Spec.Ports[0].Protocol = v1.ProtocolUDP }), true},
		{"nodePort", mod(func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30081 }), true},
		{"targetPort", mod(func(s *v1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }), true},
		{"appProtocol", mod(func(s *v1.Service) { s.Spec.Ports[0].AppProtocol = ptr.To("h2c") }), true},
		{"port added", mod(func(s *v1.Service) { s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Port: 443}) }), true},
		{"session affinity", mod(func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }), true},
		{"session affinity config", mod(func(s *v1.Service) {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		}), true},
		{"loadBalancerIP", mod(func(s *v1.Service) { s.Spec.LoadBalancerIP = "1.2.3.4" }), true},
		{"externalIPs", mod(func(s *v1.Service) { s.Spec.ExternalIPs = []string{"1.1.1.1"} }), true},
		{"annotations", mod(func(s *v1.Service) { s.Annotations = map[string]string{"x": "y"} }), true},
		{"UID", mod(func(s *v1.Service) { s.UID = "other" }), true},
		{"ETP", mod(func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }), true},
		{"healthCheckNodePort", mod(func(s *v1.Service) { s.Spec.HealthCheckNodePort = 32000 }), true},
		{"IP families", mod(func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol} }), true},
	}
	for _, tc := range cases {
		if got := def.NeedsSync(base, tc.cur); got != tc.want {
			t.Errorf("%s: NeedsSync = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Neither copy wanted (ClusterIP, or a class not served): nothing to sync.
	cip := lbService("a", withType(v1.ServiceTypeClusterIP))
	if def.NeedsSync(cip, mod(func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeClusterIP; s.Spec.Ports[0].Port = 1 })) {
		t.Error("ClusterIP to ClusterIP must not sync")
	}
	other := lbService("a", withClass("other.io/lb"))
	changed := other.DeepCopy()
	changed.Annotations = map[string]string{"x": "y"}
	if def.NeedsSync(other, changed) {
		t.Error("a Service of another class must not sync")
	}
	if !def.NeedsSync(cip, base) {
		t.Error("becoming a LoadBalancer must sync")
	}
}

// The member set is listed once per Node change, however many syncs ask for it.
func TestMemberCacheListsOncePerChange(t *testing.T) {
	var m memberCache
	lists := 0
	nodes := []*v1.Node{node("a"), node("b")}
	list := func() ([]*v1.Node, error) { lists++; return nodes, nil }
	first, _ := m.get(list)
	for range 100 {
		if s, _ := m.get(list); s.digest != first.digest {
			t.Fatal("digest changed without a Node change")
		}
	}
	if lists != 1 {
		t.Fatalf("listed %d times for 101 syncs and no change, want 1", lists)
	}
	nodes = append(nodes, node("c"))
	m.invalidate()
	s, _ := m.get(list)
	if lists != 2 || len(s.nodes) != 3 || s.digest == first.digest {
		t.Fatalf("after a change: %d lists, %d members; want 2 lists, 3 members and a new digest", lists, len(s.nodes))
	}
}

func TestNodeChanged(t *testing.T) {
	rv := func(v string) func(*v1.Node) { return func(n *v1.Node) { n.ResourceVersion = v } }
	a := node("a", rv("1"))
	if NodeChanged(a, a) {
		t.Error("a resync's identical copy is no change")
	}
	if !NodeChanged(a, node("a", rv("2"))) {
		t.Error("a new resourceVersion is a change (addresses, labels: providers read them)")
	}
	if !NodeChanged(node("a"), node("a")) {
		t.Error("without resourceVersions every update counts")
	}
}
