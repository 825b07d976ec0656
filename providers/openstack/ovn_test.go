package openstack

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/sourceranges"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func localService(name string, ports ...v1.ServicePort) *v1.Service {
	svc := lbService(name, nil, ports...)
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	return svc
}

var monitorPorts = []v1.ServicePort{
	{Name: "tcp", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
	{Name: "udp", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP},
	{Name: "sctp", Port: 38412, NodePort: 30412, Protocol: v1.ProtocolSCTP},
}

// The monitor of each port, as upstream's buildMonitorCreateOpts makes it: the port's type
// (UDP-CONNECT for UDP), HTTP GET /healthz on the health-check NodePort for
// externalTrafficPolicy Local, except with the OVN provider, which has no HTTP monitors.
func TestMonitorTypesByProvider(t *testing.T) {
	for _, tc := range []struct {
		provider string
		local    bool
		want     map[string]monitorSpec // by listener key: type, url path, monitor_port
	}{
		{"", false, map[string]monitorSpec{"TCP/80": {Type: "TCP"}, "UDP/53": {Type: "UDP-CONNECT"}, "SCTP/38412": {Type: "SCTP"}}},
		{"amphora", true, map[string]monitorSpec{"TCP/80": {Type: "HTTP", URLPath: "/healthz", Port: 32000},
			"UDP/53": {Type: "HTTP", URLPath: "/healthz", Port: 32000}, "SCTP/38412": {Type: "HTTP", URLPath: "/healthz", Port: 32000}}},
		{"ovn", true, map[string]monitorSpec{"TCP/80": {Type: "TCP"}, "UDP/53": {Type: "UDP-CONNECT"}, "SCTP/38412": {Type: "SCTP"}}},
		{"ovn", false, map[string]monitorSpec{"TCP/80": {Type: "TCP"}, "UDP/53": {Type: "UDP-CONNECT"}, "SCTP/38412": {Type: "SCTP"}}},
	} {
		conf := "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nsubnet-id = s\ncreate-monitor = true\nlb-provider = " + tc.provider + "\n"
		c, err := New(strings.NewReader(conf))
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("w", nil, monitorPorts...)
		if tc.local {
			svc = localService("w", monitorPorts...)
		}
		spec, err := c.lb.spec("n", svc)
		if err != nil {
			t.Fatal(err)
		}
		for _, ls := range spec.listeners {
			m, want := ls.Monitor, tc.want[ls.key()]
			if m == nil || m.Type != want.Type || m.URLPath != want.URLPath || m.Port != want.Port || m.Delay != 5 || m.Timeout != 3 || m.MaxRetries != 1 {
				t.Errorf("provider %q local %v %s: monitor %+v, want %+v", tc.provider, tc.local, ls.key(), m, want)
			}
		}
	}
}

// With lb-provider = ovn, a Local Service with monitors is created (the fake refuses HTTP
// monitors on OVN load balancers as ovn-octavia-provider does: ccm's HTTP monitor failed every
// create), and upstream's OVN load balancers (TCP monitors, no monitor_port) are taken over
// with no monitor or member written.
func TestOVNMonitors(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb := lbOf(t, newTestCloud(t, f, "lb-provider = ovn\ncreate-monitor = true\nfloating-network-id = "+fake.PublicNetworkID+"\n"))
	ensureUntilReady(t, lb, localService("ovn-new", monitorPorts[:2]...), lbNodes("10.0.0.5"))
	got := fakeLB(t, f, "ovn-new")
	if got.Provider != "ovn" || len(got.Listeners) != 2 || got.Listeners[0].Monitor != "UDP-CONNECT" || got.Listeners[1].Monitor != "TCP" {
		t.Errorf("OVN load balancer: %+v", got)
	}

	u := seedUpstreamCluster(t, f, 0, false)
	svc := upstreamSvc("ovn-up", monitorPorts[:2]...)
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	us := toUpstream(svc, u.nodes, nil)
	us.Monitor, us.HealthCheckNodePort, us.Provider = true, 32000, "ovn"
	id, addr := f.SeedUpstream(us)
	adoptedByUpstream(svc, id, addr)
	before := f.Calls()
	lb2, _ := migrationCloud(t, f, "lb-provider = ovn\ncreate-monitor = true\n")
	if st := ensureUntilReady(t, lb2, svc, u.nodes); st.Ingress[0].IP != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].IP, addr)
	}
	c := f.Calls()
	for _, op := range []string{"octavia.CreateHealthMonitor", "octavia.DeleteHealthMonitor", "octavia.UpdateHealthMonitor", "octavia.BatchUpdateMembers", "octavia.CreateListener", "octavia.DeleteListener"} {
		if c[op] != before[op] {
			t.Errorf("takeover of upstream's OVN load balancer: %s %d times (%s)", op, c[op]-before[op], f.CallSummary())
		}
	}
}

