package openstack

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

// fuzzCloud is a cloud with a config naming one subnet and one class, for the parsers.
func fuzzCloud(t testing.TB) *Cloud {
	c, err := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n" +
		"[LoadBalancer]\nsubnet-id = s1\nallowed-resource-ids = allowed-net\n[LoadBalancerClass \"ext\"]\nfloating-network-id = n1\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Boolean annotations, as upstream reads them: exactly "true" or "false" is taken, anything
// else keeps the default with a warning naming the annotation.
func FuzzBoolAnnotation(f *testing.F) {
	for _, s := range []string{"true", "false", " TRUE ", "True", "1", "maybe", "", "\x00"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, v string, def bool) {
		for _, key := range []string{annKeepFloatingIP, annInternal, annHealthMonitor, annXForwardedFor} {
			var warn []string
			got := upstreamBool(lbService("w", map[string]string{key: v}), key, def, &warn)
			switch {
			case (v == "true" || v == "false") && (got != (v == "true") || len(warn) != 0):
				t.Errorf("%s=%q: %v %v, want %v without warning", key, v, got, warn, v == "true")
			case v != "true" && v != "false" && (got != def || len(warn) != 1 || !strings.Contains(warn[0], key)):
				t.Errorf("%s=%q: %v %v, want the default %v and a warning naming the annotation", key, v, got, warn, def)
			}
		}
	})
}

// loadBalancerSourceRanges: an error names the field and index; otherwise every range is a
// canonical CIDR, and each family's listener gets only (and at least one of) its family's.
func FuzzSourceRanges(f *testing.F) {
	f.Add("10.0.0.0/8", " 2001:db8::/32", "192.0.2.1/24")
	f.Add("", "x", "::/0")
	f.Add("0.0.0.0/0", "::ffff:1.2.3.4/128", "fe80::1%eth0/64")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		svc := lbService("w", nil)
		svc.Spec.LoadBalancerSourceRanges = []string{a, b, c}
		ranges, err := sourceRanges(svc)
		if err != nil {
			if !strings.Contains(err.Error(), "spec.loadBalancerSourceRanges[") {
				t.Errorf("error does not name the field: %v", err)
			}
			return
		}
		if !sort.StringsAreSorted(ranges) || len(ranges) == 0 {
			t.Errorf("ranges %v: not sorted or empty", ranges)
		}
		for _, fam := range []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} {
			got := familyRanges(ranges, fam)
			if len(got) == 0 {
				t.Errorf("%s: no range: the listener would be open to everyone", fam)
			}
			for _, r := range got {
				p, err := netip.ParsePrefix(r)
				if err != nil || p.Masked().String() != r || p.Addr().Is6() != (fam == v1.IPv6Protocol) {
					t.Errorf("%s: range %q is not a canonical CIDR of the family", fam, r)
				}
			}
		}
	})
}

// The Service spec as a whole (every annotation this provider reads, the ports, the source
// ranges): never a panic; an error names an annotation or a spec field; every warning names
// what it is about; listeners are sorted with a valid method and protocols.
func FuzzServiceSpec(f *testing.F) {
	f.Add("ROUND_ROBIN", "v2", "true", "", "s1", "", "ext", "10.0.0.0/8", "TCP", int32(80))
	f.Add("fastest", "v9", "maybe", "lb-1", "other-subnet", "allowed-net", "nope", "bad", "HTTP", int32(0))
	f.Fuzz(func(t *testing.T, method, proxy, monitor, lbID, subnet, network, class, srcRange, proto string, port int32) {
		c := fuzzCloud(t)
		ann := map[string]string{annLBMethod: method, annProxyProtocol: proxy, annHealthMonitor: monitor, annLoadBalancerID: lbID,
			annSubnetID: subnet, annNetworkID: network, annPrefix + "x-" + proto: "1"}
		if class != "" {
			ann[annClass] = class
		}
		svc := lbService("w", ann, v1.ServicePort{Name: "p", Port: port, NodePort: 30000, Protocol: v1.Protocol(proto)})
		svc.Spec.LoadBalancerSourceRanges = []string{srcRange}
		spec, err := c.lb.spec("n", svc)
		if err == nil && spec.existingID != "" && !objectIDRE.MatchString(spec.existingID) {
			t.Errorf("load-balancer-id %q accepted: it goes into a URL path", spec.existingID)
		}
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, annPrefix) && !strings.Contains(msg, "spec.") && !strings.Contains(msg, "subnet") {
				t.Errorf("error names no annotation or field: %v", err)
			}
			return
		}
		for _, w := range spec.warnings {
			if !strings.Contains(w, annPrefix) && !strings.HasPrefix(w, "port ") && !strings.Contains(w, annInternal) {
				t.Errorf("warning names nothing: %q", w)
			}
		}
		if !slices.IsSortedFunc(spec.listeners, func(a, b listenerSpec) int { return strings.Compare(a.key(), b.key()) }) {
			t.Errorf("listeners not sorted")
		}
		for _, ls := range spec.listeners {
			if !lbMethods[ls.Method] {
				t.Errorf("method %q", ls.Method)
			}
			if ls.Protocol != "TCP" && ls.Protocol != "UDP" && ls.Protocol != "SCTP" {
				t.Errorf("protocol %q passed to Octavia", ls.Protocol)
			}
			if d := listenerDescription(idOf(svc), ls); len(d) > maxDescription {
				t.Errorf("description of %d bytes", len(d))
			}
		}
	})
}

// providerIDs: openstack:///<id> round-trips; nothing else panics.
func FuzzServerID(f *testing.F) {
	for _, s := range []string{"abc", "", "a/b", "openstack:///x", "9f0c1a2b-3c4d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := serverID(providerIDPrefix + s)
		if ok := s != "" && !strings.Contains(s, "/"); ok != (err == nil) || (ok && got != s) {
			t.Errorf("serverID(%q) = %q, %v", providerIDPrefix+s, got, err)
		}
		_, _ = serverID(s)
	})
}

// A cloud error body, whatever it holds, never brings the password, the user, a Keystone ID
// or a token into the error, which stays short.
func FuzzSanitize(f *testing.F) {
	f.Add(`{"faultstring": "x"}`, 500)
	f.Add(`{"NeutronError": {"message": "project 0123456789abcdef0123456789abcdef"}}`, 403)
	f.Add(`{"itemNotFound": {"message": "user u-secret-user token gAAAAB123"}}`, 404)
	f.Fuzz(func(t *testing.T, body string, status int) {
		cfg := &Config{}
		cfg.Global.Password, cfg.Global.Username = "s3cret-pass", "u-secret-user"
		body = strings.ReplaceAll(body, "PASS", cfg.Global.Password)
		err := cfg.sanitize(gophercloud.ErrUnexpectedResponseCode{Method: "GET", URL: "http://h/load-balancer/v2.0/lbaas/loadbalancers", Actual: status,
			Body: []byte(body + ` {"faultstring": "s3cret-pass u-secret-user gAAAAxyz 0123456789abcdef0123456789abcdef"}`)})
		msg := err.Error()
		for _, leak := range []string{"s3cret-pass", "u-secret-user", "gAAAA", "0123456789abcdef0123456789abcdef"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%q in %q", leak, msg)
			}
		}
		if len(msg) > maxErr+3 {
			t.Errorf("%d bytes", len(msg))
		}
	})
}

func idOf(svc *v1.Service) ownership.Identity { return ownership.Of(cluster, svc) }
