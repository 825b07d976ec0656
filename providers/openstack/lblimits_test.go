package openstack

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func limitsConfig(t *testing.T, extra string) *Cloud {
	t.Helper()
	c, err := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = s\ncreate-monitor = true\n" + extra))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Upstream's makeSvcConf: connection-limit (default -1), the timeouts (defaults 50000, 5000,
// 50000, 0; not with OVN) and health-monitor-* (defaults: the config's); a bad value is a
// Warning naming the annotation and the default stands.
func TestLimitsAndMonitorTimings(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		ann         map[string]string
		limits      listenerLimits
		timing      monitorValues
		warnings    []string
	}{
		{"defaults", "", nil, listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000, MemberConnect: 5000, MemberData: 50000},
			monitorValues{5, 3, 1, 3}, nil},
		{"config", "monitor-delay = 10s\nmonitor-timeout = 4s\nmonitor-max-retries = 2\nmonitor-max-retries-down = 5\n", nil,
			listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000, MemberConnect: 5000, MemberData: 50000}, monitorValues{10, 4, 2, 5}, nil},
		{"annotations", "", map[string]string{annConnLimit: "1000", annTimeoutClientData: "60000", annTimeoutMemberConnect: "3000",
			annTimeoutMemberData: "70000", annTimeoutTCPInspect: "10", annMonitorDelay: "7", annMonitorTimeout: "6", annMonitorMaxRetries: "4", annMonitorRetriesDown: "2"},
			listenerLimits{ConnLimit: 1000, Timeouts: true, ClientData: 60000, MemberConnect: 3000, MemberData: 70000, TCPInspect: 10, byAnnotation: true},
			monitorValues{7, 6, 4, 2}, nil},
		{"ovn has no timeouts", "lb-provider = ovn\n", map[string]string{annConnLimit: "10", annTimeoutClientData: "60000"},
			listenerLimits{ConnLimit: 10, byAnnotation: true}, monitorValues{5, 3, 1, 3}, nil},
		{"bad values", "", map[string]string{annConnLimit: "many", annTimeoutMemberData: "-5", annMonitorMaxRetries: "11", annMonitorRetriesDown: "0", annMonitorDelay: "x"},
			listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000, MemberConnect: 5000, MemberData: 50000, byAnnotation: true},
			monitorValues{5, 3, 1, 3}, []string{annConnLimit, annTimeoutMemberData, annMonitorMaxRetries, annMonitorRetriesDown, annMonitorDelay}},
		{"timeout above delay", "", map[string]string{annMonitorDelay: "2", annMonitorTimeout: "4"},
			listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000, MemberConnect: 5000, MemberData: 50000}, monitorValues{5, 3, 1, 3}, []string{annMonitorTimeout}},
	} {
		c := limitsConfig(t, tc.extra)
		spec, err := c.lb.spec("n", lbService("w", tc.ann))
		if err != nil {
			t.Fatal(err)
		}
		ls := spec.listeners[0]
		if ls.Limits != tc.limits || ls.Monitor.Want != tc.timing {
			t.Errorf("%s: limits %+v timing %+v, want %+v %+v", tc.name, ls.Limits, ls.Monitor.Want, tc.limits, tc.timing)
		}
		if got := ls.Monitor.Overridden; got != (tc.name == "annotations") {
			t.Errorf("%s: Overridden %v", tc.name, got)
		}
		all := strings.Join(spec.warnings, "\n")
		for _, w := range tc.warnings {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no warning naming %s in %q", tc.name, w, all)
			}
		}
		if len(tc.warnings) == 0 && all != "" {
			t.Errorf("%s: warnings %q", tc.name, all)
		}
		// The fingerprint does not change with these settings: a change updates in place.
		if base, _ := limitsConfig(t, tc.extra).lb.spec("n", lbService("w", nil)); base.listeners[0].fingerprint() != ls.fingerprint() {
			t.Errorf("%s: the listener fingerprint depends on the annotations", tc.name)
		}
	}
}

// planPool: a limits or timing difference is written in place; it is drift only when no
// annotation asks for it.
func TestPlanPoolLimits(t *testing.T) {
	def := listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000, MemberConnect: 5000, MemberData: 50000}
	ann := def
	ann.ConnLimit, ann.byAnnotation = 100, true
	ovn := listenerLimits{ConnLimit: -1}
	mon := &observedMonitor{Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3}
	mon2 := &observedMonitor{Type: "TCP", Delay: 7, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 2}
	for _, tc := range []struct {
		name           string
		want, have     poolState
		limits, repair bool
		monitor        monitorAction
	}{
		{"equal", poolState{Limits: def, Monitor: mon}, poolState{Limits: def, Monitor: mon}, false, false, monitorKeep},
		{"hand-changed timeout", poolState{Limits: def}, poolState{Limits: listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 1, MemberConnect: 5000, MemberData: 50000}}, true, true, monitorKeep},
		{"annotation", poolState{Limits: ann}, poolState{Limits: def}, true, false, monitorKeep},
		{"ovn ignores timeouts", poolState{Limits: ovn}, poolState{Limits: listenerLimits{ConnLimit: -1, Timeouts: true, ClientData: 50000}}, false, false, monitorKeep},
		{"monitor annotation", poolState{Limits: def, Monitor: mon2, MonitorByAnnotation: true}, poolState{Limits: def, Monitor: mon}, false, false, monitorUpdate},
		{"monitor hand-changed", poolState{Limits: def, Monitor: mon}, poolState{Limits: def, Monitor: mon2}, false, true, monitorUpdate},
	} {
		p := planPool("TCP/80", tc.want, tc.have)
		if p.SetLimits != tc.limits || (len(p.Repairs) > 0) != tc.repair || p.Monitor != tc.monitor {
			t.Errorf("%s: %+v", tc.name, p)
		}
	}
}

