package cloudtest

import (
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/reach"
)

// Every annotation gets a size case, and each reach its own: objects one per foreign object,
// node ports three, ranges two, patterns two.
func TestGenerateCasesFromTheReach(t *testing.T) {
	tab := reach.Table{
		{Name: "p/obj", Reach: reach.Object, Object: "thing", With: map[string]string{"p/on": "true"}},
		{Name: "p/obj2", Reach: reach.Object, Object: "thing"},
		{Name: "p/port", Reach: reach.NodePort},
		{Name: "p/ranges", Reach: reach.Ranges},
		{Name: "p/pat", Reach: reach.Pattern},
		{Name: "p/text", Reach: reach.Text, Max: 8},
	}
	calls := 0
	cases := GenerateCases(tab, func(kind string) []Foreign {
		calls++
		return []Foreign{{Flavour: Unowned, Value: "t-1"}, {Flavour: OtherCluster, Value: "t-2"}}
	})
	if calls != 1 {
		t.Errorf("foreign called %d times for one kind, want 1", calls)
	}
	per := map[string]int{}
	for _, c := range cases {
		var ann string
		for k := range c.Annotations {
			if k != "p/on" {
				ann = k
			}
		}
		per[ann]++
		if c.Reason != "annotation "+ann || !strings.HasPrefix(c.Name, ann+": ") {
			t.Errorf("case %q: reason %q does not name %s", c.Name, c.Reason, ann)
		}
		if ann == "p/obj" && c.Annotations["p/on"] != "true" {
			t.Errorf("case %q lacks the annotation it needs: %v", c.Name, c.Annotations)
		}
		if ann == "p/text" && len(c.Annotations[ann]) != 9 {
			t.Errorf("the size case of p/text is %d bytes, want 9", len(c.Annotations[ann]))
		}
	}
	want := map[string]int{"p/obj": 3, "p/obj2": 3, "p/port": 4, "p/ranges": 3, "p/pat": 3, "p/text": 1}
	for k, n := range want {
		if per[k] != n {
			t.Errorf("%s: %d cases, want %d", k, per[k], n)
		}
	}
	// The generated pattern attacks are refused by the common check itself.
	c := &reach.Checker{Table: tab}
	if err := c.Values(AttackService(0)); err != nil {
		t.Fatalf("a Service without annotations is refused: %v", err)
	}
	for _, hc := range cases {
		if _, ok := hc.Annotations["p/pat"]; ok {
			svc := AttackService(0)
			svc.Annotations = hc.Annotations
			if err := c.Values(svc); err == nil {
				t.Errorf("%s is not refused by the pattern check", hc.Name)
			}
		}
	}
}
