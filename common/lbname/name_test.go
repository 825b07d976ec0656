package lbname

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNameFitsAndIsStable(t *testing.T) {
	long := strings.Repeat("n", 63)
	for _, s := range []Scheme{AWSELB, Octavia, {Prefix: "lb-", Sep: "-", MaxLen: 20}} {
		for _, in := range [][3]string{
			{"c1", "default", "web"},
			{"prod-cluster", long, long},
			{strings.Repeat("c", 300), long, long},
			{"c1", "kube-system", "a"},
		} {
			got := s.Name(in[0], in[1], in[2])
			if len(got) > s.MaxLen {
				t.Errorf("%s: %q is %d chars, max %d", s.Prefix, got, len(got), s.MaxLen)
			}
			if again := s.Name(in[0], in[1], in[2]); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
			if !strings.HasPrefix(got, s.Prefix) {
				t.Errorf("%q lacks prefix %q", got, s.Prefix)
			}
			if s.Allowed != nil {
				for _, r := range strings.ReplaceAll(got, s.Sep, "") {
					if !s.Allowed(r) {
						t.Errorf("%q has disallowed %q", got, r)
					}
				}
			}
		}
	}
}

func TestNameUniqueAfterTruncation(t *testing.T) {
	seen := map[string]string{}
	prefix := strings.Repeat("x", 40)
	for i := 0; i < 5000; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		for _, s := range []Scheme{AWSELB, {Prefix: "k-", Sep: "_", MaxLen: 24}} {
			n := s.Name("cluster", "ns", id)
			if prev, dup := seen[n]; dup {
				t.Fatalf("%q and %q both named %q", prev, id, n)
			}
			seen[n] = id
		}
	}
	// Different clusters never share a name, even when the readable part is cut.
	if AWSELB.Name("a", "ns", prefix) == AWSELB.Name("b", "ns", prefix) {
		t.Fatal("cluster does not scope the name")
	}
}

func TestSeparatorInNamesDoesNotCollide(t *testing.T) {
	if AWSELB.Name("c", "a-b", "c") == AWSELB.Name("c", "a", "b-c") {
		t.Fatal(`"a-b"/"c" and "a"/"b-c" share a name`)
	}
}

func TestCleanedNamesDoNotCollide(t *testing.T) {
	// "a.b" and "a-b" both clean to "a-b" for ELB; the hash keeps them apart.
	if AWSELB.Name("c", "ns", "a.b") == AWSELB.Name("c", "ns", "a-b") {
		t.Fatal("names collide after cleaning")
	}
}

func TestParse(t *testing.T) {
	n := Octavia.Name("prod", "kube-system", "my-svc")
	if n != "kube_service_prod_kube-system_my-svc" {
		t.Fatalf("upstream format changed: %q", n)
	}
	ns, name, ok := Octavia.Parse("prod", n)
	if !ok || ns != "kube-system" || name != "my-svc" {
		t.Fatalf("Parse(%q) = %q %q %v", n, ns, name, ok)
	}
	if _, _, ok := Octavia.Parse("other", n); ok {
		t.Error("parsed a name of another cluster")
	}
	cut := Scheme{Prefix: "kube_service_", Sep: "_", MaxLen: 40}.Name("prod", "kube-system", strings.Repeat("s", 50))
	if _, _, ok := Octavia.Parse("prod", cut); ok {
		t.Errorf("parsed a truncated name %q", cut)
	}
	if _, _, ok := AWSELB.Parse("c", AWSELB.Name("c", "ns", "web")); ok {
		t.Error("'-' separated names are ambiguous and must not parse")
	}
}

