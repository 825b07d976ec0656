package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// x-forwarded-for, as upstream: the Service's TCP listeners become HTTP with insert_headers
// X-Forwarded-For=true in front of HTTP pools; with proxy-protocol the Service is refused.
func TestXForwardedForSpec(t *testing.T) {
	c, _ := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = s\n"))
	tcp := v1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}
	udp := v1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}
	for _, tc := range []struct {
		name      string
		ann       map[string]string
		ports     []v1.ServicePort
		want      []string // per listener: protocol/pool protocol/xff
		err, warn string
	}{
		{name: "none", ports: []v1.ServicePort{tcp}, want: []string{"TCP/TCP/false"}},
		{name: "xff", ann: map[string]string{annXForwardedFor: "true"}, ports: []v1.ServicePort{tcp}, want: []string{"HTTP/HTTP/true"}},
		{name: "xff false", ann: map[string]string{annXForwardedFor: "false"}, ports: []v1.ServicePort{tcp}, want: []string{"TCP/TCP/false"}},
		{name: "xff bad value", ann: map[string]string{annXForwardedFor: "yes please"}, ports: []v1.ServicePort{tcp}, want: []string{"TCP/TCP/false"}, warn: annXForwardedFor},
		{name: "proxy", ann: map[string]string{annProxyProtocol: "v2"}, ports: []v1.ServicePort{tcp}, want: []string{"TCP/PROXYV2/false"}},
		{name: "proxy and xff", ann: map[string]string{annProxyProtocol: "true", annXForwardedFor: "true"}, ports: []v1.ServicePort{tcp}, err: "cannot be used together"},
		{name: "proxy off and xff", ann: map[string]string{annProxyProtocol: "false", annXForwardedFor: "true"}, ports: []v1.ServicePort{tcp}, want: []string{"HTTP/HTTP/true"}},
		{name: "xff with udp", ann: map[string]string{annXForwardedFor: "true"}, ports: []v1.ServicePort{tcp, udp}, want: []string{"HTTP/HTTP/true", "UDP/UDP/false"}, warn: "port 53 is UDP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := c.lb.spec("n", lbService("w", tc.ann, tc.ports...))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), annXForwardedFor) || !strings.Contains(err.Error(), annProxyProtocol) {
					t.Fatalf("err = %v, want %q naming both annotations", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ls := range spec.listeners {
				got = append(got, strings.Join([]string{ls.Protocol, ls.PoolProtocol, map[bool]string{true: "true", false: "false"}[ls.InsertXFF]}, "/"))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("listeners %q, want %q", got, tc.want)
			}
			warns := strings.Join(spec.warnings, "\n")
			if (tc.warn == "") != (warns == "") || !strings.Contains(warns, tc.warn) {
				t.Errorf("warnings %q, want one with %q", warns, tc.warn)
			}
		})
	}
}

// A plain TCP listener keeps the fingerprint it had before x-forwarded-for existed: no
// listener of an earlier ccm is replaced by the upgrade.
func TestXForwardedForKeepsOldFingerprints(t *testing.T) {
	ls := listenerSpec{Protocol: "TCP", Port: 80, NodePort: 30080, PoolProtocol: "TCP", Method: "ROUND_ROBIN"}
	on := ls
	on.InsertXFF = true
	if ls.fingerprint() != on.fingerprint() {
		t.Errorf("the X-Forwarded-For flag changed the fingerprint: it is updated in place, not by a new listener")
	}
}

