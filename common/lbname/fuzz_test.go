package lbname

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSchemes are the schemes the providers use, and small ones where every name is cut.
var fuzzSchemes = []struct {
	Scheme
	noEdgeSep bool // the cloud refuses a name that starts or ends with Sep (AWS: a hyphen)
}{
	{AWSELB, true},
	{Scheme{Prefix: "k8s-tg-", Sep: "-", MaxLen: 32, Allowed: isAlnum}, true}, // AWS target groups
	{Octavia, false},
	{Scheme{Prefix: "lb_", Sep: "_", MaxLen: 24}, false},
	{Scheme{Prefix: "k", Sep: "_", MaxLen: 12}, false}, // only the hash suffix fits
}

// What Kubernetes accepts as a namespace or Service name, and ccm as a cluster name without Sep.
var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	plainCluster = regexp.MustCompile(`^[A-Za-z0-9]([-.A-Za-z0-9]{0,61}[A-Za-z0-9])?$`)
)

func FuzzName(f *testing.F) {
	f.Add("prod", "kube-system", "web", "v6", "kube_service_prod_kube-system_web")
	f.Add("a_b", "c", "d", "e", "kube_service_a_b_c_d")
	f.Add("a/b", "c", "d/e", "x", "")
	f.Add("cl", "ns", strings.Repeat("é", 200), "日本", "")
	f.Add(strings.Repeat("ü", 130), "ns", "😀", "\xff", "k8s-c-ns-web-H0123456789")
	f.Add("c", "ns", "web", "ipv6", "kube_service_c_ns_web_ipv6")
	f.Add("", "", "", "", "")
	f.Add("-", "_", "H0123456789", "Habcdefabc", "kube_service___H0123456789")
	f.Fuzz(func(t *testing.T, p, q, r, u, lb string) {
		for _, s := range fuzzSchemes {
			// Identities made of the same pieces split in different places, and one shaped
			// like a hashed name.
			ids := [][3]string{{p, q, r}, {u, q, r}, {p, u, r}, {p, q, u}}
			for _, j := range []string{s.Sep, "/"} {
				ids = append(ids, [3]string{p + j + q, r, u}, [3]string{p, q + j + r, u}, [3]string{p, q, r + j + u})
			}
			head := s.Prefix + p + s.Sep + q + s.Sep
			if h := s.Name(p, q, r); strings.HasPrefix(h, head) {
				ids = append(ids, [3]string{p, q, h[len(head):]})
			}
			named := map[string][3]string{}
			for i, id := range ids {
				n := s.Name(id[0], id[1], id[2])
				checkName(t, s.Scheme, s.noEdgeSep, id, n)
				if i == 0 {
					if again := s.Name(id[0], id[1], id[2]); again != n {
						t.Fatalf("%s: Name%q = %q, then %q", s.Prefix, id, n, again)
					}
				}
				if prev, dup := named[n]; dup && prev != id {
					t.Fatalf("%s: %q and %q both named %q", s.Prefix, prev, id, n)
				}
				named[n] = id
				// A readable name of a Kubernetes Service reads back.
				if s.Allowed == nil && s.Sep == "_" && plainCluster.MatchString(id[0]) && dnsLabel.MatchString(id[1]) && dnsLabel.MatchString(id[2]) &&
					len(s.Prefix)+len(id[0])+len(id[1])+len(id[2])+2*len(s.Sep) <= s.MaxLen {
					if ns, name, ok := s.Parse(id[0], n); !ok || ns != id[1] || name != id[2] {
						t.Errorf("Parse(%q, %q) = %q, %q, %v; want %q, %q", id[0], n, ns, name, ok, id[1], id[2])
					}
				}
			}
			// Whatever Parse accepts, for the name's own cluster or another, is a name Name gives
			// to exactly that identity; and so for any string.
			for n, id := range named {
				for _, c := range []string{id[0], u} {
					if ns, name, ok := s.Parse(c, n); ok && [3]string{c, ns, name} != id {
						t.Fatalf("%s: Parse(%q, %q) = %q, %q, but %q was named so", s.Prefix, c, n, ns, name, id)
					}
				}
			}
			for _, c := range []string{p, u} {
				if ns, name, ok := s.Parse(c, lb); ok {
					if got := s.Name(c, ns, name); got != lb {
						t.Fatalf("%s: Parse(%q, %q) = %q, %q, but that is named %q", s.Prefix, c, lb, ns, name, got)
					}
				}
			}
		}
	})
}

func checkName(t *testing.T, s Scheme, noEdgeSep bool, id [3]string, n string) {
	t.Helper()
	if !utf8.ValidString(n) {
		t.Fatalf("%s: Name%q = %q is not valid UTF-8", s.Prefix, id, n)
	}
	if len(n) > s.MaxLen {
		t.Fatalf("%s: Name%q = %q is %d bytes, max %d", s.Prefix, id, n, len(n), s.MaxLen)
	}
	if !strings.HasPrefix(n, strings.TrimRight(s.Prefix, s.Sep)) {
		t.Fatalf("%s: Name%q = %q lacks the prefix", s.Prefix, id, n)
	}
	if s.Allowed != nil {
		for _, r := range n {
			if !s.Allowed(r) && !strings.ContainsRune(s.Sep, r) {
				t.Fatalf("%s: Name%q = %q holds %q", s.Prefix, id, n, r)
			}
		}
	}
	if noEdgeSep && (strings.HasPrefix(n, s.Sep) || strings.HasSuffix(n, s.Sep)) {
		t.Fatalf("%s: Name%q = %q starts or ends with %q", s.Prefix, id, n, s.Sep)
	}
}