// Names are cut in bytes; a cut inside a multi-byte character (possible wherever Allowed is nil,
// as for Octavia) gave invalid UTF-8, which the cloud refuses or stores garbled.
func TestNameIsValidUTF8WhenCut(t *testing.T) {
	small := Scheme{Prefix: "lb_", Sep: "_", MaxLen: 40}
	for _, tc := range []struct {
		scheme                   Scheme
		cluster, namespace, name string
	}{
		{Octavia, "cl", "ns", strings.Repeat("é", 200)},      // 2-byte runes, odd head
		{Octavia, "c", "ns", strings.Repeat("日", 100)},       // 3-byte runes
		{Octavia, "c", "ns", strings.Repeat("日", 100) + "x"}, // another offset
		{Octavia, "c", "nss", strings.Repeat("日", 100)},      // and the third
		{Octavia, "c", "ns", strings.Repeat("😀", 70)},        // 4-byte runes
		{Octavia, strings.Repeat("ü", 130), "ns", "web"},     // the cluster is cut
		{small, "c", "ns", "aé" + strings.Repeat("é", 30)},   // every offset of a small scheme
		{small, "c", "ns", "ab" + strings.Repeat("é", 30)},
		{small, "c", "ns", "a" + strings.Repeat("日", 20)},
		{Octavia, "c", "ns", "bad\xffbytes"}, // invalid input is not passed through
		{small, "c\xc3", "ns", "web"},
	} {
		got := tc.scheme.Name(tc.cluster, tc.namespace, tc.name)
		if !utf8.ValidString(got) {
			t.Errorf("%s Name(%q, %q, %q) = %q: invalid UTF-8", tc.scheme.Prefix, tc.cluster, tc.namespace, tc.name, got)
		}
		if len(got) > tc.scheme.MaxLen {
			t.Errorf("%q is %d bytes, max %d", got, len(got), tc.scheme.MaxLen)
		}
	}
}

// Pairs of different Services (or clusters) that got one name.
func TestDistinctIdentitiesGetDistinctNames(t *testing.T) {
	tiny := Scheme{Prefix: "k", Sep: "_", MaxLen: 12} // only the hash suffix fits
	long := strings.Repeat("x", 300)
	hashed := Octavia.Name("c", "ns", long)
	suffix := hashed[strings.LastIndex(hashed, "_"):] // "_H" + 9 hex digits
	for _, tc := range []struct {
		why    string
		scheme Scheme
		a, b   [3]string
	}{
		// A cluster name may hold '_' (ownership.CheckClusterName allows it), a namespace not.
		{"separator in the cluster name", Octavia, [3]string{"a_b", "c", "d"}, [3]string{"a", "b_c", "d"}},
		{"separator in the cluster name, dummy", Scheme{Prefix: "dummy_", Sep: "_", MaxLen: 255}, [3]string{"a_b", "c", "d"}, [3]string{"a", "b_c", "d"}},
		// The hash covered cluster+"/"+namespace+"/"+name, which two identities can share.
		{"'/' moved between parts", tiny, [3]string{"a/b", "c", "long-d"}, [3]string{"a", "b/c", "long-d"}},
		{"'/' moved between namespace and name", tiny, [3]string{"a", "b/c", "long-d"}, [3]string{"a", "b", "c/long-d"}},
		// A name made without hashing that looks like a hashed one.
		{"name shaped like a hash suffix", Octavia, [3]string{"c", "ns", long}, [3]string{"c", "ns", hashed[len("kube_service_c_ns_"):len(hashed)-len(suffix)] + suffix}},
		// Invalid bytes replaced the same way.
		{"different invalid bytes", Octavia, [3]string{"c", "ns", "a\xff"}, [3]string{"c", "ns", "a\xfe"}},
	} {
		na, nb := tc.scheme.Name(tc.a[0], tc.a[1], tc.a[2]), tc.scheme.Name(tc.b[0], tc.b[1], tc.b[2])
		if na == nb {
			t.Errorf("%s: %q and %q both named %q", tc.why, tc.a, tc.b, na)
		}
	}
}

// The names of Services as Kubernetes allows them (and the dual-stack suffix the OpenStack
// provider adds) are what they were: load balancers made before are found again.
func TestNamesUnchanged(t *testing.T) {
	for _, tc := range []struct {
		scheme                   Scheme
		cluster, namespace, name string
		want                     string
	}{
		{Octavia, "prod", "kube-system", "my-svc", "kube_service_prod_kube-system_my-svc"},
		{Octavia, "kubernetes", "default", "dual_ipv6", "kube_service_kubernetes_default_dual_ipv6"},
		{Octavia, "prod.eu-1", "default", "web", "kube_service_prod.eu-1_default_web"},
		{AWSELB, "c1", "default", "web", "k8s-c1-default-web-H9f55b5610"},
		{Octavia, "c", "ns", strings.Repeat("s", 300), "kube_service_c_ns_" + strings.Repeat("s", 226) + "_H4e843b2d8"},
		{Scheme{Prefix: "k8s-tg-", Sep: "-", MaxLen: 32, Allowed: isAlnum}, "c1", "default/web", "tcp30080", "k8s-tg-c1-default-web-Hc3ca6cd6a"},
	} {
		if got := tc.scheme.Name(tc.cluster, tc.namespace, tc.name); got != tc.want {
			t.Errorf("Name(%q, %q, %q) = %q, was %q", tc.cluster, tc.namespace, tc.name, got, tc.want)
		}
	}
}
