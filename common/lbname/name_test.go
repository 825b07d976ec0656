package lbname

import (
	"fmt"
	"strings"
	"testing"
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

func TestTags(t *testing.T) {
	tags := Tags("c1", "default", "web")
	ns, name, ok := Owner("c1", tags)
	if !ok || ns != "default" || name != "web" {
		t.Fatalf("Owner = %q %q %v", ns, name, ok)
	}
	if _, _, ok := Owner("c2", tags); ok {
		t.Error("another cluster claims the resource")
	}
	tags[ClusterTagPrefix+"c1"] = Shared
	if _, _, ok := Owner("c1", tags); ok {
		t.Error("shared resource reported as owned")
	}
}