// ovn-octavia-provider refuses allowed_cidrs (400), so no listener of an ovn load balancer
// carries them: a Service with source ranges is served (before, every sync failed), and one
// restricted by the legacy annotation alone, which kube-proxy does not read, gets a Warning.
func TestOVNSendsNoAllowedCIDRs(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "lb-provider = ovn\n")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5")
	spec := lbService("spec", nil)
	spec.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	legacy := lbService("legacy", map[string]string{"service.beta.kubernetes.io/load-balancer-source-ranges": "198.51.100.0/24"})
	for _, svc := range []*v1.Service{spec, legacy} {
		ensureUntilReady(t, lb, svc, nodes)
		for _, l := range fakeLB(t, f, svc.Name).Listeners {
			if len(l.AllowedCIDRs) != 0 {
				t.Errorf("%s: listener %d has allowed_cidrs %v on an ovn load balancer", svc.Name, l.Port, l.AllowedCIDRs)
			}
		}
	}
	if found, evs := sink.Await(legacy, 2*time.Second, v1.EventTypeWarning, sourceranges.ReasonNotEnforced); !found {
		t.Errorf("the legacy annotation on an ovn load balancer: no Warning %s; Events %q", sourceranges.ReasonNotEnforced, evs)
	}
	if evs := sink.On(spec); len(evs) != 0 {
		t.Errorf("spec.loadBalancerSourceRanges (kube-proxy's) got Events %q", evs)
	}
}

// ovn-octavia-provider balances by SOURCE_IP_PORT only and refuses every other lb_algorithm
// (as the fake does), so with lb-provider = ovn every pool gets SOURCE_IP_PORT, as upstream
// sends: an lb-method annotation asking for another gets a Warning naming it, an
// [LoadBalancer] lb-method written with another a start-up notice naming the key.
func TestOVNMethod(t *testing.T) {
	for _, tc := range []struct {
		name, conf, ann, want, warn string
	}{
		{"ovn, nothing asked", "lb-provider = ovn\n", "", "SOURCE_IP_PORT", ""},
		{"ovn, the annotation asks for another", "lb-provider = ovn\n", "ROUND_ROBIN", "SOURCE_IP_PORT", annLBMethod + `: "ROUND_ROBIN" is not used`},
		{"ovn, the annotation asks for an unknown one", "lb-provider = ovn\n", "fastest", "SOURCE_IP_PORT", annLBMethod + `: "fastest" is not used`},
		{"ovn, the annotation asks for it", "lb-provider = ovn\n", "source_ip_port", "SOURCE_IP_PORT", ""},
		{"ovn, the config asks for another", "lb-provider = ovn\nlb-method = LEAST_CONNECTIONS\n", "", "SOURCE_IP_PORT", ""},
		{"amphora, the annotation", "", "LEAST_CONNECTIONS", "LEAST_CONNECTIONS", ""},
		{"amphora, the config", "lb-method = SOURCE_IP\n", "", "SOURCE_IP", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, fake.Options{})
			c := newTestCloud(t, f, tc.conf)
			var ann map[string]string
			if tc.ann != "" {
				ann = map[string]string{annLBMethod: tc.ann}
			}
			spec, err := c.lb.spec("n", lbService("w", ann))
			if err != nil {
				t.Fatal(err)
			}
			if m := spec.listeners[0].Method; m != tc.want {
				t.Errorf("method %s, want %s", m, tc.want)
			}
			got := strings.Join(spec.warnings, "\n")
			if (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want one saying %q", spec.warnings, tc.warn)
			}
		})
	}

	logged := captureNotices(t)
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "lb-provider = ovn\nlb-method = ROUND_ROBIN\nfloating-network-id = "+fake.PublicNetworkID+"\n")
	if n := c.cfg.Notices(); len(n) != 1 || !strings.Contains(n[0], "[LoadBalancer] lb-method: \"ROUND_ROBIN\" is not used") || !strings.HasPrefix(n[0], "line ") {
		t.Errorf("notices %q, want one naming lb-method with its line", n)
	}
	if len(*logged) != 1 {
		t.Errorf("logged at start-up: %q", *logged)
	}
	if n := newTestCloud(t, f, "lb-provider = ovn\n").cfg.Notices(); len(n) != 0 {
		t.Errorf("lb-method left at its default: notices %q", n)
	}

	// Through the fake, which refuses other algorithms on an ovn load balancer.
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc := lbService("rr", map[string]string{annLBMethod: "ROUND_ROBIN"}, monitorPorts[:2]...)
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
	for _, l := range fakeLB(t, f, "rr").Listeners {
		if l.Method != "SOURCE_IP_PORT" {
			t.Errorf("listener %d: pool %s, want SOURCE_IP_PORT", l.Port, l.Method)
		}
	}
	if ok, evs := sink.Await(svc, 2*time.Second, v1.EventTypeWarning, annLBMethod); !ok {
		t.Errorf("no Warning naming %s: %q", annLBMethod, evs)
	}
}
