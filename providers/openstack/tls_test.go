package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// TLS termination, as upstream: a TLS reference (annotation, else [LoadBalancer]
// default-tls-container-ref) makes every TCP port's listener TERMINATED_HTTPS with it, in
// front of an HTTP pool (PROXY with proxy-protocol), inserting X-Forwarded-For when asked.
func TestTLSSpec(t *testing.T) {
	const ref, cfgRef = "https://kms/v1/containers/c1", "https://kms/v1/secrets/s1"
	tcp := v1.ServicePort{Name: "a", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}
	udp := v1.ServicePort{Name: "b", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}
	for _, tc := range []struct {
		name, conf string
		ann        map[string]string
		ports      []v1.ServicePort
		want       []string // per listener: protocol/pool protocol/xff/ref
		warn       string
	}{
		{name: "none", ports: []v1.ServicePort{tcp}, want: []string{"TCP/TCP/false/"}},
		{name: "annotation", ann: map[string]string{annTLSContainerRef: ref}, ports: []v1.ServicePort{tcp}, want: []string{"TERMINATED_HTTPS/HTTP/false/" + ref}},
		{name: "config", conf: "default-tls-container-ref = " + cfgRef + "\n", ports: []v1.ServicePort{tcp}, want: []string{"TERMINATED_HTTPS/HTTP/false/" + cfgRef}},
		{name: "annotation wins", conf: "default-tls-container-ref = " + cfgRef + "\n", ann: map[string]string{annTLSContainerRef: ref}, ports: []v1.ServicePort{tcp}, want: []string{"TERMINATED_HTTPS/HTTP/false/" + ref}},
		{name: "with xff", ann: map[string]string{annTLSContainerRef: ref, annXForwardedFor: "true"}, ports: []v1.ServicePort{tcp}, want: []string{"TERMINATED_HTTPS/HTTP/true/" + ref}},
		{name: "with proxy", ann: map[string]string{annTLSContainerRef: ref, annProxyProtocol: "v2"}, ports: []v1.ServicePort{tcp}, want: []string{"TERMINATED_HTTPS/PROXYV2/false/" + ref}},
		{name: "udp stays", ann: map[string]string{annTLSContainerRef: ref}, ports: []v1.ServicePort{tcp, udp}, want: []string{"TERMINATED_HTTPS/HTTP/false/" + ref, "UDP/UDP/false/"}, warn: "port 53 is UDP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = s\n" + tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := c.lb.spec("n", lbService("w", tc.ann, tc.ports...))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ls := range spec.listeners {
				got = append(got, strings.Join([]string{ls.Protocol, ls.PoolProtocol, map[bool]string{true: "true", false: "false"}[ls.InsertXFF], ls.TLSRef}, "/"))
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

func TestBarbicanRef(t *testing.T) {
	for ref, want := range map[string]string{
		"https://kms.example.com:9311/v1/containers/0b7c3a4e-1111-2222-3333-444455556666": "containers 0b7c3a4e-1111-2222-3333-444455556666",
		"https://kms.example.com/v1/secrets/0b7c3a4e-1111-2222-3333-444455556666/":        "secrets 0b7c3a4e-1111-2222-3333-444455556666",
		"https://kms.example.com/v1/orders/0b7c3a4e":                                      "",
		"0b7c3a4e": "",
		"https://kms.example.com/v1/containers/..":    "",
		"https://kms.example.com/v1/containers/x?y=z": "",
		"vault://tls/web":                     "",
		"https://kms.example.com/v1/secrets/": "",
	} {
		kind, id, err := barbicanRef(ref)
		got := ""
		if err == nil {
			got = kind + " " + id
		} else if !strings.Contains(err.Error(), "container-store = external") {
			t.Errorf("%s: error %v does not say how to skip the check", ref, err)
		}
		if got != want {
			t.Errorf("%s: %q, want %q (err %v)", ref, got, want, err)
		}
	}
}

// Through gophercloud against the fake (Octavia and Barbican): a TERMINATED_HTTPS listener
// with the reference; an unchanged sync writes nothing and does not read Barbican again; a
// new reference is written in place (no listener replaced); a reference Barbican does not
// hold is refused before any write, with a Warning naming it.
func TestTLSTerminationConverges(t *testing.T) {
	f := newFake(t, fake.Options{})
	ref := f.AddTLSContainer("web-cert")
	c := newTestCloud(t, f, "")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	svc := lbService("tls", map[string]string{annTLSContainerRef: ref, annXForwardedFor: "true"},
		v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	ensureUntilReady(t, lb, svc, nodes)
	l := fakeLB(t, f, "tls").Listeners
	if len(l) != 1 || l[0].Protocol != "TERMINATED_HTTPS" || l[0].TLSRef != ref || l[0].PoolProtocol != "HTTP" || l[0].InsertHeaders["X-Forwarded-For"] != "true" {
		t.Fatalf("listeners %+v, want TERMINATED_HTTPS with %s, X-Forwarded-For, HTTP pool", l, ref)
	}
	if n := f.Calls()["barbican.GetContainer"]; n != 1 {
		t.Errorf("Barbican container reads %d, want 1", n)
	}
	before := f.Calls()
	w := f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if n := f.Writes() - w; n != 0 {
		t.Errorf("an unchanged sync made %d writes (%s)", n, f.CallSummary())
	}
	if n := f.Calls()["barbican.GetContainer"] - before["barbican.GetContainer"]; n != 0 {
		t.Errorf("an unchanged sync read Barbican %d times", n)
	}

	rotated := f.AddTLSSecret("web-cert-2027")
	svc.Annotations[annTLSContainerRef] = rotated
	before = f.Calls()
	ensureUntilReady(t, lb, svc, nodes)
	after := f.Calls()
	if u, d, cr := after["octavia.UpdateListener"]-before["octavia.UpdateListener"], after["octavia.DeleteListener"]-before["octavia.DeleteListener"],
		after["octavia.CreateListener"]-before["octavia.CreateListener"]; u != 1 || d != 0 || cr != 0 {
		t.Errorf("a new certificate: %d listener updates, %d deletes, %d creates, want 1, 0, 0", u, d, cr)
	}
	if got := fakeLB(t, f, "tls").Listeners[0].TLSRef; got != rotated {
		t.Errorf("listener reference %s, want %s", got, rotated)
	}
	if n := after["barbican.GetSecret"] - before["barbican.GetSecret"]; n != 1 {
		t.Errorf("Barbican secret reads %d, want 1", n)
	}

	missing := strings.Replace(ref, "/containers/", "/containers/gone-", 1)
	svc.Annotations[annTLSContainerRef] = missing
	w = f.Writes()
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "Barbican has no such container") || !strings.Contains(err.Error(), annTLSContainerRef) {
		t.Errorf("unknown reference: %v", err)
	}
	if n := f.Writes() - w; n != 0 {
		t.Errorf("an unknown reference led to %d writes", n)
	}
	if ok, evs := sink.Await(svc, 3*time.Second, "Warning InvalidLoadBalancerConfig", "gone-"); !ok {
		t.Errorf("no Warning naming the reference: %q", evs)
	}
	if got := fakeLB(t, f, "tls").Listeners[0].TLSRef; got != rotated {
		t.Errorf("the refused reference reached the listener: %s", got)
	}
}

// Without Barbican in the catalog, container-store = barbican (the default) refuses to go on,
// saying how to skip the check; with external, Barbican is never asked and the reference goes
// to Octavia as it is (upstream's "external": any reference format).
func TestTLSContainerStore(t *testing.T) {
	f := newFake(t, fake.Options{NoBarbican: true})
	ref := f.AddTLSContainer("web-cert") // Octavia can still read it
	svc := lbService("tls", map[string]string{annTLSContainerRef: ref}, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	nodes := lbNodes("10.0.0.5")
	lb := lbOf(t, newTestCloud(t, f, ""))
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "no key-manager") || !strings.Contains(err.Error(), "container-store = external") {
		t.Errorf("no Barbican, store barbican: %v", err)
	}
	if n := f.Calls()["octavia.CreateLoadBalancer"]; n != 0 {
		t.Errorf("%d creates before the reference was checked", n)
	}
	lb = lbOf(t, newTestCloud(t, f, "container-store = external\n"))
	ensureUntilReady(t, lb, svc, nodes)
	if l := fakeLB(t, f, "tls").Listeners; len(l) != 1 || l[0].Protocol != "TERMINATED_HTTPS" || l[0].TLSRef != ref {
		t.Errorf("listeners %+v", l)
	}
	for op := range f.Calls() {
		if strings.HasPrefix(op, "barbican.") {
			t.Errorf("container-store = external called %s", op)
		}
	}
}

// A Service upstream terminated TLS for (TERMINATED_HTTPS listeners with its reference, HTTP
// pools) is taken over in place: no create or delete of anything that serves, no Warning, and
// the next sync writes nothing.
func TestTLSTakeover(t *testing.T) {
	f := newFake(t, fake.Options{})
	ref := f.AddTLSContainer("web-cert")
	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("up-tls", v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	us := toUpstream(svc, u.nodes, nil)
	us.TLSContainerRef = ref
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(svc, id, addr)
	lb, sink := migrationCloud(t, f, "default-tls-container-ref = "+ref+"\n")
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

// container-store: barbican (default) and external take no report; any other value loads as
// upstream loads it (with a warning there), reported once, and is treated as external.
func TestContainerStoreValues(t *testing.T) {
	for store, report := range map[string]bool{"": false, "barbican": false, "external": false, "Barbican": false, "vault": true} {
		logged := captureNotices(t)
		conf := upstreamBase + "[LoadBalancer]\ndefault-tls-container-ref = vault://tls/web\n"
		if store != "" {
			conf += "container-store = " + store + "\n"
		}
		c, err := New(strings.NewReader(conf))
		if err != nil {
			t.Fatalf("container-store %q: %v", store, err)
		}
		if got := len(*logged) == 1 && strings.Contains((*logged)[0], "container-store"); got != report || (!report && len(*logged) != 0) {
			t.Errorf("container-store %q: reported %q, want a report: %v", store, *logged, report)
		}
		wantStore := map[string]string{"": "barbican", "barbican": "barbican", "Barbican": "barbican", "external": "external", "vault": "vault"}[store]
		if got := c.cfg.LoadBalancer.containerStore(); got != wantStore {
			t.Errorf("container-store %q read as %q", store, got)
		}
	}
}
