package openstack

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/pagination"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// Each setting ccm makes its objects with and no annotation chooses (admin_state_up of the
// listener, pool, monitor and members, a member's weight and backup, an HTTP monitor's method
// and codes) is compared: a case per field, each failing if its comparison is removed, and each
// writing only that field in its object's one update.
func TestPlanObjectSettings(t *testing.T) {
	for _, tc := range objectSettingsCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := planPool("TCP/80", tc.want, tc.have)
			if got := p.writes(); got != tc.writes {
				t.Errorf("writes = %d, want %d (plan %+v)", got, tc.writes, p)
			}
			if len(p.Repairs) != len(tc.repairs) {
				t.Fatalf("repairs = %q, want %d mentioning %q", p.Repairs, len(tc.repairs), tc.repairs)
			}
			for _, part := range tc.repairs {
				if !strings.Contains(strings.Join(p.Repairs, "; "), part) {
					t.Errorf("repairs %q do not mention %q", p.Repairs, part)
				}
			}
			if strings.Contains(tc.name, "annotation") && strings.Contains(strings.Join(p.Repairs, ";"), "delay") {
				t.Errorf("repairs %q name the delay an annotation sets", p.Repairs)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

type settingsCase struct {
	name       string
	have, want poolState
	writes     int
	repairs    []string // parts of the repairs
	check      func(t *testing.T, p poolPlan)
}

// objectSettingsCases: an HTTP monitor and two members, as wanted, then one field changed.
func objectSettingsCases() []settingsCase {
	want, same, with := settingsFixture()
	return append(memberSettingsCases(want, same, with), monitorSettingsCases(want, with)...)
}

// settingsFixture: the wanted state, the same observed, and a copy of it changed by f.
func settingsFixture() (want, same poolState, with func(f func(*poolState)) poolState) {
	a := memberKey{Address: "10.0.0.10", Port: 30080}
	b := memberKey{Address: "10.0.0.11", Port: 30080}
	httpMon := wantedMonitor(&monitorSpec{Type: "HTTP", URLPath: "/healthz", Want: monitorValues{Delay: 5, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3}})
	want = poolState{Method: "ROUND_ROBIN", Monitor: httpMon, Members: []memberKey{a, b}, ListenerUp: true, PoolUp: true, MemberSettings: wantedMemberSettings}
	obsMon := *httpMon
	obsMon.ID = "hm"
	same = poolState{Method: "ROUND_ROBIN", Monitor: &obsMon, Members: []memberKey{a, b}, Tags: []string{membersTag([]memberKey{a, b})},
		ListenerUp: true, PoolUp: true, MemberStates: []memberState{{"m1", a.Address, a.Port, wantedMemberSettings}, {"m2", b.Address, b.Port, wantedMemberSettings}}}
	with = func(f func(*poolState)) poolState {
		s := same
		s.MemberStates = append([]memberState(nil), same.MemberStates...)
		m := *same.Monitor
		s.Monitor = &m
		f(&s)
		return s
	}
	return want, same, with
}

// memberSettingsCases change the listener's, the pool's and the members' settings.
func memberSettingsCases(want, same poolState, with func(f func(*poolState)) poolState) []settingsCase {
	a, b := want.Members[0], want.Members[1]
	return []settingsCase{
		{"unchanged: no write", same, want, 0, nil, nil},
		{"listener disabled", with(func(s *poolState) { s.ListenerUp = false }), want, 1, []string{"listener TCP/80 admin_state_up was false"},
			func(t *testing.T, p poolPlan) {
				if o := listenerUpdate(listenerSpec{}, listeners.Listener{}, p); o.AdminStateUp == nil || !*o.AdminStateUp ||
					o.AllowedCIDRs != nil || o.ConnLimit != nil || o.InsertHeaders != nil || o.DefaultTlsContainerRef != nil || o.Description != nil {
					t.Errorf("listener update %+v, want admin_state_up true alone", o)
				}
			}},
		{"pool disabled", with(func(s *poolState) { s.PoolUp = false }), want, 1, []string{"pool TCP/80 admin_state_up was false"},
			func(t *testing.T, p poolPlan) {
				if o := poolUpdate(listenerSpec{Method: "ROUND_ROBIN"}, p); o.AdminStateUp == nil || !*o.AdminStateUp || o.LBMethod != "" || o.Persistence != nil {
					t.Errorf("pool update %+v, want admin_state_up true alone", o)
				}
			}},
		{"member weight", with(func(s *poolState) { s.MemberStates[0].Weight = 0 }), want, 1, []string{"member 10.0.0.10:30080 of TCP/80 was weight=0"},
			func(t *testing.T, p poolPlan) {
				if f := p.MemberFixes; len(f) != 1 || f[0].ID != "m1" || f[0].Weight == nil || *f[0].Weight != 1 || f[0].Backup != nil || f[0].Up != nil {
					t.Errorf("member fixes %+v, want m1's weight 1 alone", f)
				}
			}},
		{"member backup", with(func(s *poolState) { s.MemberStates[1].Backup = true }), want, 1, []string{"member 10.0.0.11:30080 of TCP/80 was backup=true"},
			func(t *testing.T, p poolPlan) {
				if f := p.MemberFixes; len(f) != 1 || f[0].ID != "m2" || f[0].Backup == nil || *f[0].Backup || f[0].Weight != nil || f[0].Up != nil {
					t.Errorf("member fixes %+v, want m2's backup false alone", f)
				}
			}},
		{"member disabled", with(func(s *poolState) { s.MemberStates[0].Up = false }), want, 1, []string{"member 10.0.0.10:30080 of TCP/80 was admin_state_up=false"},
			func(t *testing.T, p poolPlan) {
				if f := p.MemberFixes; len(f) != 1 || f[0].Up == nil || !*f[0].Up || f[0].Weight != nil || f[0].Backup != nil {
					t.Errorf("member fixes %+v, want admin_state_up true alone", f)
				}
			}},
		{"weight and backup of one member: one update", with(func(s *poolState) { s.MemberStates[0].Weight, s.MemberStates[0].Backup = 9, true }), want, 1,
			[]string{"was weight=9 backup=true"}, nil},
		{"two members changed: one update each", with(func(s *poolState) { s.MemberStates[0].Weight, s.MemberStates[1].Weight = 9, 9 }), want, 2,
			[]string{"10.0.0.10:30080", "10.0.0.11:30080"}, nil},
		{"a member changed and one removed: the settings ride in the member update", with(func(s *poolState) {
			s.MemberStates[0].Weight = 9
			s.Members = []memberKey{a}
		}), want, 1, []string{"members of TCP/80 were changed (1, want 2)", "weight=9"},
			func(t *testing.T, p poolPlan) {
				batch := memberBatch([]pools.CreateMemberOpts{{Address: a.Address, ProtocolPort: a.Port}, {Address: b.Address, ProtocolPort: b.Port}}, p.MemberFixes)
				if batch[0].Weight == nil || *batch[0].Weight != 1 || batch[1].Weight != nil || batch[0].Backup != nil {
					t.Errorf("batch %+v, want weight 1 on %s alone", batch, a.Address)
				}
			}},
		{"a member no longer wanted: its settings are not written", with(func(s *poolState) {
			s.MemberStates = append(s.MemberStates, memberState{"m3", "10.0.0.12", 30080, memberSettings{Weight: 0}})
		}), want, 0, nil, nil},
	}
}

// monitorSettingsCases change the health monitor's settings.
func monitorSettingsCases(want poolState, with func(f func(*poolState)) poolState) []settingsCase {
	return []settingsCase{
		{"monitor http_method", with(func(s *poolState) { s.Monitor.HTTPMethod = "POST" }), want, 1, []string{`health monitor of TCP/80 settings were http_method="POST"`},
			func(t *testing.T, p poolPlan) {
				if o := monitorUpdateOpts(p.MonitorChange); !reflect.DeepEqual(o, monitors.UpdateOpts{HTTPMethod: "GET"}) {
					t.Errorf("monitor update %+v, want http_method GET alone", o)
				}
			}},
		{"monitor expected_codes", with(func(s *poolState) { s.Monitor.ExpectedCodes = "200-599" }), want, 1, []string{`expected_codes="200-599"`},
			func(t *testing.T, p poolPlan) {
				if o := monitorUpdateOpts(p.MonitorChange); !reflect.DeepEqual(o, monitors.UpdateOpts{ExpectedCodes: "200"}) {
					t.Errorf("monitor update %+v, want expected_codes 200 alone", o)
				}
			}},
		{"monitor disabled", with(func(s *poolState) { s.Monitor.Up = false }), want, 1, []string{"admin_state_up=false"},
			func(t *testing.T, p poolPlan) {
				if o := monitorUpdateOpts(p.MonitorChange); o.AdminStateUp == nil || !*o.AdminStateUp || o.Delay != 0 || o.HTTPMethod != "" {
					t.Errorf("monitor update %+v, want admin_state_up true alone", o)
				}
			}},
		{"a TCP monitor: method and codes not compared", with(func(s *poolState) {
			s.Monitor = &observedMonitor{ID: "hm", Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3, HTTPMethod: "GET", ExpectedCodes: "200", Up: true}
		}), func() poolState {
			w := want
			w.Monitor = wantedMonitor(&monitorSpec{Type: "TCP", Want: monitorValues{Delay: 5, Timeout: 3, MaxRetries: 1, MaxRetriesDown: 3}})
			return w
		}(), 0, nil, nil},
		{"monitor url_path", with(func(s *poolState) { s.Monitor.URLPath = "/" }), want, 1, []string{`url_path="/"`}, nil},
		{"monitor delay: only the delay written", with(func(s *poolState) { s.Monitor.Delay = 60 }), want, 1, []string{"settings were delay=60"},
			func(t *testing.T, p poolPlan) {
				if o := monitorUpdateOpts(p.MonitorChange); !reflect.DeepEqual(o, monitors.UpdateOpts{Delay: 5}) {
					t.Errorf("monitor update %+v, want delay 5 alone", o)
				}
			}},
		{"timings by annotation, method by hand: only the method is a repair", with(func(s *poolState) { s.Monitor.Delay, s.Monitor.HTTPMethod = 60, "HEAD" }),
			func() poolState { w := want; w.MonitorByAnnotation = true; return w }(), 1, []string{`settings were http_method="HEAD"`}, nil},
	}
}

// Each setting changed by hand at the fake is put back by the next sync with one update of its
// object carrying that field, reported in a LoadBalancerDriftRepaired Warning; the sync after
// writes nothing. Counted at the fake.
func TestObjectSettingsDriftRepaired(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID)
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc := lbService("settings", map[string]string{annHealthMonitor: "true"})
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000 // an HTTP monitor
	nodes := lbNodes("10.0.0.10", "10.0.0.11")
	ensureUntilReady(t, lb, svc, nodes)
	name := "kube_service_" + cluster + "_default_settings"
	state := func() string {
		s, ok := f.LoadBalancerState(name, "")
		if !ok {
			t.Fatal("no load balancer")
		}
		return s
	}
	orig := state()
	if l := fakeLB(t, f, "settings").Listeners[0]; l.Monitor != "HTTP" || l.MonitorHTTP != "GET 200" || !l.ListenerUp || !l.PoolUp || !l.MonitorUp ||
		!reflect.DeepEqual(l.MemberSettings, []string{"10.0.0.10:30080 weight=1 backup=false up=true", "10.0.0.11:30080 weight=1 backup=false up=true"}) {
		t.Fatalf("as created: %+v", l)
	}
	for _, tc := range []struct {
		name, op, mentions string
		brk                func() bool
	}{
		{"listener admin_state_up", "octavia.UpdateListener", "listener TCP/80 admin_state_up was false", func() bool { return f.SetListenerUp(name, 80, false) }},
		{"pool admin_state_up", "octavia.UpdatePool", "pool TCP/80 admin_state_up was false", func() bool { return f.SetPoolUp(name, 80, false) }},
		{"member weight", "octavia.UpdateMember", "member 10.0.0.10:30080 of TCP/80 was weight=0", func() bool { return f.SetMemberSettings(name, 80, 0, false, true) }},
		{"member backup", "octavia.UpdateMember", "member 10.0.0.10:30080 of TCP/80 was backup=true", func() bool { return f.SetMemberSettings(name, 80, 1, true, true) }},
		{"member weight, backup and admin_state_up", "octavia.UpdateMember", "was weight=7 backup=true admin_state_up=false",
			func() bool { return f.SetMemberSettings(name, 80, 7, true, false) }},
		{"monitor http_method", "octavia.UpdateHealthMonitor", `health monitor of TCP/80 settings were http_method="HEAD"`,
			func() bool { return f.SetMonitorHTTP(name, 80, "HEAD", "200") }},
		{"monitor expected_codes", "octavia.UpdateHealthMonitor", `health monitor of TCP/80 settings were expected_codes="200-399"`,
			func() bool { return f.SetMonitorHTTP(name, 80, "GET", "200-399") }},
		{"monitor admin_state_up", "octavia.UpdateHealthMonitor", "health monitor of TCP/80 settings were admin_state_up=false",
			func() bool { return f.SetMonitorUp(name, 80, false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := len(repairEvents(sink, svc))
			if !tc.brk() || state() == orig {
				t.Fatal("nothing changed at the fake")
			}
			before, w := f.Calls(), f.Writes()
			ensureUntilReady(t, lb, svc, nodes)
			after := f.Calls()
			t.Logf("%s: %d write(s) %s", tc.name, f.Writes()-w, writesBetween(before, after))
			if f.Writes()-w != 1 || after[tc.op]-before[tc.op] != 1 {
				t.Errorf("repair: %d writes, %d %s, want exactly one %s", f.Writes()-w, after[tc.op]-before[tc.op], tc.op, tc.op)
			}
			if got := state(); got != orig {
				t.Errorf("after the repair:\n%s\nwant\n%s", got, orig)
			}
			evs := repairEvents(sink, svc)
			if len(evs) != events+1 || !strings.Contains(evs[len(evs)-1], tc.mentions) {
				t.Errorf("repair Events %q, want one more mentioning %q", evs[events:], tc.mentions)
			}
			w = f.Writes()
			ensureUntilReady(t, lb, svc, nodes)
			if n := f.Writes() - w; n != 0 {
				t.Errorf("the sync after the repair made %d writes", n)
			}
		})
	}

	// A member's weight changed by hand while a Node is added: the member update carries it.
	if !f.SetMemberSettings(name, 80, 0, false, true) {
		t.Fatal("no member")
	}
	nodes = lbNodes("10.0.0.10", "10.0.0.11", "10.0.0.12")
	before, w := f.Calls(), f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if n, b := f.Writes()-w, f.Calls()["octavia.BatchUpdateMembers"]-before["octavia.BatchUpdateMembers"]; n != 1 || b != 1 {
		t.Errorf("a Node added and a weight changed: %d writes, %d member updates, want the one member update (%s)", n, b, f.CallSummary())
	}
	if got := fakeLB(t, f, "settings").Listeners[0].MemberSettings; !reflect.DeepEqual(got, []string{"10.0.0.10:30080 weight=1 backup=false up=true",
		"10.0.0.11:30080 weight=1 backup=false up=true", "10.0.0.12:30080 weight=1 backup=false up=true"}) {
		t.Errorf("members %q, want three of weight 1", got)
	}
}

// writesBetween names the write calls made between two call counts of the fake.
func writesBetween(before, after map[string]int) string {
	var out []string
	for op, n := range after {
		if fake.IsWrite(op) && n > before[op] {
			out = append(out, fmt.Sprintf("%s=%d", op, n-before[op]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The fake holds these settings as Octavia does, through gophercloud: an HTTP monitor created
// without a method or codes reads back GET and 200 (a TCP one has none and refuses them), a
// member update changes only what it carries, a weight beyond 256 is refused, and a batch
// member update keeps an existing member's ID and settings unless it carries them.
func TestFakeObjectSettings(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	lb := lbOf(t, c)
	svc := lbService("fs", map[string]string{annHealthMonitor: "true"})
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5", "10.0.0.6"))
	cl, err := c.sess.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ls, err := listeners.ExtractListeners(mustPages(t)(listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: fakeLB(t, f, "fs").ID}).AllPages(ctx)))
	if err != nil || len(ls) != 1 || !ls[0].AdminStateUp {
		t.Fatalf("listeners %+v, %v: want one, enabled", ls, err)
	}
	p, err := pools.Get(ctx, cl.lb, ls[0].DefaultPoolID).Extract()
	if err != nil || !p.AdminStateUp {
		t.Fatalf("pool %+v, %v: want it enabled", p, err)
	}
	wait := func() { time.Sleep(150 * time.Millisecond) } // PENDING_UPDATE
	m, err := monitors.Get(ctx, cl.lb, p.MonitorID).Extract()
	if err != nil || m.HTTPMethod != "GET" || m.ExpectedCodes != "200" || m.URLPath != "/healthz" || !m.AdminStateUp {
		t.Fatalf("monitor %+v, %v: want GET 200 /healthz, enabled", m, err)
	}
	if _, err := monitors.Update(ctx, cl.lb, m.ID, monitors.UpdateOpts{ExpectedCodes: "2xx"}).Extract(); err == nil || !strings.Contains(err.Error(), "expected_codes") {
		t.Errorf("expected_codes 2xx: %v, want refused", err)
	}
	ms, err := pools.ExtractMembers(mustPages(t)(pools.ListMembers(cl.lb, p.ID, pools.ListMembersOpts{}).AllPages(ctx)))
	if err != nil || len(ms) != 2 || ms[0].Weight != 1 || ms[0].Backup || !ms[0].AdminStateUp {
		t.Fatalf("members %+v, %v: want two of weight 1, not backup, enabled", ms, err)
	}
	w300, w5, yes := 300, 5, true
	if _, err := pools.UpdateMember(ctx, cl.lb, p.ID, ms[0].ID, pools.UpdateMemberOpts{Weight: &w300}).Extract(); err == nil {
		t.Error("weight 300 accepted")
	}
	if _, err := pools.UpdateMember(ctx, cl.lb, p.ID, ms[0].ID, pools.UpdateMemberOpts{Weight: &w5, Backup: &yes}).Extract(); err != nil {
		t.Fatal(err)
	}
	wait()
	batch := []pools.BatchUpdateMemberOpts{{Address: ms[0].Address, ProtocolPort: ms[0].ProtocolPort}, {Address: ms[1].Address, ProtocolPort: ms[1].ProtocolPort, Weight: &w5}}
	if err := pools.BatchUpdateMembers(ctx, cl.lb, p.ID, batch).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	after, _ := pools.ExtractMembers(mustPages(t)(pools.ListMembers(cl.lb, p.ID, pools.ListMembersOpts{}).AllPages(ctx)))
	if len(after) != 2 || after[0].ID != ms[0].ID || after[0].Weight != 5 || !after[0].Backup || after[1].Weight != 5 || after[1].Backup {
		t.Errorf("after the member updates: %+v, want the first kept (weight 5, backup), the second of weight 5", after)
	}
	wait()
	if err := monitors.Delete(ctx, cl.lb, m.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	wait()
	if m, err = monitors.Create(ctx, cl.lb, monitors.CreateOpts{PoolID: p.ID, Type: "HTTP", Delay: 5, Timeout: 3, MaxRetries: 1}).Extract(); err != nil ||
		m.HTTPMethod != "GET" || m.ExpectedCodes != "200" || m.URLPath != "/" {
		t.Errorf("an HTTP monitor created with neither method, codes nor path: %+v, %v, want Octavia's GET 200 /", m, err)
	}
	wait()
	tcp := lbService("fs-tcp", map[string]string{annHealthMonitor: "true"})
	ensureUntilReady(t, lb, tcp, lbNodes("10.0.0.5"))
	tl, _ := listeners.ExtractListeners(mustPages(t)(listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: fakeLB(t, f, "fs-tcp").ID}).AllPages(ctx)))
	tp, _ := pools.Get(ctx, cl.lb, tl[0].DefaultPoolID).Extract()
	tm, err := monitors.Get(ctx, cl.lb, tp.MonitorID).Extract()
	if err != nil || tm.Type != "TCP" || tm.HTTPMethod != "" || tm.ExpectedCodes != "" {
		t.Fatalf("TCP monitor %+v, %v: want no method or codes", tm, err)
	}
	if _, err := monitors.Update(ctx, cl.lb, tm.ID, monitors.UpdateOpts{HTTPMethod: "GET"}).Extract(); err == nil {
		t.Error("http_method accepted on a TCP monitor")
	}
}

func mustPages(t *testing.T) func(pagination.Page, error) pagination.Page {
	return func(p pagination.Page, err error) pagination.Page {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}
