package openstack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// As upstream's svcConf: the annotation, even empty, wins over the [LoadBalancer] key; with
// lb-provider = ovn neither flavor nor zone is sent, each asked for by annotation with a
// Warning of its own reason (the config's keys are start-up notices: TestZoneIgnoredWithOVN).
func TestCreateOnlyOf(t *testing.T) {
	str := func(s string) *string { return &s }
	cfg := LBConfig{}
	cfg.FlavorID, cfg.AvailabilityZone = str("cfg-flavor"), str("cfg-az")
	for _, tc := range []struct {
		name     string
		cfg      LBConfig
		provider string
		ann      map[string]string
		want     createOnly
		reasons  []string
		err      string
	}{
		{name: "nothing", want: createOnly{}},
		{name: "config", cfg: cfg, want: createOnly{flavorID: "cfg-flavor", availabilityZone: "cfg-az"}},
		{name: "annotations win", cfg: cfg, ann: map[string]string{annFlavorID: "f2", annAvailabilityZone: "az2"},
			want: createOnly{flavorID: "f2", availabilityZone: "az2", askedFlavor: true, askedZone: true}},
		{name: "sent as it is, as upstream (not trimmed)", ann: map[string]string{annAvailabilityZone: " az2 "},
			want: createOnly{availabilityZone: " az2 ", askedZone: true}},
		{name: "empty annotation: none, as upstream", cfg: cfg, ann: map[string]string{annFlavorID: ""},
			want: createOnly{availabilityZone: "cfg-az", askedFlavor: true}},
		{name: "port", ann: map[string]string{annPortID: "port-1"}, want: createOnly{vipPortID: "port-1"}},
		{name: "ovn", cfg: cfg, provider: providerOVN, ann: map[string]string{annPortID: "port-1", annFlavorID: "f2"},
			want: createOnly{vipPortID: "port-1"}, reasons: []string{reasonFlavorIgnored}},
		{name: "ovn, both asked", cfg: cfg, provider: providerOVN, ann: map[string]string{annFlavorID: "f2", annAvailabilityZone: "az2"},
			want: createOnly{}, reasons: []string{reasonFlavorIgnored, reasonAZIgnored}},
		{name: "ovn, the config's only: reported at start-up, not per Service", cfg: cfg, provider: providerOVN, want: createOnly{}},
		{name: "ovn, nothing asked", provider: providerOVN, want: createOnly{}},
		{name: "bad port", ann: map[string]string{annPortID: "../x"}, err: annPortID},
	} {
		svc := lbService("s", tc.ann)
		got, adv, err := createOnlyOf(svc, tc.cfg, tc.provider)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one naming %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
		var reasons []string
		for _, a := range adv {
			reasons = append(reasons, a.reason)
		}
		if strings.Join(reasons, ",") != strings.Join(tc.reasons, ",") {
			t.Errorf("%s: advice %v, want reasons %v", tc.name, adv, tc.reasons)
		}
	}
}

// Octavia cannot change a flavor, zone or VIP port: a difference is advice naming the
// annotation, never a write; what the Service does not ask for by annotation (nothing, or
// the config's default) is not compared.
func TestNotApplied(t *testing.T) {
	lb := &loadbalancers.LoadBalancer{FlavorID: "f1", AvailabilityZone: "az1", VipPortID: "p1", VipAddress: "10.0.0.5"}
	for _, tc := range []struct {
		name    string
		want    createOnly
		adopted bool
		names   []string
	}{
		{name: "same", want: createOnly{flavorID: "f1", availabilityZone: "az1", vipPortID: "p1", askedFlavor: true, askedZone: true}},
		{name: "nothing asked", want: createOnly{}},
		{name: "flavor", want: createOnly{flavorID: "f2", askedFlavor: true}, names: []string{annFlavorID}},
		{name: "the config's new default", want: createOnly{flavorID: "f2", availabilityZone: "az2"}},
		{name: "zone and port", want: createOnly{availabilityZone: "az2", vipPortID: "p2", askedZone: true}, names: []string{annAvailabilityZone, annPortID}},
		{name: "adopted", want: createOnly{flavorID: "f2", askedFlavor: true}, adopted: true},
	} {
		adv := notApplied(&lbSpec{name: "n", createOnly: tc.want}, lb, tc.adopted)
		if len(adv) != len(tc.names) {
			t.Errorf("%s: %v, want %d", tc.name, adv, len(tc.names))
			continue
		}
		for i, a := range adv {
			if a.reason != reasonSettingNotFixed || !strings.Contains(a.msg, tc.names[i]) {
				t.Errorf("%s: %+v, want %s naming %s", tc.name, a, reasonSettingNotFixed, tc.names[i])
			}
		}
	}
	if adv := notApplied(&lbSpec{name: "n", vipAddress: "10.0.0.6"}, lb, false); len(adv) != 1 || adv[0].reason != reasonVIPNotApplied {
		t.Errorf("a different VIP: %v", adv)
	}
}

