package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// tls-insecure as upstream reads it (a string compared with "true"): verification is off for
// the exact value true only (gcfg unquotes and trims it first, as for upstream); every other
// value keeps it on and is reported once with its line, except false and the empty value
// charts render. A key without a value is an error, as it is upstream's (gcfg has no blank
// string).
func TestTLSInsecureAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		line     string
		insecure bool
		report   bool
	}{
		{"tls-insecure = true", true, false},
		{`tls-insecure = "true"`, true, false},
		{"tls-insecure =   true   ", true, false},
		{"tls-insecure = True", false, true},
		{"tls-insecure = TRUE", false, true},
		{"tls-insecure = 1", false, true},
		{"tls-insecure = t", false, true},
		{"tls-insecure = yes", false, true},
		{"tls-insecure = on", false, true},
		{`tls-insecure = " true"`, false, true},
		{"tls-insecure = false", false, false},
		{"tls-insecure = 0", false, true},
		{`tls-insecure = ""`, false, false},
		{"", false, false},
	} {
		logged := captureNotices(t)
		conf := upstreamBase + tc.line + "\n"
		c, err := New(strings.NewReader(conf))
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := c.cfg.insecureTLS(); got != tc.insecure {
			t.Errorf("%q: verification off = %v, want %v", tc.line, got, tc.insecure)
		}
		if !tc.report {
			if len(*logged) != 0 {
				t.Errorf("%q: reported %q", tc.line, *logged)
			}
			continue
		}
		if len(*logged) != 1 || !strings.HasPrefix((*logged)[0], "line 7: [Global] tls-insecure: ") || !strings.Contains((*logged)[0], "certificates are verified") {
			t.Errorf("%q: reported %q, want one line 7 report saying verification stays on", tc.line, *logged)
		}
		if n := c.cfg.Notices(); len(n) != 1 || n[0] != (*logged)[0] {
			t.Errorf("%q: Notices() %q, want the start-up line", tc.line, n)
		}
	}
	if _, err := New(strings.NewReader(upstreamBase + "tls-insecure\n")); err == nil || !strings.Contains(err.Error(), "line 7: [Global] tls-insecure") {
		t.Errorf("tls-insecure without a value: %v, want an error naming line 7", err)
	}
}

// Through a TLS server whose certificate nothing trusts: tls-insecure = True (which
// strconv.ParseBool would take) is refused at the handshake as upstream refuses it; true
// connects.
func TestTLSInsecureTrueOnlyConnects(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	get := func(value string) error {
		return getWithConfig(t, upstreamBase+"tls-insecure = "+value+"\n", srv.URL)
	}
	captureNotices(t)
	if err := get("true"); err != nil {
		t.Fatalf("tls-insecure = true: %v", err)
	}
	for _, v := range []string{"True", "1", "yes", "false"} {
		if err := get(v); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("tls-insecure = %s: %v, want the untrusted certificate refused", v, err)
		}
	}
}

