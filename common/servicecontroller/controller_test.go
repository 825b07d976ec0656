package servicecontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// fakeLB is a cloud whose load balancers are a map; it records every call.
type fakeLB struct {
	mu        sync.Mutex
	calls     []string            // "ensure ns/name n1,n2", "update ...", "delete ns/name", "get ns/name"
	lbs       map[string][]string // key -> member names
	ensureErr error
	updateErr error
	// delay is the cloud's answer time for Ensure and Update; inflight and peak count the
	// calls under way and the most at once.
	delay          time.Duration
	inflight, peak int
	// onUpdate, when set, runs at the start of every UpdateLoadBalancer call.
	onUpdate func()
	// slices holds the backing array of every member slice a provider call was given.
	slices []**v1.Node
}

// enter records a call's member slice and waits out the cloud's answer time; the returned
// func ends the call.
func (f *fakeLB) enter(nodes []*v1.Node) func() {
	f.mu.Lock()
	if len(nodes) > 0 {
		f.slices = append(f.slices, &nodes[0])
	}
	f.inflight++
	f.peak = max(f.peak, f.inflight)
	d := f.delay
	f.mu.Unlock()
	time.Sleep(d)
	return func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}
}

func (f *fakeLB) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (f *fakeLB) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return f, true }
func (f *fakeLB) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (f *fakeLB) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return nil, false }
func (f *fakeLB) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (f *fakeLB) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (f *fakeLB) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (f *fakeLB) ProviderName() string                                              { return "fake" }
func (f *fakeLB) HasClusterID() bool                                                { return true }

func key(s *v1.Service) string { return s.Namespace + "/" + s.Name }

func names(nodes []*v1.Node) string {
	var n []string
	for _, x := range nodes {
		n = append(n, x.Name)
	}
	slices.Sort(n)
	return strings.Join(n, ",")
}

func (f *fakeLB) record(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeLB) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// ip is the address the fake gives a Service: stable, so a second Ensure returns the same status.
func ip(s *v1.Service) string { return fmt.Sprintf("192.0.2.%d", len(s.Name)) }

func (f *fakeLB) GetLoadBalancer(_ context.Context, _ string, s *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	f.record("get " + key(s))
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lbs[key(s)]; !ok {
		return nil, false, nil
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip(s)}}}, true, nil
}
func (f *fakeLB) GetLoadBalancerName(_ context.Context, _ string, s *v1.Service) string {
	return key(s)
}
func (f *fakeLB) EnsureLoadBalancer(_ context.Context, _ string, s *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	defer f.enter(nodes)()
	f.record("ensure " + key(s) + " " + names(nodes))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ensureErr != nil {
		return nil, f.ensureErr
	}
	f.lbs[key(s)] = strings.Split(names(nodes), ",")
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip(s)}}}, nil
}
func (f *fakeLB) UpdateLoadBalancer(_ context.Context, _ string, s *v1.Service, nodes []*v1.Node) error {
	if f.onUpdate != nil {
		f.onUpdate()
	}
	defer f.enter(nodes)()
	f.record("update " + key(s) + " " + names(nodes))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.updateErr != nil {
		return f.updateErr
	}
	f.lbs[key(s)] = strings.Split(names(nodes), ",")
	return nil
}
func (f *fakeLB) EnsureLoadBalancerDeleted(_ context.Context, _ string, s *v1.Service) error {
	f.record("delete " + key(s))
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.lbs, key(s))
	return nil
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	cloud  *fakeLB
	events *record.FakeRecorder
	c      *Controller
	inf    informers.SharedInformerFactory
}

func newHarness(t *testing.T, classes Classes, objs ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, Options{Classes: classes}, objs...)
}

// newHarnessWith is newHarness with more options (the cluster name and recorder are the harness's).
func newHarnessWith(t *testing.T, opts Options, objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{t: t, client: fake.NewClientset(objs...), cloud: &fakeLB{lbs: map[string][]string{}}, events: record.NewFakeRecorder(10000)}
	h.inf = informers.NewSharedInformerFactory(h.client, time.Hour)
	opts.ClusterName, opts.Recorder = "test", h.events
	c, err := New(h.cloud, h.client, h.inf.Core().V1().Services(), h.inf.Core().V1().Nodes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.inf.Start(ctx.Done())
	h.inf.WaitForCacheSync(ctx.Done())
	h.client.ClearActions()
	return h
}

// writes returns the client's write actions since the last call, as "verb resource/subresource".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" || a.GetVerb() == "get" {
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	h.client.ClearActions()
	return out
}

func (h *harness) takeEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) sync(s *v1.Service) error {
	h.t.Helper()
	return h.c.syncService(context.Background(), key(s))
}

