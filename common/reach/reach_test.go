package reach

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
)

func TestValidateRefusesAnAnnotationWithoutReach(t *testing.T) {
	for name, tc := range map[string]struct {
		t    Table
		want string
	}{
		"no reach":         {Table{{Name: "a"}}, "a: reach"},
		"object sans kind": {Table{{Name: "a", Reach: Object}}, "a: names an object but not its kind"},
		"twice":            {Table{{Name: "a", Reach: Setting}, {Name: "a", Reach: Setting}}, "listed twice"},
		"object fields":    {Table{{Name: "a", Reach: Text, List: true}}, "object fields"},
	} {
		err := tc.t.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", name, err, tc.want)
		}
	}
	if err := (Table{{Name: "a", Reach: Object, Object: "subnet", List: true}, {Name: "b", Reach: Setting}}).Validate(); err != nil {
		t.Errorf("a valid table: %v", err)
	}
}

func TestPrefixNormalises(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1/8":           "10.0.0.0/8",
		" 010.000.0.0/16 ":     "10.0.0.0/16",
		"::ffff:0.0.0.0/96":    "0.0.0.0/0",
		"::ffff:10.0.0.0/104":  "10.0.0.0/8",
		"::ffff:192.0.2.1/128": "192.0.2.1/32",
		"2001:db8::1/32":       "2001:db8::/32",
		"fe80::/64%eth0":       "",
		"fe80::1%eth0/64":      "",
		"::/0":                 "::/0",
		"::ffff:0.0.0.0/95":    "::fffe:0:0/95",
		"10.0.0.0":             "",
		"":                     "",
	} {
		p, ok := Prefix(in)
		got := ""
		if ok {
			got = p.String()
		}
		if got != want {
			t.Errorf("Prefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrefixListBoundsAndNamesTheItem(t *testing.T) {
	got, err := PrefixList("a", []string{"::ffff:10.0.0.0/104", "10.1.2.3/8", "192.0.2.0/24"})
	if err != nil || strings.Join(got, ",") != "10.0.0.0/8,192.0.2.0/24" {
		t.Errorf("PrefixList = %v, %v", got, err)
	}
	_, err = PrefixList("a", []string{"10.0.0.0/8", "nope"})
	if err == nil || !strings.Contains(err.Error(), `annotation a: item 2, "nope"`) || !errors.Is(err, ErrRefused) {
		t.Errorf("a bad item: %v", err)
	}
	many := make([]string, MaxRanges+1)
	for i := range many {
		many[i] = "10.0.0.0/8"
	}
	if _, err := PrefixList("a", many); err == nil || !strings.Contains(err.Error(), "more than the 250") {
		t.Errorf("too many ranges: %v", err)
	}
}

func svcWith(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u", Annotations: ann},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 80, NodePort: 30080}}, HealthCheckNodePort: 31000}}
}

func TestValuesChecksEachReach(t *testing.T) {
	c := &Checker{
		Table: Table{{Name: "p/port", Reach: NodePort}, {Name: "p/ranges", Reach: Ranges}, {Name: "p/pattern", Reach: Pattern},
			{Name: "p/text", Reach: Text, Max: 10}, {Name: "p/set", Reach: Setting}},
		Prefixes: []string{"p/"}, ExtraPorts: []int32{10256}, Words: []string{"traffic-port"},
	}
	for ann, refused := range map[[2]string]string{
		{"p/port", "30080"}:                            "",
		{"p/port", "31000"}:                            "",
		{"p/port", "10256"}:                            "",
		{"p/port", "traffic-port"}:                     "",
		{"p/port", "10250"}:                            "port 10250 is not one of this Service's node ports (10256, 30080, 31000)",
		{"p/port", "22"}:                               "port 22",
		{"p/ranges", "10.0.0.0/8, ::ffff:0.0.0.0/96"}:  "",
		{"p/ranges", "10.0.0.0/8%x"}:                   "item 1",
		{"p/pattern", "plain-name"}:                    "",
		{"p/pattern", "~^ext-.*$"}:                     "",
		{"p/pattern", "~(" + strings.Repeat("a", 600)}: "more than the 512",
		{"p/pattern", "~(a{1000}){1000}"}:              "",
		{"p/text", "0123456789"}:                       "",
		{"p/text", "0123456789a"}:                      "11 bytes, more than the 10",
		{"p/set", strings.Repeat("x", MaxValue+1)}:     "more than the 24576",
		{"p/unknown", strings.Repeat("x", MaxValue+1)}: "more than the 24576",
		{"q/other", strings.Repeat("x", MaxValue+1)}:   "",
	} {
		err := c.Values(svcWith(map[string]string{ann[0]: ann[1]}))
		switch {
		case refused == "" && err != nil:
			if ann[0] == "p/pattern" && strings.Contains(ann[1], "{1000}") {
				continue // checked below
			}
			t.Errorf("%s=%.40q refused: %v", ann[0], ann[1], err)
		case refused != "" && (err == nil || !strings.Contains(err.Error(), refused) || !strings.HasPrefix(err.Error(), "annotation "+ann[0]+": ")):
			t.Errorf("%s=%.40q: %v, want a refusal naming it with %q", ann[0], ann[1], err, refused)
		}
	}
	if err := c.Values(svcWith(map[string]string{"p/pattern": "~(a{1000}){1000}"})); err == nil {
		t.Errorf("a pattern expanding to a million instructions is accepted")
	}
}

func TestPatternsCompileOncePerValue(t *testing.T) {
	p := NewPatterns()
	a, err := p.Compile("x", "^ext-[0-9]+$")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Compile("x", "^ext-[0-9]+$")
	if a != b {
		t.Errorf("the same value was compiled twice")
	}
	if _, err := p.Compile("x", "(["); err == nil || !strings.HasPrefix(err.Error(), "annotation x: ") {
		t.Errorf("a bad pattern: %v", err)
	}
	for i := 0; i < maxCached*2; i++ {
		_, _ = p.Compile("x", "^n"+strings.Repeat("a", i%50)+itoa3(i))
	}
	if len(p.m) > maxCached {
		t.Errorf("the cache holds %d patterns, more than %d", len(p.m), maxCached)
	}
}

func itoa3(i int) string {
	return string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
}

func TestNamedDecides(t *testing.T) {
	id := ownership.Of("c1", svcWith(nil))
	own := id.Tags()
	cl := map[string]string{ownership.ClusterTagPrefix + "c1": ownership.Owned}
	other := ownership.Of("c2", svcWith(nil)).Tags()
	a := Annotation{Name: "p/eip", Reach: Object, Object: "Elastic IP"}
	ac := Annotation{Name: "p/subnet", Reach: Object, Object: "subnet", Cluster: true}
	allow := ownership.Allow{IDs: []string{"eipalloc-ok"}, Namespaces: []string{"trusted"}}
	for _, tc := range []struct {
		name string
		a    Annotation
		ns   string
		obj  string
		ev   Evidence
		ok   bool
	}{
		{"own tags", a, "ns", "e1", Evidence{Tags: own}, true},
		{"own tags but in use", a, "ns", "e1", Evidence{Tags: own, InUse: "eni-1"}, false},
		{"another cluster's", a, "ns", "e1", Evidence{Tags: other}, false},
		{"untagged", a, "ns", "e1", Evidence{Tags: map[string]string{}}, false},
		{"unreadable", a, "ns", "e1", Evidence{}, false},
		{"allowed by ID", a, "ns", "eipalloc-ok", Evidence{InUse: "x"}, true},
		{"allowed by namespace", a, "trusted", "e1", Evidence{}, true},
		{"cluster-tagged, not a cluster kind", a, "ns", "e1", Evidence{Tags: cl, ClusterTagged: true}, false},
		{"cluster-tagged cluster kind", ac, "ns", "s1", Evidence{Tags: cl, ClusterTagged: true}, true},
	} {
		i := id
		i.Namespace = tc.ns
		err := Named(i, allow, tc.a, tc.obj, tc.ev)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Named = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ownership.ErrNotOwned) || !strings.HasPrefix(err.Error(), "annotation "+tc.a.Name+": names ")) {
			t.Errorf("%s: the refusal %v does not name the annotation or is not ErrNotOwned", tc.name, err)
		}
	}
}

