package openstack

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestPersistenceOf(t *testing.T) {
	for _, tc := range []struct {
		affinity v1.ServiceAffinity
		want     string
	}{
		{v1.ServiceAffinityClientIP, "SOURCE_IP"},
		{v1.ServiceAffinityNone, ""},
		{"", ""},
	} {
		svc := lbService("s", nil)
		svc.Spec.SessionAffinity = tc.affinity
		if got := persistenceOf(svc); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.affinity, got, tc.want)
		}
	}
}

// persistences are the session_persistence types of the Service's pools, by listener port.
func persistences(t *testing.T, f *fake.Cloud, name string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, l := range fakeLB(t, f, name).Listeners {
		out[l.Port] = l.Persistence
	}
	return out
}

func poolWrites(calls map[string]int) int {
	n := 0
	for op, c := range calls {
		if strings.Contains(op, "Pool") && !strings.HasPrefix(op, "octavia.Get") && !strings.HasPrefix(op, "octavia.List") {
			n += c
		}
	}
	return n
}

// sessionAffinity ClientIP makes every pool of the Service (TCP behind x-forwarded-for, UDP)
// with session_persistence SOURCE_IP, as upstream; a restart writes nothing; switching to None
// removes it with one pool update per pool, in place (no listener replaced), and back.
func TestSessionAffinityPersistence(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, ""))
	nodes := lbNodes("10.0.0.5")
	svc := lbService("sticky", map[string]string{annXForwardedFor: "true"},
		v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	ensureUntilReady(t, lb, svc, nodes)
	if got := persistences(t, f, "sticky"); got[80] != "SOURCE_IP" || got[53] != "SOURCE_IP" {
		t.Fatalf("persistence after create = %v, want SOURCE_IP on both pools", got)
	}
	writes := f.Writes()
	ensureUntilReady(t, lbOf(t, newTestCloud(t, f, "")), svc, nodes) // a restart
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("restart: %d writes, want 0 (%s)", w, f.CallSummary())
	}
	for _, step := range []struct {
		affinity v1.ServiceAffinity
		want     string
	}{{v1.ServiceAffinityNone, ""}, {v1.ServiceAffinityClientIP, "SOURCE_IP"}} {
		svc.Spec.SessionAffinity = step.affinity
		before := f.Calls()
		ensureUntilReady(t, lb, svc, nodes)
		after := f.Calls()
		if n := after["octavia.UpdatePool"] - before["octavia.UpdatePool"]; n != 2 {
			t.Errorf("%s: %d pool updates, want 2 (one per pool)", step.affinity, n)
		}
		if n := after["octavia.CreateListener"] + after["octavia.DeleteListener"] + after["octavia.DeletePool"] -
			before["octavia.CreateListener"] - before["octavia.DeleteListener"] - before["octavia.DeletePool"]; n != 0 {
			t.Errorf("%s: %d listener/pool creates or deletes, want 0 (in place)", step.affinity, n)
		}
		if got := persistences(t, f, "sticky"); got[80] != step.want || got[53] != step.want {
			t.Errorf("%s: persistence %v, want %q", step.affinity, got, step.want)
		}
		writes := f.Writes()
		ensureUntilReady(t, lb, svc, nodes)
		if w := f.Writes() - writes; w != 0 {
			t.Errorf("%s: the next sync made %d writes", step.affinity, w)
		}
	}
}

// A cookie persistence set by hand on a pool (ccm never writes one) is drift: put back to the
// Service's in place and reported as a repair.
func TestPersistenceDriftRepaired(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	svc := lbService("pd", nil)
	svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	ensureUntilReady(t, lb, svc, nodes)
	if !f.SetPoolPersistence("kube_service_"+cluster+"_default_pd", 80, "APP_COOKIE", "JSESSIONID") {
		t.Fatal("no pool to change")
	}
	before, writes := f.Calls(), f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if n := f.Calls()["octavia.UpdatePool"] - before["octavia.UpdatePool"]; n != 1 || f.Writes()-writes != 1 {
		t.Errorf("repair: %d pool updates, %d writes, want 1 and 1 (%s)", n, f.Writes()-writes, f.CallSummary())
	}
	if got := persistences(t, f, "pd"); got[80] != "SOURCE_IP" {
		t.Errorf("after the repair: %v", got)
	}
	if evs := repairEvents(sink, svc); len(evs) != 1 || !strings.Contains(evs[0], "session persistence was APP_COOKIE(JSESSIONID)") {
		t.Errorf("repair Events %q", evs)
	}
}

// An upstream load balancer of a ClientIP Service (pools with SOURCE_IP) is taken over
// without a pool write, and the next sync writes nothing.
func TestUpstreamClientIPTakeover(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("sticky-up", v1.ServicePort{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	id, addr := f.SeedUpstream(toUpstream(svc, u.nodes, nil))
	adoptedByUpstream(svc, id, addr)
	if got := persistences(t, f, "sticky-up"); got[80] != "SOURCE_IP" || got[53] != "SOURCE_IP" {
		t.Fatalf("seeded persistence %v", got)
	}
	lb, _ := migrationCloud(t, f, "")
	if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].IP, addr)
	}
	c := f.Calls()
	if n := poolWrites(c) + c["octavia.CreateListener"] + c["octavia.DeleteListener"]; n != 0 {
		t.Errorf("takeover: %d pool or listener writes, want 0 (%s)", n, f.CallSummary())
	}
	writes := f.Writes()
	ensureUntilReady(t, lb, svc, u.nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the sync after the takeover made %d writes (%s)", w, f.CallSummary())
	}
}