// waitFor waits until the informer's copy of the Service satisfies ok.
func (h *harness) waitFor(s *v1.Service, ok func(*v1.Service) bool) *v1.Service {
	h.t.Helper()
	var got *v1.Service
	for i := 0; i < 200; i++ {
		got, _ = h.c.services.Services(s.Namespace).Get(s.Name)
		if got != nil && ok(got) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("Service %s never reached the expected state: %+v", key(s), got)
	return nil
}

func (h *harness) waitForNodes(n int) {
	h.t.Helper()
	for i := 0; i < 200; i++ {
		// The member set a sync uses, not only the lister: it follows the Node handler.
		if set, _ := h.c.memberSet(); len(set.nodes) == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("node cache never had %d Nodes", n)
}

// drain empties the Service queue of what the informer queued so far.
func (h *harness) drain() {
	for h.c.queue.Len() > 0 {
		k, _ := h.c.queue.Get()
		h.c.fair.take(k)
		h.c.fair.done(k)
		h.c.queue.Done(k)
		h.c.queue.Forget(k)
	}
}

// admitResyncs admits every key the drift resync queued into the Service queue, as the feed
// does when no change waits.
func (h *harness) admitResyncs() {
	for h.c.resyncQueue.Len() > 0 {
		k, _ := h.c.resyncQueue.Get()
		h.c.resyncQueue.Done(k)
		h.c.admitResync(k)
	}
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestNewServiceGetsFinalizerStatusAndEvents(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"), node("n2", label(v1.LabelNodeExcludeBalancers, "true")), node("n3", taint(toBeDeletedTaint)))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"ensure ns/web n1"})
	eq(t, "writes", h.writes(), []string{"patch services/status", "patch services/status"})
	eq(t, "events", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
	got, _ := h.client.CoreV1().Services("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if !servicehelper.HasLBFinalizer(got) || len(got.Status.LoadBalancer.Ingress) != 1 || got.Status.LoadBalancer.Ingress[0].IP != ip(svc) {
		t.Errorf("finalizer and status not written: %+v", got)
	}
	if h.c.Tracked() != 1 {
		t.Errorf("tracked %d Services, want 1", h.c.Tracked())
	}
}

// A restarted controller (fresh state) finds the Service with its finalizer and status: it asks
// the provider (which compares with the cloud) and writes nothing, not even an Event.
func TestRestartThatChangesNothingWritesNothing(t *testing.T) {
	svc := lbService("web", withFinalizer)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip(svc)}}
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"ensure ns/web n1"})
	eq(t, "writes", h.writes(), nil)
	eq(t, "events", h.takeEvents(), nil)

	// A later change is a change: Events as the library records them.
	changed := svc.DeepCopy()
	changed.Spec.Ports[0].Port = 81
	if _, err := h.client.CoreV1().Services("ns").Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool { return s.Spec.Ports[0].Port == 81 })
	h.writes()
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "events after a change", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
	eq(t, "writes after a change (status unchanged)", h.writes(), nil)
}

// After a restart, a Service whose address the provider changes gets the status and the Events.
func TestRestartWithChangedStatusPatchesAndRecords(t *testing.T) {
	svc := lbService("web", withFinalizer)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.1"}}
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "writes", h.writes(), []string{"patch services/status"})
	eq(t, "events", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
}

func TestNoNodesWarns(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc)
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "events", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer",
		"Warning UnAvailableLoadBalancer There are no available nodes for LoadBalancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
}

func TestEnsureFailureRecordsAndRetries(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	h.cloud.ensureErr = errors.New("quota exceeded")
	err := h.sync(svc)
	if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("err = %v", err)
	}
	eq(t, "events", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer",
		"Warning SyncLoadBalancerFailed Error syncing load balancer: failed to ensure load balancer: quota exceeded"})
	// processService puts it back with backoff; a RetryError with its own delay.
	h.c.queue.Add(key(svc))
	h.c.processService(context.Background())
	if n := h.c.queue.NumRequeues(key(svc)); n != 1 {
		t.Errorf("requeues = %d, want 1 (rate-limited retry)", n)
	}
	h.cloud.ensureErr = api.NewRetryError("still provisioning", time.Hour)
	h.c.queue.Forget(key(svc))
	h.c.queue.Add(key(svc))
	h.c.processService(context.Background())
	if n := h.c.queue.NumRequeues(key(svc)); n != 0 {
		t.Errorf("a RetryError waits its own delay, not the backoff: requeues = %d", n)
	}
}

func TestClassesLeaveOtherServicesAlone(t *testing.T) {
	mine := lbService("mine", withClass("example.com/vip"))
	theirs := lbService("theirs", withClass("other.io/lb"), withFinalizer)
	theirsGoing := lbService("going", withClass("other.io/lb"), withFinalizer, deleting)
	unclassed := lbService("plain")
	h := newHarness(t, Classes{Names: []string{"example.com/vip"}}, mine, theirs, theirsGoing, unclassed, node("n1"))
	for _, s := range []*v1.Service{mine, theirs, theirsGoing, unclassed} {
		if err := h.sync(s); err != nil {
			t.Fatal(err)
		}
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"ensure ns/mine n1"})
	eq(t, "writes", h.writes(), []string{"patch services/status", "patch services/status"})
	got, _ := h.client.CoreV1().Services("ns").Get(context.Background(), "going", metav1.GetOptions{})
	if !servicehelper.HasLBFinalizer(got) {
		t.Error("the finalizer of another class's Service was removed")
	}
}