func hasWarning(sink interface{ On(*v1.Service) []string }, svc *v1.Service, parts ...string) bool {
	for _, e := range sink.On(svc) {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// Through gophercloud at the fake: the flavor and zone of the config, or of the annotations,
// are what Octavia creates the load balancer with; a changed annotation later writes nothing
// and gives one Warning naming it; a flavor Octavia does not know is its 400, nothing left.
func TestFlavorAndZoneAtCreation(t *testing.T) {
	f := newFake(t, fake.Options{})
	for _, fl := range []string{"fl-small", "fl-big"} {
		f.AddLBFlavor(fl, true)
	}
	f.AddAvailabilityZone("az1", true)
	f.AddAvailabilityZone("az2", true)
	lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\nflavor-id = fl-small\navailability-zone = az1\n")
	nodes := lbNodes("10.0.0.5")
	def := lbService("def", nil)
	over := lbService("over", map[string]string{annFlavorID: "fl-big", annAvailabilityZone: "az2"})
	for _, svc := range []*v1.Service{def, over} {
		svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, nodes)
	}
	if got := fakeLB(t, f, "def"); got.FlavorID != "fl-small" || got.AvailabilityZone != "az1" {
		t.Errorf("config: flavor %q, zone %q", got.FlavorID, got.AvailabilityZone)
	}
	if got := fakeLB(t, f, "over"); got.FlavorID != "fl-big" || got.AvailabilityZone != "az2" {
		t.Errorf("annotations: flavor %q, zone %q", got.FlavorID, got.AvailabilityZone)
	}
	def.Annotations = map[string]string{annFlavorID: "fl-big"}
	writes, events := f.Writes(), sink.Writes()
	for range 3 {
		if err := lb.UpdateLoadBalancer(context.Background(), cluster, def, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if w := f.Writes() - writes; w != 0 || fakeLB(t, f, "def").FlavorID != "fl-small" {
		t.Errorf("a changed flavor-id wrote %d times (%s)", w, f.CallSummary())
	}
	time.Sleep(200 * time.Millisecond) // the broadcaster delivers asynchronously
	if e := sink.Writes() - events; e != 1 || !hasWarning(sink, def, reasonSettingNotFixed, annFlavorID, "fl-big") {
		t.Errorf("%d Events for 3 syncs, want one %s naming %s: %q", e, reasonSettingNotFixed, annFlavorID, sink.On(def))
	}
	bad := lbService("bad", map[string]string{annFlavorID: "fl-none"})
	before := len(f.LoadBalancers())
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, bad, nodes); err == nil || !strings.Contains(err.Error(), "Invalid flavor_id") || len(f.LoadBalancers()) != before {
		t.Errorf("an unknown flavor: %v, %d load balancers (was %d)", err, len(f.LoadBalancers()), before)
	}
}

// With lb-provider = ovn neither is sent (Octavia's ovn provider has none), as upstream. The
// config's keys are reported once, with their lines, not on every Service; a Service whose
// annotation asks for a zone gets upstream's LoadBalancerAvailabilityZonesIgnored Warning.
func TestZoneIgnoredWithOVN(t *testing.T) {
	f := newFake(t, fake.Options{})
	logged := captureNotices(t)
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\nlb-provider = ovn\navailability-zone = az1\nflavor-id = fl\n")
	n := c.cfg.Notices()
	if len(n) != 2 || !strings.Contains(n[0], "[LoadBalancer] flavor-id: \"fl\" is not used: lb-provider = ovn") ||
		!strings.Contains(n[1], "[LoadBalancer] availability-zone: \"az1\" is not used") || !strings.HasPrefix(n[0], "line ") {
		t.Errorf("notices %q, want the two keys with their lines", n)
	}
	if len(*logged) != 2 {
		t.Errorf("logged at start-up: %q, want the two notices", *logged)
	}
	sink := cloudtest.NewEventSink()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	plain := lbService("ovn", nil)
	asks := lbService("ovnaz", map[string]string{annAvailabilityZone: "az2"})
	for _, svc := range []*v1.Service{plain, asks} {
		ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
		if got := fakeLB(t, f, svc.Name); got.FlavorID != "" || got.AvailabilityZone != "" {
			t.Errorf("%s: flavor %q, zone %q sent with ovn", svc.Name, got.FlavorID, got.AvailabilityZone)
		}
	}
	if ok, evs := sink.Await(asks, 5*time.Second, reasonAZIgnored, "az2", annAvailabilityZone); !ok {
		t.Errorf("no %s Warning naming the annotation: %q", reasonAZIgnored, evs)
	}
	for _, e := range sink.On(plain) {
		if strings.Contains(e, reasonAZIgnored) || strings.Contains(e, reasonFlavorIgnored) {
			t.Errorf("a Service without the annotations got %q: the config's keys are reported at start-up", e)
		}
	}
}

// port-id: the user's port is the VIP port (its address the VIP); a public Service's floating
// IP goes onto it, as upstream; deleting the Service deletes the load balancer and ccm's
// floating IP and leaves the port as it was. Octavia refuses a port a device uses (400); ccm
// refuses a port on another network unless allowed, before any write.
func TestPortIDIsTheVIP(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	pub, in := f.AddPort(fake.PrivateSubnetID, "10.0.77.7", "", portTags("pub")...), f.AddPort(fake.PrivateSubnetID, "10.0.77.8", "", portTags("in")...)
	before := map[string]fake.Port{}
	for _, id := range []string{pub, in} {
		before[id], _ = f.GetPort(id)
	}
	public := lbService("pub", map[string]string{annPortID: pub})
	internal := lbService("in", map[string]string{annPortID: in, annInternal: "true"})
	st := ensureUntilReady(t, lb, public, nodes)
	got := fakeLB(t, f, "pub")
	fips := f.FloatingIPs()
	if got.VipPortID != pub || got.VipAddress != "10.0.77.7" || len(fips) != 1 || fips[0].PortID != pub || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("public: VIP port %s address %s, floating IPs %+v, status %v", got.VipPortID, got.VipAddress, fips, st.Ingress)
	}
	if st := ensureUntilReady(t, lb, internal, nodes); st.Ingress[0].IP != "10.0.77.8" || fakeLB(t, f, "in").VipPortID != in {
		t.Errorf("internal: status %v, load balancer %+v", st.Ingress, fakeLB(t, f, "in"))
	}
	public.Status.LoadBalancer = *st
	writes := f.Writes()
	ensureUntilReady(t, lb, internal, nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("a sync with nothing changed made %d writes (%s)", w, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	if w := warnings(sink, internal); len(w) != 0 {
		t.Errorf("Warnings %q", w)
	}
	for _, svc := range []*v1.Service{public, internal} {
		deleteUntilDone(t, lb, svc)
	}
	if n := len(f.LoadBalancers()); n != 0 || len(f.FloatingIPs()) != 0 {
		t.Errorf("after the deletes: %d load balancers, floating IPs %+v", n, f.FloatingIPs())
	}
	for id, was := range before {
		if now, ok := f.GetPort(id); !ok || now.Revision != was.Revision || now.DeviceID != was.DeviceID || strings.Join(now.Addresses, ",") != strings.Join(was.Addresses, ",") {
			t.Errorf("the user's port %s after the delete: %+v (found %v), was %+v", id, now, ok, was)
		}
	}
	if c := f.Calls(); c["neutron.UpdatePort"] != 0 {
		t.Errorf("ports written: %s", f.CallSummary())
	}

	used := lbService("used", map[string]string{annPortID: f.AddPort(fake.PrivateSubnetID, "10.0.77.9", "server-1")})
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, used, nodes); !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), "a device already uses") || len(f.LoadBalancers()) != 0 {
		t.Errorf("a port in use: %v, %d load balancers", err, len(f.LoadBalancers()))
	}
	_, other := f.AddNetwork("other", "192.168.5.0/24", false)
	foreign := lbService("foreign", map[string]string{annPortID: f.AddPort(other, "192.168.5.5", "")})
	writes = f.Writes()
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, foreign, nodes); !errors.Is(err, ownership.ErrNotOwned) || f.Writes() != writes {
		t.Errorf("a port on another network: %v, %d writes", err, f.Writes()-writes)
	}
}

