package poollb

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/reach"
)

func TestSharingKeyAnnotation(t *testing.T) {
	own := names.SharedIP[0]
	for _, tc := range []struct{ value, want, err string }{
		{"", "", ""},
		{" web ", "web", ""},
		{"team/web-1", "team/web-1", ""},
		{strings.Repeat("k", MaxSharingKeyLen+1), "", "at most"},
		{"a\x00b", "", "printable"},
		{"\xff", "", "printable"},
	} {
		got, err := names.SharingKey(svc("s", map[string]string{own: tc.value}, ""))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q %v, want %q", tc.value, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), own)):
			t.Errorf("%q: %v, want an error naming the annotation and saying %q", tc.value, err, tc.err)
		}
	}
}

// Every spelling of an address is refused but the canonical one, with an error naming the
// field.
func TestRequestedSpellings(t *testing.T) {
	for _, tc := range []struct{ spelling, want string }{
		{" 192.0.2.5 ", "192.0.2.5"},
		{"2001:DB8:0::0005", "2001:db8::5"},
		{"192.0.2.05", "is not an IP address"},
		{"0xc0.0.2.5", "is not an IP address"},
		{"192.0.2.5%eth0", "has a zone"},
		{"2001:db8::5%", "has a zone"},
		{"::ffff:192.0.2.5", "IPv4-mapped"},
		{"0:0:0:0:0:ffff:c000:0205", "IPv4-mapped"},
		{"[2001:db8::5]", "is not an IP address"},
		{"192.0.2.1,192.0.2.2", "two addresses of one family"},
	} {
		for _, field := range append([]string{"spec.loadBalancerIP"}, names.LoadBalancerIPs...) {
			s := svc("s", nil, "")
			if field == "spec.loadBalancerIP" {
				s.Spec.LoadBalancerIP = tc.spelling
			} else {
				s.Annotations = map[string]string{field: tc.spelling}
			}
			got, from, err := names.Requested(s)
			var gotText string
			for _, a := range got {
				gotText = a.String()
			}
			switch {
			case err != nil && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), field)):
				t.Errorf("%s = %q: %v, want %q naming the field", field, tc.spelling, err, tc.want)
			case err == nil && (gotText != tc.want || !strings.Contains(from[got[strings.Contains(tc.want, ":")]], field)):
				t.Errorf("%s = %q: got %q from %v, want %q", field, tc.spelling, gotText, from, tc.want)
			}
		}
	}
}

// Every name is in the reach table with its kind, so the hostile suite tries each.
func TestTable(t *testing.T) {
	tab := names.Table()
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(append(names.LoadBalancerIPs, names.SharedIP...), names.AddressPool...) {
		a, ok := tab.Lookup(n)
		if !ok || a.Reach == "" || a.Reach == reach.Text && a.Max != MaxSharingKeyLen {
			t.Errorf("%s: %+v %v", n, a, ok)
		}
	}
}

// FuzzRequestedIPs: whatever a tenant writes in the fields, no panic; an error names the field;
// what is accepted is canonical (no zone, not IPv4-mapped), filed under its family, and was
// written in those fields.
func FuzzRequestedIPs(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "2001:db8::5%x", "::ffff:192.0.2.1", "192.0.2.01", "2001:DB8::5", " , ", "1.2.3.4,::1", "1.2.3.4,1.2.3.5"} {
		f.Add(s, "", "")
		f.Add("", s, "")
		f.Add("", "", s)
	}
	own, kv := names.LoadBalancerIPs[0], names.LoadBalancerIPs[1]
	f.Fuzz(func(t *testing.T, lbIP, ann, kvIPs string) {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{own: ann, kv: kvIPs}}, Spec: v1.ServiceSpec{LoadBalancerIP: lbIP}}
		got, _, err := names.Requested(s)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "spec.loadBalancerIP: ") && !strings.HasPrefix(msg, "annotation "+own+": ") && !strings.HasPrefix(msg, "annotation "+kv+": ") {
				t.Fatalf("error does not start with the field: %v", err)
			}
			return
		}
		all := lbIP + "," + ann + "," + kvIPs
		for v6, a := range got {
			if a.Zone() != "" || a.Is4In6() || a.Is6() != v6 || !a.IsValid() {
				t.Fatalf("accepted %v (v6=%v) from %q", a, v6, all)
			}
			if back, err := ParseRequestedAddr("f", a.String()); err != nil || back != a {
				t.Fatalf("%v does not round-trip: %v %v", a, back, err)
			}
			found := false
			for _, part := range strings.Split(all, ",") {
				if p, err := netip.ParseAddr(strings.TrimSpace(part)); err == nil && p == a {
					found = true
				}
			}
			if !found {
				t.Fatalf("accepted %v, which %q does not ask for", a, all)
			}
		}
	})
}

// FuzzSharingKey: no panic; an accepted key is trimmed, printable and bounded; an error names
// the annotation.
func FuzzSharingKey(f *testing.F) {
	for _, s := range []string{"", "web", " web ", "a\x00", "\xff", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	own := names.SharedIP[0]
	f.Fuzz(func(t *testing.T, v string) {
		k, err := names.SharingKey(svc("s", map[string]string{own: v}, ""))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "annotation "+own+": ") {
				t.Fatalf("error does not name the annotation: %v", err)
			}
			return
		}
		if k != strings.TrimSpace(v) || len(k) > MaxSharingKeyLen || !utf8.ValidString(k) {
			t.Fatalf("accepted %q from %q", k, v)
		}
	})
}