// Through the fake: the annotations reach the listener and monitor at creation; a change is an
// update in place (no listener created or deleted, no Warning); upstream's listeners and
// monitors made with the same annotations are taken over with nothing written.
func TestLimitAnnotationsInPlace(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "create-monitor = true\nfloating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	svc := lbService("limits", map[string]string{annConnLimit: "500", annTimeoutClientData: "90000", annMonitorDelay: "8", annMonitorRetriesDown: "4"})
	st := ensureUntilReady(t, lb, svc, nodes)
	svc.Status.LoadBalancer = *st
	got := fakeLB(t, f, "limits").Listeners[0]
	if got.Limits != [5]int{500, 90000, 5000, 50000, 0} || got.MonitorTiming != [4]int{8, 3, 1, 4} {
		t.Errorf("created with limits %v, monitor %v", got.Limits, got.MonitorTiming)
	}
	svc.Annotations[annConnLimit], svc.Annotations[annMonitorDelay] = "700", "9"
	delete(svc.Annotations, annTimeoutClientData)
	before := f.Calls()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	c := f.Calls()
	got = fakeLB(t, f, "limits").Listeners[0]
	if got.Limits != [5]int{700, 50000, 5000, 50000, 0} || got.MonitorTiming != [4]int{9, 3, 1, 4} ||
		c["octavia.CreateListener"] != before["octavia.CreateListener"] || c["octavia.DeleteListener"] != before["octavia.DeleteListener"] ||
		c["octavia.UpdateListener"]-before["octavia.UpdateListener"] != 1 || c["octavia.UpdateHealthMonitor"]-before["octavia.UpdateHealthMonitor"] != 1 {
		t.Errorf("after the change: limits %v, monitor %v (%s)", got.Limits, got.MonitorTiming, f.CallSummary())
	}
	for _, e := range sink.On(svc) {
		if strings.HasPrefix(e, v1.EventTypeWarning) {
			t.Errorf("Warning %s", e)
		}
	}

	u := seedUpstreamCluster(t, f, 0, false)
	up := upstreamSvc("up-limits")
	up.Annotations = map[string]string{annConnLimit: "500", annTimeoutMemberConnect: "2000", annMonitorDelay: "8", annMonitorTimeout: "4", annMonitorMaxRetries: "3", annMonitorRetriesDown: "5"}
	us := toUpstream(up, u.nodes, nil)
	cl, mc := 500, 2000
	us.Monitor, us.ConnLimit, us.TimeoutMemberConnect = true, &cl, &mc
	us.MonitorDelay, us.MonitorTimeout, us.MonitorMaxRetries, us.MonitorMaxRetriesDown = 8, 4, 3, 5
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(up, id, addr)
	before = f.Calls()
	lb2, _ := migrationCloud(t, f, "create-monitor = true\n")
	ensureUntilReady(t, lb2, up, u.nodes)
	c = f.Calls()
	for _, op := range []string{"octavia.UpdateHealthMonitor", "octavia.CreateHealthMonitor", "octavia.DeleteHealthMonitor", "octavia.CreateListener", "octavia.DeleteListener", "octavia.BatchUpdateMembers"} {
		if c[op] != before[op] {
			t.Errorf("takeover: %s %d times (%s)", op, c[op]-before[op], f.CallSummary())
		}
	}
}

// monitor-max-retries-down: 0 is Octavia's default 3 (as upstream sends it: no value); above
// 10 is refused with its line.
func TestMonitorMaxRetriesDownConfig(t *testing.T) {
	if got := limitsConfig(t, "monitor-max-retries-down = 0\n").cfg.LoadBalancer.maxRetriesDown(); got != 3 {
		t.Errorf("0: %d, want 3", got)
	}
	if got := limitsConfig(t, "monitor-max-retries-down = 10\n").cfg.LoadBalancer.maxRetriesDown(); got != 10 {
		t.Errorf("10: %d", got)
	}
	_, err := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nmonitor-max-retries-down = 11\n"))
	if err == nil || !strings.Contains(err.Error(), "monitor-max-retries-down") {
		t.Errorf("11: %v", err)
	}
}