// The takeover of upstream's load balancers made with a flavor, a zone and a VIP port, by
// Services whose annotations ask for the same: nothing is written for them, no Warning; nor
// for one made before the config's flavor-id was set.
func TestTakeoverWithFlavorZoneAndPort(t *testing.T) {
	f := newFake(t, fake.Options{})
	u := seedUpstreamCluster(t, f, 0, false)
	f.AddLBFlavor("fl-up", true)
	f.AddAvailabilityZone("az-up", true)
	port := f.AddPort(fake.PrivateSubnetID, "10.0.66.6", "")
	var svcs []*v1.Service
	var addrs []string
	for _, c := range []struct {
		name string
		ann  map[string]string
	}{
		{"flavored", map[string]string{annFlavorID: "fl-up", annAvailabilityZone: "az-up"}},
		{"ported", map[string]string{annPortID: port}},
	} {
		svc := upstreamSvc(c.name)
		for k, v := range c.ann {
			svc.Annotations[k] = v
		}
		us := toUpstream(svc, u.nodes, nil)
		// "ported" was made before the config named a flavor: the config's default is for
		// new load balancers, no news about this one
		us.FlavorID, us.AvailabilityZone, us.VipPortID = c.ann[annFlavorID], c.ann[annAvailabilityZone], c.ann[annPortID]
		id, addr := f.SeedUpstream(us)
		adoptedByUpstream(svc, id, addr)
		svcs, addrs = append(svcs, svc), append(addrs, addr)
	}
	lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\nflavor-id = fl-up\n")
	for i, svc := range svcs {
		if st := ensureUntilReady(t, lb, svc, u.nodes); st.Ingress[0].IP != addrs[i] {
			t.Errorf("%s: address %v, want %s", svc.Name, st.Ingress, addrs[i])
		}
	}
	// upstream's load balancers and listeners carry no ccm ownership marks yet: the first
	// sync writes them (an update of each, as every takeover), nothing else; the next writes
	// nothing at all.
	if c := f.Calls(); c["octavia.CreateLoadBalancer"]+c["neutron.CreateFloatingIP"]+c["neutron.UpdatePort"] != 0 ||
		f.Writes() != c["octavia.UpdateLoadBalancer"]+c["octavia.UpdateListener"] {
		t.Errorf("takeover: %s", f.CallSummary())
	}
	writes := f.Writes()
	for _, svc := range svcs {
		ensureUntilReady(t, lb, svc, u.nodes)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the sync after the takeover made %d writes (%s)", w, f.CallSummary())
	}
	time.Sleep(100 * time.Millisecond)
	for _, svc := range svcs {
		if w := warnings(sink, svc); len(w) != 0 {
			t.Errorf("%s: Warnings %q", svc.Name, w)
		}
	}
}

