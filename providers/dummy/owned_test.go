package dummy

import (
	"context"
	"errors"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Two clusters in one store, and a record made by hand: each cluster lists only its own
// records with one store read, and deletes one only while the record still names the owner the
// listing saw; the addresses come free for the next Service.
func TestOwnedLoadBalancers(t *testing.T) {
	ctx := context.Background()
	a, b, store := twoClouds(t, "[Pool \"p\"]\nrange = 192.0.2.10-192.0.2.13\n")
	for _, s := range []struct {
		lb      *loadBalancers
		cluster string
		ns, n   string
	}{{a, "alpha", "ns", "web"}, {a, "alpha", "ns", "api"}, {b, "beta", "ns", "web"}} {
		if _, err := s.lb.EnsureLoadBalancer(ctx, s.cluster, svcUID(s.ns, s.n, "uid-"+s.n, nil, 80), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Put(ctx, "by-hand", Record{Name: "by-hand", IPs: []string{"192.0.2.13"}}); err != nil {
		t.Fatal(err)
	}
	reads := store.Reads()
	got, err := a.c.OwnedLoadBalancers(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if n := store.Reads() - reads; n != 1 {
		t.Errorf("a listing took %d store reads, want 1", n)
	}
	want := []servicecontroller.OwnedLoadBalancer{
		{ID: "dummy_alpha_ns_api", Owner: ownership.Identity{Cluster: "alpha", Namespace: "ns", Name: "api", UID: "uid-api"}},
		{ID: "dummy_alpha_ns_web", Owner: ownership.Identity{Cluster: "alpha", Namespace: "ns", Name: "web", UID: "uid-web"}},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("alpha lists %+v, want %+v", got, want)
	}

	// The record changed owner after the listing (the Service was made again): refused, kept.
	rec, _, _ := store.Get(ctx, "dummy_alpha_ns_api")
	rec.Tags = ownership.Identity{Cluster: "alpha", Namespace: "ns", Name: "api", UID: "uid-new"}.Tags()
	if err := store.Put(ctx, "dummy_alpha_ns_api", rec); err != nil {
		t.Fatal(err)
	}
	writes := store.Writes()
	if err := a.c.DeleteOwnedLoadBalancer(ctx, "alpha", got[0]); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("delete of a record that changed owner: %v, want a refusal", err)
	}
	// Another cluster's record, passed as if listed: refused too.
	foreign := servicecontroller.OwnedLoadBalancer{ID: "dummy_beta_ns_web", Owner: ownership.Identity{Cluster: "beta", Namespace: "ns", Name: "web", UID: "uid-web"}}
	if err := a.c.DeleteOwnedLoadBalancer(ctx, "alpha", foreign); err == nil {
		t.Error("alpha deleted beta's record")
	}
	if n := store.Writes() - writes; n != 0 {
		t.Errorf("refused deletes wrote %d times", n)
	}
	// Its own record: one write, gone, its address free again.
	if err := a.c.DeleteOwnedLoadBalancer(ctx, "alpha", got[1]); err != nil {
		t.Fatal(err)
	}
	if n := store.Writes() - writes; n != 1 {
		t.Errorf("delete wrote %d times, want 1", n)
	}
	recs, _ := store.Load(ctx)
	if _, still := recs["dummy_alpha_ns_web"]; still {
		t.Error("the orphan's record is still there")
	}
	for _, k := range []string{"dummy_alpha_ns_api", "dummy_beta_ns_web", "by-hand"} {
		if _, ok := recs[k]; !ok {
			t.Errorf("record %s was deleted", k)
		}
	}
	// Deleting it again (another round, another replica) is fine.
	if err := a.c.DeleteOwnedLoadBalancer(ctx, "alpha", got[1]); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if _, err := a.EnsureLoadBalancer(ctx, "alpha", svcUID("ns", "next", "uid-next", nil, 80), nil); err != nil {
		t.Errorf("the freed address was not handed out again: %v", err)
	}
}