// Through gophercloud against the fake: the annotation makes an HTTP listener with the header;
// an unchanged sync writes nothing; turning it off recreates that listener as TCP (its
// protocol cannot change) with a Normal Event, and back again; Octavia's refusal of
// insert_headers on a TCP listener is modelled.
func TestXForwardedForConverges(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	svc := lbService("xff", map[string]string{annXForwardedFor: "true"},
		v1.ServicePort{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
		v1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	svc.Annotations[annXForwardedFor] = "true"
	ensureUntilReady(t, lb, svc, nodes)
	l := fakeLB(t, f, "xff").Listeners
	if len(l) != 2 || l[1].Protocol != "HTTP" || l[1].PoolProtocol != "HTTP" || l[1].InsertHeaders["X-Forwarded-For"] != "true" || l[0].Protocol != "UDP" || len(l[0].InsertHeaders) != 0 {
		t.Fatalf("listeners %+v, want UDP/53 and HTTP/80 with X-Forwarded-For", l)
	}
	w := f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if n := f.Writes() - w; n != 0 {
		t.Errorf("an unchanged sync made %d writes (%s)", n, f.CallSummary())
	}

	for _, step := range []struct {
		xff              string
		proto, from      string
		wantHeader       bool
		wantDel, wantNew int
	}{{"false", "TCP", "HTTP", false, 1, 1}, {"true", "HTTP", "TCP", true, 1, 1}} {
		before := f.Calls()
		svc.Annotations[annXForwardedFor] = step.xff
		ensureUntilReady(t, lb, svc, nodes)
		after := f.Calls()
		if d, n := after["octavia.DeleteListener"]-before["octavia.DeleteListener"], after["octavia.CreateListener"]-before["octavia.CreateListener"]; d != step.wantDel || n != step.wantNew {
			t.Errorf("xff=%s: %d listener deletes, %d creates, want %d and %d", step.xff, d, n, step.wantDel, step.wantNew)
		}
		if n := after["octavia.CreateLoadBalancer"] - before["octavia.CreateLoadBalancer"]; n != 0 {
			t.Errorf("xff=%s: %d load balancer creates", step.xff, n)
		}
		l := fakeLB(t, f, "xff").Listeners
		if len(l) != 2 || l[1].Protocol != step.proto || l[1].PoolProtocol != step.proto || (l[1].InsertHeaders["X-Forwarded-For"] == "true") != step.wantHeader {
			t.Errorf("xff=%s: listeners %+v", step.xff, l)
		}
		if ok, evs := sink.Await(svc, 3*time.Second, "Normal ListenerRecreated", "port 80", step.from+" replaced by "+step.proto); !ok {
			t.Errorf("xff=%s: no ListenerRecreated Event: %q", step.xff, evs)
		}
		w := f.Writes()
		ensureUntilReady(t, lb, svc, nodes)
		if n := f.Writes() - w; n != 0 {
			t.Errorf("xff=%s: the next sync made %d writes (%s)", step.xff, n, f.CallSummary())
		}
	}
	for _, ev := range sink.On(svc) {
		if strings.HasPrefix(ev, "Warning") && !strings.Contains(ev, "port 53 is UDP") {
			t.Errorf("unexpected Warning %q", ev)
		}
	}

	cl, err := c.sess.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lbID := fakeLB(t, f, "xff").ID
	_, err = listeners.Create(context.Background(), cl.lb, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "TCP", ProtocolPort: 8080,
		InsertHeaders: map[string]string{"X-Forwarded-For": "true"}}).Extract()
	if err == nil || !strings.Contains(err.Error(), "insert_headers") {
		t.Errorf("insert_headers on a TCP listener: %v, want Octavia's refusal", err)
	}
	h, err := listeners.Create(context.Background(), cl.lb, listeners.CreateOpts{LoadbalancerID: lbID, Protocol: "HTTP", ProtocolPort: 8081}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	_, err = pools.Create(context.Background(), cl.lb, pools.CreateOpts{ListenerID: h.ID, Protocol: "TCP", LBMethod: "ROUND_ROBIN"}).Extract()
	if err == nil || !strings.Contains(err.Error(), "not valid for a HTTP listener") {
		t.Errorf("a TCP pool behind an HTTP listener: %v, want Octavia's refusal", err)
	}
}

// A header removed by hand from an HTTP listener the Service's annotation asks for is drift:
// put back in place (one listener update), reported as a repair.
func TestXForwardedForDriftRepaired(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	svc := lbService("xd", map[string]string{annXForwardedFor: "true"})
	ensureUntilReady(t, lb, svc, nodes)
	cl, err := c.sess.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hs, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: fakeLB(t, f, "xd").ID}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all, _ := listeners.ExtractListeners(hs)
	none := map[string]string{}
	if _, err := listeners.Update(context.Background(), cl.lb, all[0].ID, listeners.UpdateOpts{InsertHeaders: &none}).Extract(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // PENDING_UPDATE
	before := f.Calls()
	ensureUntilReady(t, lb, svc, nodes)
	after := f.Calls()
	if n := after["octavia.UpdateListener"] - before["octavia.UpdateListener"]; n != 1 || after["octavia.DeleteListener"] != before["octavia.DeleteListener"] {
		t.Errorf("repair: %d listener updates (want 1), %d deletes (want 0)", n, after["octavia.DeleteListener"]-before["octavia.DeleteListener"])
	}
	if got := fakeLB(t, f, "xd").Listeners[0].InsertHeaders["X-Forwarded-For"]; got != "true" {
		t.Errorf("header after the repair: %q", got)
	}
	if ok, evs := sink.Await(svc, 3*time.Second, "Warning", "X-Forwarded-For"); !ok {
		t.Errorf("no repair Warning: %q", evs)
	}
}

// newSink is an Event sink and the stop channel for Initialize.
func newSink(t *testing.T) (*cloudtest.EventSink, chan struct{}) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return cloudtest.NewEventSink(), stop
}

// A Service upstream served with x-forwarded-for (HTTP listeners with the header, HTTP pools)
// is taken over in place: no create or delete of anything that serves, the same address, no
// Warning, and the next sync writes nothing.
func TestXForwardedForTakeover(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("up-xff")
	svc.Annotations[annXForwardedFor] = "true"
	us := toUpstream(svc, u.nodes, nil)
	us.XForwardedFor = true
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(svc, id, addr)
	lb, sink := migrationCloud(t, f, "")
	if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].IP, addr)
	}
	if c, d := servingChanges(f.Calls()); c != 0 || d != 0 || f.Calls()["octavia.CreateListener"] != 0 {
		t.Errorf("takeover: %s", f.CallSummary())
	}
	w := f.Writes()
	ensureUntilReady(t, lb, svc, u.nodes)
	if n := f.Writes() - w; n != 0 {
		t.Errorf("the sync after the takeover made %d writes (%s)", n, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	if ws := warnings(sink, svc); len(ws) != 0 {
		t.Errorf("Warnings %q", ws)
	}
}

// planListeners names a listener replaced on the same port with another protocol (Octavia
// cannot change a listener's protocol); a port change or a UDP listener next to it is not one.
func TestPlanListenersRecreated(t *testing.T) {
	id := ownership.Of(cluster, lbService("p", nil))
	tcp80 := listenerSpec{Protocol: "TCP", Port: 80, NodePort: 30080, PoolProtocol: "TCP", Method: "ROUND_ROBIN"}
	http80 := listenerSpec{Protocol: "HTTP", Port: 80, NodePort: 30080, PoolProtocol: "HTTP", Method: "ROUND_ROBIN", InsertXFF: true}
	tcp81, udp80 := tcp80, tcp80
	tcp81.Port = 81
	udp80.Protocol, udp80.PoolProtocol = "UDP", "UDP"
	have := func(ls listenerSpec) listeners.Listener {
		return listeners.Listener{ID: "l-" + ls.key(), Protocol: ls.Protocol, ProtocolPort: ls.Port, DefaultPoolID: "p-" + ls.key(), Description: listenerDescription(id, ls)}
	}
	for _, tc := range []struct {
		name string
		want []listenerSpec
		have []listeners.Listener
		out  string
	}{
		{"TCP to HTTP", []listenerSpec{http80}, []listeners.Listener{have(tcp80)}, "port 80: listener TCP replaced by HTTP"},
		{"HTTP to TCP", []listenerSpec{tcp80}, []listeners.Listener{have(http80)}, "port 80: listener HTTP replaced by TCP"},
		{"port change", []listenerSpec{tcp81}, []listeners.Listener{have(tcp80)}, ""},
		{"unchanged", []listenerSpec{tcp80}, []listeners.Listener{have(tcp80)}, ""},
		{"UDP added next to TCP", []listenerSpec{tcp80, udp80}, []listeners.Listener{have(tcp80)}, ""},
		{"TCP to UDP", []listenerSpec{udp80}, []listeners.Listener{have(tcp80)}, ""},
	} {
		p, err := planListeners(id, &lbSpec{name: "n", listeners: tc.want}, tc.have, nil, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Join(p.Recreated, "; "); got != tc.out {
			t.Errorf("%s: Recreated %q, want %q", tc.name, got, tc.out)
		}
	}
}