// As upstream, an internal Service's spec.loadBalancerIP is still sent with its port-id:
// Octavia takes it when it is the port's address and refuses it (400) when it is not, and
// nothing is left behind.
func TestPortIDWithLoadBalancerIP(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, _ := migrationCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	on := lbService("on", map[string]string{annPortID: f.AddPort(fake.PrivateSubnetID, "10.0.55.5", "", portTags("on")...), annInternal: "true"})
	on.Spec.LoadBalancerIP = "10.0.55.5" //nolint:staticcheck // the upstream way
	if st := ensureUntilReady(t, lb, on, nodes); st.Ingress[0].IP != "10.0.55.5" {
		t.Errorf("the port's address asked for: status %v", st.Ingress)
	}
	off := lbService("off", map[string]string{annPortID: f.AddPort(fake.PrivateSubnetID, "10.0.55.6", "", portTags("off")...), annInternal: "true"})
	off.Spec.LoadBalancerIP = "10.0.55.7" //nolint:staticcheck // the upstream way
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, off, nodes); err == nil || !strings.Contains(err.Error(), "not found on the specified VIP port") || len(f.LoadBalancers()) != 1 {
		t.Errorf("another address: %v, %d load balancers", err, len(f.LoadBalancers()))
	}
}

// port-id is the VIP port of the Service's first family's load balancer: a port without an
// address of that family is refused before any write (Octavia would take its IPv4 address
// for the "IPv6" load balancer, and the IPv4 family would get a second load balancer), even
// when the operator allowed the port; a port of the first family is fine.
func TestPortIDOfTheFirstFamily(t *testing.T) {
	f := newFake(t, fake.Options{})
	v4 := f.AddPort(fake.PrivateSubnetID, "10.0.77.7", "", portTags("v6first")...)
	lb, _ := migrationCloud(t, f, "allowed-resource-ids = "+v4+"\n")
	nodes := lbNodes("10.0.0.5")
	nodes[0].Status.Addresses = append(nodes[0].Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: "fd00::5"})
	svc := lbService("v6first", map[string]string{annPortID: v4, annInternal: "true"})
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	writes := f.Writes()
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if err == nil || !strings.Contains(err.Error(), annPortID) || !strings.Contains(err.Error(), "no IPv6 address") {
		t.Errorf("an IPv4 port for the IPv6 first family: %v", err)
	}
	if w := f.Writes() - writes; w != 0 || len(f.LoadBalancers()) != 0 {
		t.Errorf("%d writes, %d load balancers before the error (%s)", w, len(f.LoadBalancers()), f.CallSummary())
	}
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	if st := ensureUntilReady(t, lb, svc, nodes); len(st.Ingress) != 2 || st.Ingress[0].IP != "10.0.77.7" || fakeLB(t, f, "v6first").VipPortID != v4 {
		t.Errorf("IPv4 first: status %v", st.Ingress)
	}
}

