package app

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
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

	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns",
		Annotations:   map[string]string{"a": "b", v1.LastAppliedConfigAnnotation: `{"kind":"Service"}`},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Port: 80}}}}
	out, _ = trimObject(s)
	got := out.(*v1.Service)
	if got.ManagedFields != nil || got.Spec.Selector != nil || len(got.Annotations) != 1 {
		t.Errorf("managedFields, the selector and kubectl's last-applied annotation should be dropped: %+v", got)
	}
	if got.Annotations["a"] != "b" || got.Spec.Type != v1.ServiceTypeLoadBalancer || len(got.Spec.Ports) != 1 {
		t.Errorf("fields the controllers read were changed: %+v", got)
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

// Every Node event reaches the service controller's handler under one key, with the Node's
// other fields intact, while the shared cache keeps the real Nodes.
func TestOneKeyNodes(t *testing.T) {
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes := oneKeyNodes{factory.Core().V1().Nodes()}
	queue := workqueue.NewTyped[string]()
	defer queue.ShutDown()
	var mu sync.Mutex
	var providerIDs []string
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			t.Error(err)
		}
		queue.Add(key)
	}
	if _, err := nodes.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(_, cur any) {
			mu.Lock()
			providerIDs = append(providerIDs, cur.(*v1.Node).Spec.ProviderID)
			mu.Unlock()
			enqueue(cur)
		},
		DeleteFunc: enqueue,
	}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for _, name := range []string{"a", "b", "c"} {
		if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n := bigNode()
	n.Name = "b"
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		if l, _ := nodes.Lister().List(labels.Everything()); len(l) == 2 {
			mu.Lock()
			done := len(providerIDs) == 1
			mu.Unlock()
			if done {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if queue.Len() != 1 {
		t.Fatalf("want one queued key for five Node events, got %d", queue.Len())
	}
	if key, _ := queue.Get(); key != nodeSetKey {
		t.Errorf("key %q, want %q", key, nodeSetKey)
	}
	if providerIDs[0] != "dummy://n1" {
		t.Errorf("the handler must see the Node's fields, got providerID %q", providerIDs[0])
	}
	if got, err := nodes.Lister().Get("b"); err != nil || got.Spec.ProviderID != "dummy://n1" {
		t.Errorf("the cache must keep real names: %v, %v", got, err)
	}

	tomb := renamed(cache.DeletedFinalStateUnknown{Key: "x", Obj: bigNode()}).(cache.DeletedFinalStateUnknown)
	if tomb.Key != nodeSetKey || tomb.Obj.(*v1.Node).Name != nodeSetKey {
		t.Errorf("tombstone not renamed: %+v", tomb)
	}
	orig := bigNode()
	if renamed(orig).(*v1.Node).Spec.ProviderID != orig.Spec.ProviderID || orig.Name != "n1" {
		t.Error("renamed must copy, not change the cached Node")
	}
}
