package servicecontroller

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/ownership"
)

func owned(id, ns, name, uid string) OwnedLoadBalancer {
	return OwnedLoadBalancer{ID: id, Owner: ownership.Identity{Cluster: "c", Namespace: ns, Name: name, UID: uid}}
}

func ids(lbs []OwnedLoadBalancer) []string {
	var out []string
	for _, lb := range lbs {
		out = append(out, lb.ID)
	}
	return out
}

func TestFindOrphans(t *testing.T) {
	live := lbService("live")                                                           // uid-live
	goingAway := lbService("leaving", withFinalizer, withType(v1.ServiceTypeClusterIP)) // the controller cleans it up
	nowClusterIP := lbService("clusterip", withType(v1.ServiceTypeClusterIP))
	otherClass := lbService("classy", withClass("other.io/lb"))
	svcs := map[string]*v1.Service{}
	for _, s := range []*v1.Service{live, goingAway, nowClusterIP, otherClass} {
		svcs[s.Namespace+"/"+s.Name] = s
	}
	lookup := func(ns, name string) *v1.Service { return svcs[ns+"/"+name] }
	lbs := []OwnedLoadBalancer{
		owned("lb-live", "ns", "live", "uid-live"),
		owned("lb-live-legacy", "ns", "live", ""), // written before UIDs: matches by name
		owned("lb-old-live", "ns", "live", "uid-earlier"),
		owned("lb-gone", "ns", "deleted", "uid-deleted"),
		owned("lb-other-ns", "elsewhere", "live", "uid-live"),
		owned("lb-leaving", "ns", "leaving", "uid-leaving"),
		owned("lb-clusterip", "ns", "clusterip", "uid-clusterip"),
		owned("lb-classy", "ns", "classy", "uid-classy"),
	}
	got := ids(FindOrphans(lbs, lookup, DefaultClasses()))
	eq(t, "orphans", got, []string{"lb-old-live", "lb-gone", "lb-other-ns", "lb-clusterip", "lb-classy"})
	// A ccm serving other.io/lb accounts for the classed one.
	got = ids(FindOrphans(lbs, lookup, Classes{Names: []string{"other.io/lb"}, Unclassed: true}))
	eq(t, "orphans with the class served", got, []string{"lb-old-live", "lb-gone", "lb-other-ns", "lb-clusterip"})
}

func TestOrphanTrackerPlan(t *testing.T) {
	tr := NewOrphanTracker()
	t0 := time.Unix(1000, 0)
	a, b := owned("a", "ns", "x", "1"), owned("b", "ns", "y", "2")
	report, remove := tr.Plan(t0, []OwnedLoadBalancer{a}, time.Hour)
	eq(t, "first round reports", ids(report), []string{"a"})
	eq(t, "first round deletes nothing", ids(remove), nil)
	report, remove = tr.Plan(t0.Add(59*time.Minute), []OwnedLoadBalancer{a, b}, time.Hour)
	eq(t, "b reported", ids(report), []string{"b"})
	eq(t, "a still in grace", ids(remove), nil)
	_, remove = tr.Plan(t0.Add(time.Hour), []OwnedLoadBalancer{a, b}, time.Hour)
	eq(t, "a after the grace period", ids(remove), []string{"a"})
	// b claimed (its Service came back): forgotten; orphaned again, its grace starts again.
	tr.Plan(t0.Add(61*time.Minute), []OwnedLoadBalancer{a}, time.Hour)
	report, remove = tr.Plan(t0.Add(3*time.Hour), []OwnedLoadBalancer{a, b}, time.Hour)
	eq(t, "b reported again", ids(report), []string{"b"})
	eq(t, "only a", ids(remove), []string{"a"})
	// Grace 0: report only, never delete.
	tr0 := NewOrphanTracker()
	tr0.Plan(t0, []OwnedLoadBalancer{a}, 0)
	if _, remove := tr0.Plan(t0.Add(1000*time.Hour), []OwnedLoadBalancer{a}, 0); len(remove) != 0 {
		t.Error("grace 0 must disable deletion")
	}
}

type fakeOwned struct {
	lbs       []OwnedLoadBalancer
	listErr   error
	deleted   []string
	deleteErr map[string]error // by load balancer ID
}