// Every boolean Service annotation reads as upstream's getBoolFromServiceAnnotation (and
// proxy-protocol as its getProxyProtocolFromServiceAnnotation): only the exact strings
// upstream compares with have their meaning; any other value is the default, with a Warning
// naming the annotation. The default differs per row (create-monitor = true makes
// enable-health-monitor's true), so a value read as the default is told from one read as
// true or false.
func TestBoolAnnotationsAsUpstream(t *testing.T) {
	c, err := New(strings.NewReader(upstreamBase + "[LoadBalancer]\nsubnet-id = s\ncreate-monitor = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	const T, F, D = "true", "false", "default"
	// upstream is upstream's reading of each value: true, false or the default (then warned).
	upstream := map[string]string{"true": T, "True": D, "TRUE": D, "1": D, "t": D, " true": D, "yes": D, "false": F, "0": D, "": D}
	for _, a := range []struct {
		key  string
		def  bool
		read func(*lbSpec) bool
	}{
		{annXForwardedFor, false, func(s *lbSpec) bool { return s.listeners[0].Protocol == "HTTP" && s.listeners[0].InsertXFF }},
		{annInternal, false, func(s *lbSpec) bool { return s.internal }},
		{annHealthMonitor, true, func(s *lbSpec) bool { return s.listeners[0].Monitor != nil }},
		{annKeepFloatingIP, false, func(s *lbSpec) bool { return s.keepFIP }},
	} {
		for v, reading := range upstream {
			s, err := c.lb.spec("n", lbService("w", map[string]string{a.key: v}))
			if err != nil {
				t.Fatalf("%s=%q: %v", a.key, v, err)
			}
			want := map[string]bool{T: true, F: false, D: a.def}[reading]
			if got := a.read(s); got != want {
				t.Errorf("%s=%q: read as %v, upstream reads %s (%v)", a.key, v, got, reading, want)
			}
			warns := strings.Join(s.warnings, "\n")
			if a.key == annInternal && internalUnclear(map[string]string{a.key: v}) {
				// Upstream's false, an earlier ccm's true: the exposure is kept (TestInternalUnclearKeepsExposure).
				if !s.internalUnclear || len(s.warnings) != 1 || !strings.Contains(warns, "kept as it is") {
					t.Errorf("%s=%q: unclear %v, warnings %q, want the load balancer kept as it is", a.key, v, s.internalUnclear, warns)
				}
				continue
			}
			if reading == D && (len(s.warnings) != 1 || !strings.Contains(warns, a.key) || !strings.Contains(warns, fmt.Sprintf("using the default, %v", a.def))) {
				t.Errorf("%s=%q: warnings %q, want one naming the annotation and the default %v", a.key, v, warns, a.def)
			}
			if reading != D && warns != "" {
				t.Errorf("%s=%q: warnings %q", a.key, v, warns)
			}
		}
	}
	// proxy-protocol: true and v1 are PROXY, v2 PROXYV2, exactly; false and "" are off without
	// a word (upstream's default "false"), the rest off with a Warning.
	for v, want := range map[string]string{"true": "PROXY", "v1": "PROXY", "v2": "PROXYV2", "True": "", "TRUE": "", "1": "", "t": "", " true": "", "yes": "", "V2": "", " v1": "", "false": "", "0": "", "": ""} {
		s, err := c.lb.spec("n", lbService("w", map[string]string{annProxyProtocol: v}))
		if err != nil {
			t.Fatalf("proxy-protocol=%q: %v", v, err)
		}
		got := ""
		if p := s.listeners[0].PoolProtocol; p != "TCP" {
			got = p
		}
		if got != want {
			t.Errorf("proxy-protocol=%q: pool %q, upstream's %q", v, got, want)
		}
		if sv := lbService("w", map[string]string{annProxyProtocol: v}); c.lb.statusOpts(sv).proxy != (want != "") {
			t.Errorf("proxy-protocol=%q: status with proxy = %v, want %v", v, !(want != ""), want != "")
		} else if st := lbStatus([]string{"192.0.2.9"}, sv, c.lb.statusOpts(sv)); (st.Ingress[0].IPMode != nil && *st.Ingress[0].IPMode == v1.LoadBalancerIPModeProxy) != (want != "") {
			t.Errorf("proxy-protocol=%q: status %+v, want ipMode Proxy only with the proxy protocol", v, st.Ingress[0])
		}
		silent := v == "false" || v == "" || want != ""
		if warns := strings.Join(s.warnings, "\n"); silent != (warns == "") || (!silent && !strings.Contains(warns, annProxyProtocol)) {
			t.Errorf("proxy-protocol=%q: warnings %q", v, warns)
		}
	}
}

// A takeover of a load balancer the upstream CCM made while the Service carried a boolean
// annotation upstream did not read as true (x-forwarded-for: "True" left its TCP listener,
// openstack-internal-load-balancer: "True" its floating IP, enable-health-monitor: "0" under
// create-monitor = true its monitor): ccm reads them as upstream did, so the takeover makes
// exactly the writes of the same takeover without the annotation (the adoption marks): no
// listener, pool, monitor or floating IP created, replaced or deleted; the next sync writes
// nothing, and one Warning names the annotation.
func TestBoolAnnotationTakeoverKeepsUpstreamLB(t *testing.T) {
	takeover := func(t *testing.T, key, value string, monitor bool) (writes map[string]int, f *fake.Cloud, sink *cloudtest.EventSink, svc *v1.Service) {
		f = newFake(t, fake.Options{})
		u := seedUpstreamCluster(t, f, 0, false)
		svc = upstreamSvc("up-bool")
		if key != "" {
			svc.Annotations[key] = value
		}
		us := toUpstream(svc, u.nodes, nil)
		us.Monitor = monitor
		id, addr := f.SeedUpstream(us)
		adoptedByUpstream(svc, id, addr)
		extra := ""
		if monitor {
			extra = "create-monitor = true\n"
		}
		lb, sink := migrationCloud(t, f, extra)
		if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addr {
			t.Errorf("address %s, want %s", st.Ingress[0].IP, addr)
		}
		writes = map[string]int{}
		for op, n := range f.Calls() {
			if !strings.Contains(op, ".Get") && !strings.Contains(op, ".List") && !strings.HasSuffix(op, "Versions") && op != "keystone.CreateToken" {
				writes[op] = n
			}
		}
		w := f.Writes()
		ensureUntilReady(t, lb, svc, u.nodes)
		if n := f.Writes() - w; n != 0 {
			t.Errorf("the sync after the takeover made %d writes (%s)", n, f.CallSummary())
		}
		return writes, f, sink, svc
	}
	for _, tc := range []struct {
		key, value string
		monitor    bool
	}{
		{annXForwardedFor, "True", false},
		{annInternal, "True", false},
		{annHealthMonitor, "0", true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			base, _, _, _ := takeover(t, "", "", tc.monitor)
			got, f, sink, svc := takeover(t, tc.key, tc.value, tc.monitor)
			if fmt.Sprint(got) != fmt.Sprint(base) {
				t.Errorf("takeover writes %v, without the annotation %v", got, base)
			}
			if got["octavia.CreateListener"]+got["octavia.DeleteListener"]+got["octavia.DeleteHealthMonitor"]+got["neutron.DeleteFloatingIP"] != 0 {
				t.Errorf("takeover replaced what serves: %v", got)
			}
			if l := fakeLB(t, f, "up-bool").Listeners; len(l) != 1 || l[0].Protocol != "TCP" || (l[0].Monitor != "") != tc.monitor {
				t.Errorf("listeners after the takeover %+v", l)
			}
			if len(f.FloatingIPs()) != 1 {
				t.Errorf("floating IPs after the takeover: %+v", f.FloatingIPs())
			}
			if ok, evs := sink.Await(svc, 3*time.Second, "Warning", tc.key, "not true or false"); !ok {
				t.Errorf("no Warning naming %s: %q", tc.key, evs)
			}
		})
	}
}

// An internal annotation that upstream reads as false and earlier ccm versions read as true
// (True, 1, t) changes no load balancer's exposure: an internal one stays internal, a public
// one keeps its floating IP, each with 0 writes; a new one is not created.
func TestInternalUnclearKeepsExposure(t *testing.T) {
	for v, want := range map[string]bool{"True": true, "1": true, "t": true, "TRUE": true, "true": false, "false": false, "yes": false, "0": false, "": false} {
		if got := internalUnclear(map[string]string{annInternal: v}); got != want {
			t.Errorf("internalUnclear(%q) = %v, want %v", v, got, want)
		}
	}
	if internalUnclear(nil) {
		t.Error("no annotation is unclear")
	}

	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	internal := lbService("was-internal", map[string]string{annInternal: "true"})
	public := lbService("was-public", nil)
	stInternal, stPublic := ensureUntilReady(t, lb, internal, nodes), ensureUntilReady(t, lb, public, nodes)
	if fipOfAddr := f.FloatingIPs(); len(fipOfAddr) != 1 {
		t.Fatalf("%d floating IPs, want the public Service's", len(fipOfAddr))
	}
	internal.Annotations[annInternal] = "True"
	public.Annotations = map[string]string{annInternal: "1"}
	w := f.Writes()
	for _, c := range []struct {
		svc  *v1.Service
		want string
	}{{internal, stInternal.Ingress[0].IP}, {public, stPublic.Ingress[0].IP}} {
		st, err := lb.EnsureLoadBalancer(context.Background(), cluster, c.svc, nodes)
		if err != nil || st.Ingress[0].IP != c.want {
			t.Errorf("%s: %v %v, want its address %s kept", c.svc.Name, st, err, c.want)
		}
		if ok, evs := sink.Await(c.svc, 2*time.Second, annInternal, "kept as it is"); !ok {
			t.Errorf("%s: no Warning naming the annotation: %q", c.svc.Name, evs)
		}
	}
	if n := f.Writes() - w; n != 0 {
		t.Errorf("an unclear internal value wrote %d times: %s", n, f.CallSummary())
	}
	creates := f.Calls()["octavia.CreateLoadBalancer"]
	fresh := lbService("new-unclear", map[string]string{annInternal: "True"})
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, fresh, nodes); err == nil || !strings.Contains(err.Error(), annInternal) {
		t.Errorf("a new Service with an unclear value: %v, want an error naming the annotation", err)
	}
	if n := f.Calls()["octavia.CreateLoadBalancer"] - creates; n != 0 {
		t.Errorf("%d load balancers created for an unclear value", n)
	}
}