func TestDeletionWithFinalizer(t *testing.T) {
	svc := lbService("web", withFinalizer)
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip(svc)}}
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	h.cloud.takeCalls()
	// The fake client knows no finalizers: set the deletion timestamp as the API server would.
	going := svc.DeepCopy()
	deleting(going)
	if _, err := h.client.CoreV1().Services("ns").Update(context.Background(), going, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool { return s.DeletionTimestamp != nil })
	h.writes()
	h.takeEvents()
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"get ns/web", "delete ns/web"})
	eq(t, "events", h.takeEvents(), []string{"Normal DeletingLoadBalancer Deleting load balancer", "Normal DeletedLoadBalancer Deleted load balancer"})
	eq(t, "writes", h.writes(), []string{"patch services/status", "patch services/status"})
	if h.c.Tracked() != 0 {
		t.Error("state kept for a deleted Service")
	}
}

func TestTypeChangeDeletes(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	cur := h.waitFor(svc, func(s *v1.Service) bool { return len(s.Status.LoadBalancer.Ingress) == 1 }).DeepCopy()
	cur.Spec.Type = v1.ServiceTypeClusterIP
	if _, err := h.client.CoreV1().Services("ns").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool { return s.Spec.Type == v1.ServiceTypeClusterIP })
	h.cloud.takeCalls()
	h.takeEvents()
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"get ns/web", "delete ns/web"})
	h.waitFor(svc, func(s *v1.Service) bool {
		return !servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 0
	})
	// Synced again (a resync, another event): nothing left to do, nothing recorded.
	h.takeEvents()
	h.writes()
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls of a second sync", h.cloud.takeCalls(), nil)
	eq(t, "events of a second sync", h.takeEvents(), nil)
}

// A Service deleted after its finalizer was removed by hand: its load balancer is deleted
// from the last copy the informer delivered.
func TestDeletedWithoutFinalizer(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	h.cloud.takeCalls()
	h.takeEvents()
	h.drain()
	if err := h.client.CoreV1().Services("ns").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wait for the informer to deliver the delete (its lister no longer has the Service): on a
	// loaded machine that takes longer than the queue's first item.
	for i := 0; i < 1000; i++ {
		if _, err := h.c.services.Services("ns").Get("web"); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"delete ns/web"})
	eq(t, "events", h.takeEvents(), []string{"Normal DeletingLoadBalancer Deleting load balancer", "Normal DeletedLoadBalancer Deleted load balancer"})
}

// A Node change reaches each load balancer once, and only those synced with another member set.
func TestNodeChangesReachOnlyStaleLoadBalancers(t *testing.T) {
	a, b := lbService("a"), lbService("bb")
	h := newHarness(t, DefaultClasses(), a, b, node("n1"))
	for _, s := range []*v1.Service{a, b} {
		if err := h.sync(s); err != nil {
			t.Fatal(err)
		}
	}
	h.cloud.takeCalls()
	h.takeEvents()
	ctx := context.Background()
	if err := h.c.syncNodes(ctx, 2); err != nil { // nothing changed
		t.Fatal(err)
	}
	eq(t, "calls with no change", h.cloud.takeCalls(), nil)

	if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(2)
	// b was synced with the new set already (say its spec changed): only a is updated.
	if err := h.sync(b); err != nil {
		t.Fatal(err)
	}
	h.cloud.takeCalls()
	h.takeEvents()
	if err := h.c.syncNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", h.cloud.takeCalls(), []string{"update ns/a n1,n2"})
	eq(t, "events", h.takeEvents(), []string{"Normal UpdatedLoadBalancer Updated load balancer with new hosts"})
	if err := h.c.syncNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls of a second node sync", h.cloud.takeCalls(), nil)

	// A failed update is recorded and retried with a full sync of the Service.
	if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(3)
	h.cloud.updateErr = errors.New("cloud down")
	h.drain()
	if err := h.c.syncNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	evs := h.takeEvents()
	if len(evs) != 2 || !strings.HasPrefix(evs[0], "Warning UpdateLoadBalancerFailed Error updating load balancer with new hosts [n1 n2 n3] [node names limited, total number of nodes: 3], error: cloud down") {
		t.Errorf("events: %q", evs)
	}
	if h.c.queue.Len() != 2 {
		t.Errorf("queued for retry: %d, want 2", h.c.queue.Len())
	}
}

func TestNodeEventsCoalesce(t *testing.T) {
	h := newHarness(t, DefaultClasses())
	ctx := context.Background()
	for i := range 50 {
		if _, err := h.client.CoreV1().Nodes().Create(ctx, node(fmt.Sprintf("n%02d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.waitForNodes(50)
	if n := h.c.nodeQueue.Len(); n != 1 {
		t.Errorf("node queue holds %d keys for 50 Node adds, want 1", n)
	}
}