func TestHasFamilyAddress(t *testing.T) {
	for _, tc := range []struct {
		ips  []string
		f    v1.IPFamily
		want bool
	}{
		{[]string{"10.0.0.1"}, v1.IPv4Protocol, true},
		{[]string{"10.0.0.1"}, v1.IPv6Protocol, false},
		{[]string{"10.0.0.1", "fd00::1"}, v1.IPv6Protocol, true},
		{[]string{"::ffff:10.0.0.1"}, v1.IPv4Protocol, true},
		{nil, v1.IPv4Protocol, false},
		{[]string{"not-an-ip"}, v1.IPv4Protocol, false},
	} {
		var ips []ports.IP
		for _, a := range tc.ips {
			ips = append(ips, ports.IP{IPAddress: a})
		}
		if got := hasFamilyAddress(ips, tc.f); got != tc.want {
			t.Errorf("%v %s: %v, want %v", tc.ips, tc.f, got, tc.want)
		}
	}
}

// portTags are the ownership tags an operator gives a port for the test Service name (made by
// lbService), so that its port-id may name it.
func portTags(name string) []string { return ownerTags(ownership.Of(cluster, lbService(name, nil))) }

// port-id names only a free port tagged for the Service, or one the operator allowed: another
// Service's port, an untagged one, or one a device uses is refused naming the annotation,
// before any write.
func TestPortIDOnlyTheServicesPort(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, _ := migrationCloud(t, f, "")
	allowed := f.AddPort(fake.PrivateSubnetID, "10.0.78.4", "")
	lbA, _ := migrationCloud(t, f, "allowed-resource-ids = "+allowed+"\n")
	nodes := lbNodes("10.0.0.5")
	for _, tc := range []struct {
		name, port string
		ok         bool
	}{
		{"another Service's", f.AddPort(fake.PrivateSubnetID, "10.0.78.1", "", portTags("someone-else")...), false},
		{"untagged", f.AddPort(fake.PrivateSubnetID, "10.0.78.2", ""), false},
		{"the Service's but in use", f.AddPort(fake.PrivateSubnetID, "10.0.78.3", "server-9", portTags("p")...), false},
		{"allowed by the operator", allowed, true},
	} {
		svc := lbService("p", map[string]string{annPortID: tc.port, annInternal: "true"})
		w := f.Writes()
		c := lb
		if tc.ok {
			c = lbA
		}
		_, err := c.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
		if tc.ok {
			ensureUntilReady(t, c, svc, nodes)
			deleteUntilDone(t, c, svc)
			continue
		}
		if !errors.Is(err, ownership.ErrNotOwned) || !strings.HasPrefix(err.Error(), "annotation "+annPortID) || f.Writes() != w {
			t.Errorf("%s: %v, %d writes; want a refusal naming the annotation and none", tc.name, err, f.Writes()-w)
		}
	}
}
