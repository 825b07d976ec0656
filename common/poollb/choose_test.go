package poollb

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ccm-project/ccm/common/ippool"
)

var names = ForProvider("test.ccm.io/")

func pool(t *testing.T, name string, c ippool.Config) *ippool.Pool {
	t.Helper()
	p, err := ippool.New(name, &c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func svc(name string, ann map[string]string, status string, ports ...int32) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Port: p, Protocol: v1.ProtocolTCP})
	}
	if status != "" {
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: status}}
	}
	return s
}

// holders is a table's holder set: key -> its description and addresses.
type holder struct {
	Holder
	addrs []string
}

func view(pools []*ippool.Pool, hs map[string]holder) View {
	held := Holders{}
	for k, h := range hs {
		for _, a := range h.addrs {
			held.Claim(netip.MustParseAddr(a), k)
		}
	}
	return View{Names: names, Pools: pools, Held: held, Holder: func(k string) Holder { return hs[k].Holder }}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// The decision, case by case: what a Service gets, given the pools, the holders and what it
// asks for and holds.
func TestChoose(t *testing.T) {
	no := false
	main := pool(t, "main", ippool.Config{Range: []string{"192.0.2.10-192.0.2.12"}, CIDR: []string{"2001:db8::/126"}})
	manual := pool(t, "manual", ippool.Config{Range: []string{"198.51.100.5-198.51.100.6"}, AutoAssign: &no})
	theirs := pool(t, "theirs", ippool.Config{Range: []string{"203.0.113.1-203.0.113.2"}, Namespace: []string{"other"}})
	pools := []*ippool.Pool{main, manual, theirs}
	web := func(ports ...string) Holder {
		return Holder{Record: true, InScope: true, Service: "ns/a", SharingKey: "web", Ports: ports}
	}
	share := map[string]string{names.SharedIP[0]: "web"}
	for _, c := range []struct {
		name    string
		holders map[string]holder
		svc     *v1.Service
		own     []string
		want    string // addresses, or "error: <part of it>"
		moved   string // part of Choice.Moved
		outside string
	}{
		{name: "first free", svc: svc("s", nil, "", 80), want: "[192.0.2.10]"},
		{name: "held addresses skipped", holders: map[string]holder{"x": {addrs: []string{"192.0.2.10"}}}, svc: svc("s", nil, "", 80), want: "[192.0.2.11]"},
		{name: "requested", svc: svc("s", map[string]string{names.LoadBalancerIPs[1]: "192.0.2.12"}, "", 80), want: "[192.0.2.12]"},
		{name: "requested from an auto-assign false pool", svc: svc("s", map[string]string{names.LoadBalancerIPs[0]: "198.51.100.6"}, "", 80), want: "[198.51.100.6]"},
		{name: "requested outside the pools", svc: svc("s", map[string]string{names.LoadBalancerIPs[2]: "192.0.2.99"}, "", 80), want: "error: annotation metallb.io/loadBalancerIPs: requested address 192.0.2.99 is not in a pool"},
		{name: "requested, held in scope without sharing: named", holders: map[string]holder{"a": {Holder: Holder{Record: true, InScope: true, Service: "ns/a"}, addrs: []string{"192.0.2.11"}}},
			svc: svc("s", map[string]string{names.LoadBalancerIPs[0]: "192.0.2.11"}, "", 80), want: "error: already in use by Service ns/a (to share it"},
		{name: "requested, held by another cluster: not named", holders: map[string]holder{"a": {Holder: Holder{Record: true, Service: "other/secret", SharingKey: "web"}, addrs: []string{"192.0.2.11"}}},
			svc: svc("s", map[string]string{names.LoadBalancerIPs[0]: "192.0.2.11", names.SharedIP[0]: "web"}, "", 80), want: "error: in use by another Service (addresses are shared only among"},
		{name: "sharing joins a peer", holders: map[string]holder{"a": {Holder: web("TCP/80"), addrs: []string{"192.0.2.11"}}}, svc: svc("s", share, "", 443), want: "[192.0.2.11]"},
		{name: "sharing with a colliding port: a new address", holders: map[string]holder{"a": {Holder: web("TCP/80"), addrs: []string{"192.0.2.11"}}}, svc: svc("s", share, "", 80), want: "[192.0.2.10]"},
		{name: "same key, another scope: no sharing", holders: map[string]holder{"a": {Holder: Holder{Record: true, SharingKey: "web"}, addrs: []string{"192.0.2.10"}}}, svc: svc("s", share, "", 443), want: "[192.0.2.11]"},
		{name: "an address learned from a status is never shared", holders: map[string]holder{"a": {Holder: Holder{InScope: true, Service: "ns/a", SharingKey: "web"}, addrs: []string{"192.0.2.10"}}}, svc: svc("s", share, "", 443), want: "[192.0.2.11]"},
		{name: "status kept", svc: svc("s", nil, "192.0.2.12", 80), want: "[192.0.2.12]"},
		{name: "status before the record", svc: svc("s", nil, "192.0.2.12", 80), own: []string{"192.0.2.11"}, want: "[192.0.2.12]"},
		{name: "status outside the pools and not recorded: moved", svc: svc("s", nil, "198.51.100.200", 80), want: "[192.0.2.10]", moved: `198.51.100.200 is in no pool serving namespace "ns"`},
		{name: "status held by another record: moved", holders: map[string]holder{"x": {addrs: []string{"192.0.2.10"}}}, svc: svc("s", nil, "192.0.2.10", 80), want: "[192.0.2.11]", moved: "held by another load balancer record"},
		{name: "own address that left the pools: kept", svc: svc("s", nil, "192.0.2.200", 80), own: []string{"192.0.2.200"}, want: "[192.0.2.200]", outside: "[192.0.2.200]"},
		{name: "own address of another namespace's pool: kept", svc: svc("s", nil, "203.0.113.1", 80), own: []string{"203.0.113.1"}, want: "[203.0.113.1]", outside: "[203.0.113.1]"},
		{name: "own address outside the named pool: moves", svc: svc("s", map[string]string{names.AddressPool[0]: "main"}, "198.51.100.5", 80), own: []string{"198.51.100.5"}, want: "[192.0.2.10]", moved: "in no pool"},
		{name: "own address a hand-made record duplicates: kept", holders: map[string]holder{"hand": {addrs: []string{"192.0.2.11"}}}, svc: svc("s", nil, "192.0.2.11", 80), own: []string{"192.0.2.11"}, want: "[192.0.2.11]"},
		{name: "own address shared, sharing turned off: moves", holders: map[string]holder{"a": {Holder: web("TCP/443"), addrs: []string{"192.0.2.11"}}}, svc: svc("s", nil, "192.0.2.11", 80), own: []string{"192.0.2.11"}, want: "[192.0.2.10]", moved: "held by another"},
		{name: "named pool, auto-assign false", svc: svc("s", map[string]string{names.AddressPool[2]: "manual"}, "", 80), want: "[198.51.100.5]"},
		{name: "named pool of another namespace", svc: svc("s", map[string]string{names.AddressPool[0]: "theirs"}, "", 80), want: `error: annotation test.ccm.io/address-pool: no pool named "theirs" serves namespace "ns"`},
		{name: "two pool names", svc: svc("s", map[string]string{names.AddressPool[0]: "main", names.AddressPool[1]: "manual"}, "", 80), want: "error: differs from"},
		{name: "two sharing keys", svc: svc("s", map[string]string{names.SharedIP[0]: "x", names.SharedIP[2]: "y"}, "", 80), want: "error: differs from"},
		{name: "exhausted", holders: map[string]holder{"x": {addrs: []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}}}, svc: svc("s", nil, "", 80), want: "error: address pool exhausted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := view(pools, c.holders).Choose(Request{Service: c.svc, Key: "me", Own: addrs(c.own...)})
			if want, isErr := strings.CutPrefix(c.want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v (%v), want an error with %q", got.Addrs, err, want)
				}
				return
			}
			if err != nil || fmt.Sprint(got.Addrs) != c.want {
				t.Fatalf("got %v (%v), want %s", got.Addrs, err, c.want)
			}
			if moved := strings.Join(got.Moved, "; "); c.moved == "" && moved != "" || !strings.Contains(moved, c.moved) {
				t.Errorf("moved %q, want %q", moved, c.moved)
			}
			if outside := fmt.Sprint(got.Outside); c.outside == "" && len(got.Outside) > 0 || c.outside != "" && outside != c.outside {
				t.Errorf("outside %s, want %q", outside, c.outside)
			}
		})
	}
}

