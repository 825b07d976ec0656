package vsphere

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
)

// vsphere.conf in either form: never a panic; an accepted config validates and never combines
// insecure-flag with ca-file or thumbprint; a refused one is a list of problems, each saying
// what is wrong.
func FuzzReadConfig(f *testing.F) {
	for _, s := range []string{
		"[Global]\nserver = vc\nuser = u\npassword = p\n",
		"[Global]\nuser = u\npassword = \"p;#\"\ninsecure-flag = 1\nthumbprint = AB\n[VirtualCenter \"vc\"]\ninsecure-flag = 0\n[Pool \"a\"]\ncidr = 192.0.2.0/28\n",
		"global:\n  server: vc\n  user: u\n  password: p\n  insecureFlag: true\n",
		"global:\n  user: u\n  password: p\nvcenter:\n  a:\n    server: vc\n    thumbprint: AB\n    insecureFlag: true\npools:\n  p:\n    cidr: [192.0.2.0/28]\n",
		"[Nodes]\ninternal-network-subnet-cidr = 10.0.0.0/8,fd00::/64\n",
		"global: [\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := readConfig(strings.NewReader(src))
		if err != nil {
			var ce *config.Error
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error is not a list of problems: %v", err)
			}
			for _, p := range ce.Problems {
				if strings.TrimSpace(p.Msg) == "" {
					t.Fatalf("a problem without a message: %+v", p)
				}
			}
			return
		}
		if ps := cfg.Validate(); len(ps) > 0 {
			t.Fatalf("accepted, but Validate finds %v", ps.Err())
		}
		// Verification switched off while ca-file or thumbprint asks for it is never silent.
		for _, v := range cfg.vcenters() {
			if v.Insecure && (v.CAFile != "" || v.Thumbprint != "") && !strings.Contains(strings.Join(cfg.notices, "\n"), "is ignored") {
				t.Fatalf("accepted insecure-flag with ca-file %q / thumbprint %q for %s without a report", v.CAFile, v.Thumbprint, v.Server)
			}
		}
	})
}

// A password never appears in a config error, whatever else the file holds.
func FuzzConfigErrorsHidePassword(f *testing.F) {
	f.Add([]byte("secret"), "server = vc\nuser = u\n", false)
	f.Add([]byte("secret"), "server = vc\nuser = u\nport = x\n[Bad]\n", false)
	f.Add([]byte("secret"), "  server: vc\n  user: u\n  port: [x]\n", true)
	f.Add([]byte("secret"), "  server: vc\n  cacheTTL: forever\n", true)
	f.Fuzz(func(t *testing.T, raw []byte, rest string, yml bool) {
		if len(raw) < 4 {
			return
		}
		pw := "pw" + hex.EncodeToString(raw)
		if strings.Contains(rest, pw) {
			return
		}
		src := "[Global]\npassword = \"" + pw + "\"\n" + rest
		if yml {
			src = "global:\n  password: \"" + pw + "\"\n" + rest
		}
		if _, err := readConfig(strings.NewReader(src)); err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("the error shows the password: %v", err)
		}
	})
}

// spec.loadBalancerIP is tenant input: never a panic; a refusal names the field; an accepted
// address is the one asked for, in the pool, and never one another record holds.
func FuzzRequestedIP(f *testing.F) {
	for _, s := range []string{"", "192.0.2.5", "192.0.2.1", "::ffff:192.0.2.5", "192.0.2.5%eth0", "2001:db8::1", "10.0.0.1", "192.0.2.300", " 192.0.2.5", "0.0.0.0"} {
		f.Add(s)
	}
	pool, perr := ippool.New("p", &ippool.Config{CIDR: []string{"192.0.2.0/28"}})
	if perr != nil {
		f.Fatal(perr)
	}
	taken := netip.MustParseAddr("192.0.2.1")
	f.Fuzz(func(t *testing.T, s string) {
		l := &loadBalancers{pools: []*ippool.Pool{pool}, held: poollb.Holders{taken: {"someone-else"}}, records: map[string]lbRecord{}}
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{LoadBalancerIP: s}}
		c, err := l.addressesFor(ownership.Of("c", svc), "mine", svc, lbRecord{})
		ips := c.Addrs
		if err != nil {
			if s != "" && !strings.Contains(err.Error(), "spec.loadBalancerIP") {
				t.Fatalf("the refusal of %q does not name spec.loadBalancerIP: %v", s, err)
			}
			if strings.Contains(err.Error(), "someone-else") {
				t.Fatalf("the refusal names the holder: %v", err)
			}
			return
		}
		if len(ips) != 1 || ips[0] == taken || !pool.Contains(ips[0]) {
			t.Fatalf("loadBalancerIP %q: got %v", s, ips)
		}
		// An IPv4 address asked for is the one the (IPv4) Service gets; one of the other family
		// is not for it.
		if asked, _, _ := poolNames.Requested(svc); asked[false].IsValid() && asked[false] != ips[0] {
			t.Fatalf("loadBalancerIP %q: got %v, not the address asked for", s, ips)
		}
	})
}

// Tag descriptions in the category can be written by anyone with tagging rights: never a
// panic; a record round-trips; what is not a record is nobody's and keeps every address its
// text holds.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"c":"prod","s":"shop/web","u":"1","ips":["192.0.2.1"],"fp":"x"}`,
		`{"c":"prod","s":"shop/web","ips":["2001:db8::1","192.0.2.1"]}`,
		`{"ips":["192.0.2.7"]}`, "VIP 192.0.2.9 and 2001:db8::9.", `{"c":1}`, "", "::ffff:1.2.3.4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, desc string) {
		r := parseRecord(desc)
		if r.unreadable {
			if len(r.tags()) != 0 {
				t.Fatalf("an unreadable description has an owner: %v", r.tags())
			}
			for _, ip := range r.IPs {
				a, err := netip.ParseAddr(ip)
				if err != nil || a.String() != ip || !strings.Contains(desc, ip) && !strings.Contains(strings.ToLower(desc), ip) && !a.Is6() {
					t.Fatalf("address %q from %q", ip, desc)
				}
			}
			return
		}
		if r.Cluster == "" || r.Service == "" {
			t.Fatalf("a record without cluster or Service: %+v", r)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if again := parseRecord(string(b)); !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %+v -> %s -> %+v", r, b, again)
		}
		if id, ok := ownership.Owner(r.Cluster, r.tags()); ok && (id.Service() != r.Service || id.UID != r.UID) {
			t.Fatalf("owner %+v of %+v", id, r)
		}
	})
}
