package cloudtest

import (
	"fmt"
	"maps"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/reach"
)

// ReachHarness is what the generated hostile group needs from a simulator on top of
// HostileHarness: the provider's annotation table, and foreign objects of each kind an
// annotation of the table names.
type ReachHarness interface {
	HostileHarness
	// Annotations is the provider's annotation table (common/reach), the one its parser uses.
	Annotations() reach.Table
	// Foreign seeds the simulator, through its API as an operator, another cluster or an
	// upstream CCM would, with objects of kind (an Annotation.Object of the table) that the
	// attacking cluster's Service does not own, and returns the values that name them. The
	// victim's load balancer exists by then; its objects may be among them.
	Foreign(t T, kind, victim string, victimSvc *v1.Service, attacker string) []Foreign
}

// Foreign is an object the attacker names: Flavour says whose it is (another cluster's,
// another namespace's, nobody's, upstream's, in use), Value is what the annotation says.
type Foreign struct {
	Flavour string
	Value   string
}

// Flavours of foreign objects a harness makes where its cloud has them.
const (
	OtherCluster   = "another cluster's"
	OtherNamespace = "another namespace's"
	Unowned        = "an unowned"
	UpstreamMade   = "an upstream-made"
	InUse          = "an in-use"
)

// GenerateCases derives the attacks on every annotation of tab from its reach: each foreign
// object of an Object annotation's kind; ports on the Nodes that are not the Service's; more
// ranges than a Service may list and a zoned one; patterns past their bounds; and for every
// annotation a value past its size bound. Each is refused with a message naming the
// annotation. foreign returns the objects of a kind (called once per kind). Pure but for
// foreign.
func GenerateCases(tab reach.Table, foreign func(kind string) []Foreign) []HostileCase {
	var out []HostileCase
	seen := map[string][]Foreign{}
	add := func(a reach.Annotation, what, value string) {
		ann := maps.Clone(a.With)
		if ann == nil {
			ann = map[string]string{}
		}
		ann[a.Name] = value
		out = append(out, HostileCase{Name: a.Name + ": " + what, Annotations: ann, Reason: "annotation " + a.Name})
	}
	for _, a := range tab {
		switch a.Reach {
		case reach.Object:
			fs, ok := seen[a.Object]
			if !ok {
				fs = foreign(a.Object)
				seen[a.Object] = fs
			}
			for _, f := range fs {
				add(a, f.Flavour+" "+a.Object, f.Value)
			}
		case reach.NodePort:
			for _, p := range []int{10250, 22, attackNodePort + 1} {
				add(a, fmt.Sprintf("port %d on the Nodes", p), fmt.Sprint(p))
			}
		case reach.Ranges:
			add(a, fmt.Sprintf("%d ranges", reach.MaxRanges+1), strings.TrimSuffix(strings.Repeat("10.0.0.0/8,", reach.MaxRanges+1), ","))
			add(a, "a zoned range", "fe80::/64%eth0")
		case reach.Pattern:
			add(a, "a pattern past the size bound", reach.PatternMark+"^"+strings.Repeat("(a|b)", reach.MaxPattern/5+1))
			add(a, "a pattern that expands past the instruction bound", reach.PatternMark+"(ab|cd){1,999}")
		}
		add(a, "a value past the size bound", strings.Repeat("x", a.Limit()+1))
	}
	return out
}

// attackNodePort is the nodePort of every attacking Service (sameNamedService).
const attackNodePort = 30080

func generatedHostile(t T, c Config) {
	h := hostile(t, c)
	rh, ok := h.(ReachHarness)
	if !ok {
		t.Fatalf("the harness does not implement cloudtest.ReachHarness")
	}
	tab := rh.Annotations()
	if err := tab.Validate(); err != nil {
		t.Fatalf("%v", err)
	}
	vlb, vsvc, vnodes, vst := victimSetUp(t, c, h, "store")
	cases := GenerateCases(tab, func(kind string) []Foreign {
		fs := rh.Foreign(t, kind, victimCluster, vsvc, attackerCluster)
		if len(fs) == 0 {
			t.Errorf("the harness makes no foreign %s for the hostile suite", kind)
		}
		return fs
	})
	attack(t, c, h, "cloudtest-reach", "reach", cases)
	victimUntouched(t, h, vlb, vsvc, vnodes, vst)
	counts := tab.Count()
	t.Logf("generated %d hostile cases from %d annotations (objects %d, node ports %d, ranges %d, patterns %d, text %d, settings %d)",
		len(cases), len(tab), counts[reach.Object], counts[reach.NodePort], counts[reach.Ranges], counts[reach.Pattern], counts[reach.Text], counts[reach.Setting])
}