func TestMarkdownListsEveryAnnotation(t *testing.T) {
	tab := Table{{Name: "p/b", Reach: Setting}, {Name: "p/a", Reach: Object, Object: "subnet", List: true, Cluster: true, Check: "by ID or Name tag"}}
	md := tab.Markdown()
	for _, want := range []string{"| `p/a` | names subnet (a list) | used when tagged for this cluster", "by ID or Name tag |", "| `p/b` | setting |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "p/a") > strings.Index(md, "p/b") {
		t.Errorf("objects are not listed first:\n%s", md)
	}
}

// FuzzPatternCost: whatever a tenant writes, Compile either refuses it or returns a matcher
// whose program is within MaxInst instructions (the cost of a match is proportional to it).
func FuzzPatternCost(f *testing.F) {
	for _, s := range []string{"^ext-.*$", "(a{1000}){1000}", "((((a*)*)*)*)", "[\\p{L}]{100}", "(?i)x{2,999}"} {
		f.Add(s)
	}
	p := NewPatterns()
	f.Fuzz(func(t *testing.T, expr string) {
		re, err := p.Compile("f", expr)
		if err != nil {
			return
		}
		tree, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil {
			t.Fatalf("compiled %q does not parse again: %v", expr, err)
		}
		prog, err := syntax.Compile(tree.Simplify())
		if err != nil || len(prog.Inst) > MaxInst || len(expr) > MaxPattern {
			t.Fatalf("%q accepted with %d instructions (%v)", expr, len(prog.Inst), err)
		}
	})
}

