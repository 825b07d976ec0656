package app

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	ccmconfig "k8s.io/cloud-provider/app/config"
)

func bigNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:          "n1",
			Labels:        map[string]string{"topology.kubernetes.io/zone": "z1"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: v1.NodeSpec{ProviderID: "dummy://n1", Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Images:     []v1.ContainerImage{{Names: []string{"registry.example/app@sha256:0"}, SizeBytes: 1}},
		},
	}
}

func checkTrimmedNode(t *testing.T, n *v1.Node) {
	t.Helper()
	if n.ManagedFields != nil || n.Status.Images != nil {
		t.Errorf("managedFields %v and images %v should be dropped", n.ManagedFields, n.Status.Images)
	}
	want := bigNode()
	if n.Spec.ProviderID != want.Spec.ProviderID || len(n.Spec.Taints) != 1 || n.Labels["topology.kubernetes.io/zone"] != "z1" ||
		len(n.Status.Addresses) != 1 || len(n.Status.Conditions) != 1 {
		t.Errorf("fields the controllers read were changed: %+v", n)
	}
	if _, ok := n.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Error("annotations must stay (the node controller Updates whole Nodes from the cache)")
	}
}

func TestTrimObject(t *testing.T) {
	n := bigNode()
	out, err := trimObject(n)
	if err != nil {
		t.Fatal(err)
	}
	checkTrimmedNode(t, out.(*v1.Node))
	if _, err := trimObject(out); err != nil { // idempotent
		t.Fatal(err)
	}
	checkTrimmedNode(t, out.(*v1.Node))

	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	out, _ = trimObject(s)
	if got := out.(*v1.Service); got.ManagedFields != nil || got.Annotations["a"] != "b" || got.Spec.Type != v1.ServiceTypeLoadBalancer {
		t.Errorf("service trimmed wrongly: %+v", got)
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "n1", Obj: bigNode()}
	out, err = trimObject(tomb)
	if err != nil || out.(cache.DeletedFinalStateUnknown).Key != "n1" {
		t.Errorf("tombstone must pass unchanged, got %v, %v", out, err)
	}
}

// The factory slimInformers installs is the one the controllers get, and its cache holds
// trimmed objects.
func TestSlimInformersCachesTrimmedObjects(t *testing.T) {
	client := fake.NewClientset(bigNode())
	cfg := &ccmconfig.Config{VersionedClient: client}
	cfg.ComponentConfig.Generic.MinResyncPeriod = metav1.Duration{Duration: time.Hour}
	cfg.SharedInformers = informers.NewSharedInformerFactory(client, time.Hour)
	c := cfg.Complete()
	before := c.SharedInformers
	slimInformers(c)
	if c.SharedInformers == before {
		t.Fatal("the library's factory was not replaced")
	}
	lister := c.SharedInformers.Core().V1().Nodes().Lister()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.SharedInformers.Start(ctx.Done())
	for typ, ok := range c.SharedInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	n, err := lister.Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	checkTrimmedNode(t, n)
}
