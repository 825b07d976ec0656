package cloudtest

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/svcevents"
)

// DriftHarness is what the drift group needs from a simulator on top of Harness: the clouds it
// makes record Events into Events(), and it can break a load balancer out of band.
type DriftHarness interface {
	Harness
	// Events is the sink every cloud of the harness was initialised with.
	Events() *EventSink
	// DriftCases are the out-of-band changes to a Service's load balancer the provider repairs.
	// Each Break changes one thing through the simulator's own API, as an operator at the
	// cloud's console would, never through the provider.
	DriftCases(t T) []DriftCase
	// LoadBalancerState is svc's load balancer as the cloud holds it, in a canonical text of
	// what defines it (listeners, pools, health checks, rules, members, associations, records
	// and their settings) but not the IDs or addresses the cloud assigns: equal texts mean the
	// same load balancer. ok is false if there is none.
	LoadBalancerState(t T, clusterName string, svc *v1.Service) (state string, ok bool)
}

// DriftCase is one out-of-band change.
type DriftCase struct {
	Name string
	// Mutate, optional, gives the Service what the case breaks (a health check annotation, a
	// second port), before its load balancer is created.
	Mutate func(svc *v1.Service)
	// Break changes svc's load balancer of cluster clusterName behind ccm's back.
	Break func(t T, clusterName string, svc *v1.Service)
	// MaxWrites is the most cloud writes the repair may take: it writes the difference, not
	// everything.
	MaxWrites int
	// Mentions is a part of the repair Event's message: it says what was repaired.
	Mentions string
}

const eventWait = 5 * time.Second

func driftHarness(t T, c Config) DriftHarness {
	t.Helper()
	h, ok := c.Harness.(DriftHarness)
	if !ok {
		t.Fatalf("the harness does not implement cloudtest.DriftHarness")
	}
	return h
}

// driftRepaired: each out-of-band change is found and undone by the next sync (half of them
// by a restarted process), with the writes the difference needs, a Warning Event that says what
// was repaired, and nothing left to write after it.
func driftRepaired(t T, c Config) {
	h := driftHarness(t, c)
	cases := h.DriftCases(t)
	if len(cases) == 0 {
		t.Fatalf("DriftCases returned no case")
	}
	lb := loadBalancer(t, h.NewCloud(t))
	nodes := twoNodes(t, c, "cloudtest-drift")
	for i, dc := range cases {
		svc := newService("drift")
		if dc.Mutate != nil {
			dc.Mutate(svc)
		}
		svc.Status.LoadBalancer = *ensure(t, lb, c, svc, nodes)
		want, ok := h.LoadBalancerState(t, c.ClusterName, svc)
		if !ok {
			t.Fatalf("%s: the cloud holds no load balancer for %s after ensure", dc.Name, svc.Name)
		}
		if evs := h.Events().On(svc); hasReason(evs, svcevents.ReasonDriftRepaired) {
			t.Errorf("%s: creating the load balancer was reported as a repair: %v", dc.Name, evs)
		}
		dc.Break(t, c.ClusterName, svc)
		if got, _ := h.LoadBalancerState(t, c.ClusterName, svc); got == want {
			t.Errorf("%s: the break changed nothing in the load balancer's state (a harness bug)", dc.Name)
			continue
		}
		syncer, how := lb, "the next sync"
		if i%2 == 1 {
			syncer, how = loadBalancer(t, h.NewCloud(t)), "the first sync after a restart"
		}
		before := h.Writes()
		svc.Status.LoadBalancer = *ensure(t, syncer, c, svc, nodes)
		switch w := h.Writes() - before; {
		case w == 0:
			t.Errorf("%s: %s made no write: the change out of band was not repaired", dc.Name, how)
		case w > dc.MaxWrites:
			t.Errorf("%s: %s made %d writes, want at most %d: a repair writes the difference only", dc.Name, how, w, dc.MaxWrites)
		}
		if got, _ := h.LoadBalancerState(t, c.ClusterName, svc); got != want {
			t.Errorf("%s: after %s the load balancer differs from the one ensure made:\n%s", dc.Name, how, diffLines(want, got))
		}
		before = h.Writes()
		ensure(t, syncer, c, svc, nodes)
		if w := h.Writes() - before; w != 0 {
			t.Errorf("%s: the sync after the repair made %d writes, want 0", dc.Name, w)
		}
		if found, evs := h.Events().Await(svc, eventWait, v1.EventTypeWarning, svcevents.ReasonDriftRepaired, dc.Mentions); !found {
			t.Errorf("%s: no Warning %s Event mentioning %q on the Service; its Events: %q", dc.Name, svcevents.ReasonDriftRepaired, dc.Mentions, evs)
		}
	}
}

func hasReason(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+":") {
			return true
		}
	}
	return false
}