func TestEmbed(t *testing.T) {
	doc := "a\n<!-- reach:x:begin (generated) -->\nold\n<!-- reach:x:end -->\nb\n"
	got, same, err := Embed(doc, "x", "new\n")
	if err != nil || same || got != "a\n<!-- reach:x:begin (generated) -->\nnew\n<!-- reach:x:end -->\nb\n" {
		t.Errorf("Embed = %q, %v, %v", got, same, err)
	}
	if _, same, _ := Embed(got, "x", "new\n"); !same {
		t.Errorf("the same section is reported changed")
	}
	if _, _, err := Embed(doc, "y", ""); err == nil {
		t.Errorf("a doc without the markers is accepted")
	}
}

func TestNamespaceShare(t *testing.T) {
	id := ownership.Of("c1", svcWith(nil))
	desc := func(cluster, ns, name string) string {
		s := svcWith(nil)
		s.Namespace, s.Name, s.UID = ns, name, types.UID("u-"+name)
		return ownership.Description(ownership.Of(cluster, s), "client", 255)
	}
	pool := []string{desc("c1", "ns", "a"), desc("c1", "ns", "b"), desc("c1", "other", "x"), desc("c2", "ns", "y"),
		desc("c1", "ns", "s"), "the operator's rule", ""}
	for _, tc := range []struct {
		want, limit int
		ok          bool
	}{{1, 3, true}, {2, 3, false}, {1, 2, false}, {50, 0, true}, {0, 1, true}} {
		err := NamespaceShare(id, pool, tc.want, tc.limit, "rules", "[Global] K")
		if (err == nil) != tc.ok {
			t.Errorf("want %d limit %d: %v", tc.want, tc.limit, err)
		}
		if err != nil && (!errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "[Global] K") || strings.Contains(err.Error(), "/a")) {
			t.Errorf("refusal %v", err)
		}
	}
}

func TestParityNames(t *testing.T) {
	tab := Table{{Name: "p/conn-drain-enabled", Reach: Setting}, {Name: "p/conn-drain-timeout", Reach: Setting},
		{Name: "a.org/x", Reach: Setting}, {Name: "a.org/y", Reach: Setting}}
	doc := "intro\n| Annotation | Meaning |\n|---|---|\n| `conn-drain-enabled`, `-timeout` | m |\n| `spec.x` | field |\n\nafter\n| `not-read` | x |\n"
	names, err := tab.ParityNames(doc, "| Annotation |", "p/")
	if err != nil || strings.Join(names, ",") != "p/conn-drain-enabled,p/conn-drain-timeout" {
		t.Errorf("ParityNames = %v, %v", names, err)
	}
	if err := tab[:2].ParityMatches(names); err != nil {
		t.Errorf("ParityMatches: %v", err)
	}
	if err := tab.ParityMatches(names); err == nil || !strings.Contains(err.Error(), "a.org/x") {
		t.Errorf("a missing row: %v", err)
	}
	doc2 := "| Annotation | M |\n|---|---|\n| `a.org/x`, `y` | m |\n"
	if names, _ := tab.ParityNames(doc2, "| Annotation |", ""); strings.Join(names, ",") != "a.org/x,a.org/y" {
		t.Errorf("the short form after a full name: %v", names)
	}
}