func (f *fakeOwned) OwnedLoadBalancers(context.Context, string) ([]OwnedLoadBalancer, error) {
	return f.lbs, f.listErr
}
func (f *fakeOwned) DeleteOwnedLoadBalancer(_ context.Context, _ string, lb OwnedLoadBalancer) error {
	f.deleted = append(f.deleted, lb.ID)
	return f.deleteErr[lb.ID]
}

func TestCollectorRound(t *testing.T) {
	live := lbService("live")
	client := fake.NewClientset(live)
	inf := informers.NewSharedInformerFactory(client, time.Hour)
	svcInf := inf.Core().V1().Services()
	synced := false
	cloud := &fakeOwned{lbs: []OwnedLoadBalancer{owned("lb-live", "ns", "live", "uid-live"), owned("lb-old", "ns", "live", "uid-earlier"), owned("lb-gone", "ns", "gone", "u")}}
	events := record.NewFakeRecorder(10)
	now := time.Unix(0, 0)
	c := &Collector{Lister: cloud, Cluster: "c", Classes: DefaultClasses(), Services: svcInf.Lister(),
		Synced: func() bool { return synced }, Recorder: events, Grace: time.Minute, Now: func() time.Time { return now }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())

	// Not synced: an empty cache would make every load balancer an orphan.
	if _, err := c.Round(ctx); err == nil {
		t.Error("a round before the cache is synced must refuse")
	}
	synced = true
	cloud.listErr = errors.New("throttled")
	if _, err := c.Round(ctx); err == nil {
		t.Error("a failed listing must skip the round")
	}
	cloud.listErr = nil
	if d, err := c.Round(ctx); err != nil || len(d) != 0 {
		t.Fatalf("first round: deleted %v, %v", d, err)
	}
	select {
	case e := <-events.Events:
		if e[:len("Warning OrphanedLoadBalancer")] != "Warning OrphanedLoadBalancer" {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("the orphan of a Service that exists under that name gets an Event on it")
	}
	now = now.Add(2 * time.Minute)
	d, err := c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "deleted after grace", cloud.deleted, []string{"lb-gone", "lb-old"})
	eq(t, "returned", ids(d), []string{"lb-gone", "lb-old"})
}

// A delete the cloud accepts and finishes later (OpenStack: Octavia's cascade delete, answered
// with an api.RetryError "being deleted") is neither a failure nor forgotten: the load balancer
// counts as deleted, once, when a listing no longer has it or a later delete returns nil, and
// stays in Left until then.
func TestCollectorCountsDeletesTheCloudFinishesLater(t *testing.T) {
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, time.Hour)
	svcInf := inf.Core().V1().Services()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	busy := api.NewRetryError("load balancer x is being deleted", time.Second)
	cloud := &fakeOwned{lbs: []OwnedLoadBalancer{owned("lb-a", "ns", "a", "u1"), owned("lb-b", "ns", "b", "u2")},
		deleteErr: map[string]error{"lb-a": busy, "lb-b": busy}}
	now := time.Unix(0, 0)
	c := &Collector{Lister: cloud, Cluster: "c", Classes: DefaultClasses(), Services: svcInf.Lister(),
		Synced: func() bool { return true }, Grace: time.Minute, Now: func() time.Time { return now }}
	round := func(what string, wantDeleted []string, wantLeft int) {
		t.Helper()
		d, err := c.Round(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		eq(t, what+": deleted", ids(d), wantDeleted)
		if c.Left != wantLeft {
			t.Errorf("%s: Left = %d, want %d", what, c.Left, wantLeft)
		}
	}
	round("first sight", nil, 2)
	now = now.Add(2 * time.Minute)
	round("deletes accepted, under way", nil, 2)
	round("still listed, still under way", nil, 2)
	eq(t, "delete calls", cloud.deleted, []string{"lb-a", "lb-b", "lb-a", "lb-b"})
	// lb-a is gone from the cloud; lb-b's next delete returns nil.
	cloud.lbs = cloud.lbs[1:]
	cloud.deleteErr = nil
	round("one gone, one done", []string{"lb-a", "lb-b"}, 0)
	cloud.lbs = nil
	round("both gone: counted once", nil, 0)
}