func TestChooseDualStack(t *testing.T) {
	p := pool(t, "p", ippool.Config{CIDR: []string{"192.0.2.0/29", "2001:db8::/125"}})
	v4 := pool(t, "v4", ippool.Config{CIDR: []string{"192.0.2.0/29"}})
	dual := func(policy v1.IPFamilyPolicy, fams ...v1.IPFamily) *v1.Service {
		s := svc("ds", map[string]string{names.LoadBalancerIPs[1]: "2001:db8::3"}, "", 80)
		s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = fams, ptr.To(policy)
		return s
	}
	for _, c := range []struct {
		name  string
		pools []*ippool.Pool
		svc   *v1.Service
		want  string
	}{
		{"both families, one asked for", []*ippool.Pool{p}, dual(v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol), "[192.0.2.1 2001:db8::3]"},
		{"IPv6 first", []*ippool.Pool{p}, dual(v1.IPFamilyPolicyRequireDualStack, v1.IPv6Protocol, v1.IPv4Protocol), "[2001:db8::3 192.0.2.1]"},
		{"prefer dual-stack without an IPv6 pool", []*ippool.Pool{v4}, func() *v1.Service {
			s := dual(v1.IPFamilyPolicyPreferDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
			s.Annotations = nil
			return s
		}(), "[192.0.2.1]"},
	} {
		got, err := view(c.pools, nil).Choose(Request{Service: c.svc, Key: "me"})
		if err != nil || fmt.Sprint(got.Addrs) != c.want {
			t.Errorf("%s: %v (%v), want %s", c.name, got.Addrs, err, c.want)
		}
	}
	s := dual(v1.IPFamilyPolicyRequireDualStack, v1.IPv4Protocol, v1.IPv6Protocol)
	s.Annotations = nil
	var ex *ExhaustedError
	if _, err := view([]*ippool.Pool{v4}, nil).Choose(Request{Service: s, Key: "me"}); !errors.As(err, &ex) || ex.Family != "IPv6" {
		t.Errorf("require dual-stack without an IPv6 pool: %v", err)
	}
}
