package nlbplan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

var (
	svcID     = ownership.Identity{Cluster: "c", Namespace: "ns", Name: "web", UID: "u1"}
	svcDesc   = ownership.Description(svcID, "client", 255)
	otherDesc = ownership.Description(ownership.Identity{Cluster: "c", Namespace: "ns", Name: "other", UID: "u2"}, "client", 255)
	upDesc    = "kubernetes.io/rule/nlb/client=up"
)

func client(cidr string, port int32, desc string) sgrules.Rule {
	return sgrules.Rule{Proto: "tcp", From: port, To: port, CIDR: cidr, Desc: desc}
}

func nodeRules(want []sgrules.Rule, in ...string) NodeRules {
	upstream := func(r sgrules.Rule) bool { return r.Desc == upDesc }
	return NodeRules{Want: want, In: in, Cluster: "c", Upstream: upstream,
		Mine: func(r sgrules.Rule) bool {
			return r.CIDR != "" && (ownership.DescribedBy(svcID, r.Desc) || upstream(r))
		}}
}

// Each kind of frame step, one case each: a case fails when PlanFrame stops making its step
// (or makes one it should not).
func TestPlanFrame(t *testing.T) {
	r80 := client("10.0.0.0/8", 80, svcDesc)
	r81 := client("10.0.0.0/8", 81, svcDesc)
	own := &sgrules.Group{ID: "sg-own", Rules: []sgrules.Rule{r80}}
	existing := FrameObserved{Exists: true, Scheme: "internet-facing", Groups: []string{"sg-own"}, Own: own}
	for _, tc := range []struct {
		name   string
		want   FrameDesired
		have   FrameObserved
		plan   Frame
		writes bool
	}{
		{name: "new NLB without groups: made",
			want: FrameDesired{Scheme: "internet-facing"},
			plan: Frame{Create: true}, writes: true},
		{name: "new NLB with its own group: group made with its rules, then the NLB",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r80}},
			plan: Frame{Create: true, Own: &sgrules.Own{Create: true, Add: []sgrules.Rule{r80}}}, writes: true},
		{name: "nothing differs: no step",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r80}},
			have: existing,
			plan: Frame{Own: &sgrules.Own{ID: "sg-own"}}},
		{name: "scheme changes: deleted and made again, its own group kept",
			want: FrameDesired{Scheme: "internal", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r80}},
			have: existing,
			plan: Frame{Recreate: true, Create: true, Own: &sgrules.Own{ID: "sg-own"}}, writes: true},
		{name: "own group's rules: added and revoked",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r81}},
			have: existing,
			plan: Frame{Own: &sgrules.Own{ID: "sg-own", Add: []sgrules.Rule{r81}, Del: []sgrules.Rule{r80}}}, writes: true},
		{name: "upstream's own group: taken over",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r80}},
			have: FrameObserved{Exists: true, Scheme: "internet-facing", Groups: []string{"sg-own"}, Own: &sgrules.Group{ID: own.ID, Rules: own.Rules, Upstream: true}},
			plan: Frame{Own: &sgrules.Own{ID: "sg-own", TakeOver: true}}, writes: true},
		{name: "own group missing on an NLB with named groups: made and set",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Own: true}, OwnRules: []sgrules.Rule{r80}},
			have: FrameObserved{Exists: true, Scheme: "internet-facing", Groups: []string{"sg-byo"}},
			plan: Frame{Own: &sgrules.Own{Create: true, Add: []sgrules.Rule{r80}}, SetGroups: true}, writes: true},
		{name: "named groups replace the own group, which is dropped",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Named: []string{"sg-byo"}, DropOwn: true}},
			have: FrameObserved{Exists: true, Scheme: "internet-facing", Groups: []string{"sg-own"}, Detached: "sg-own"},
			plan: Frame{SetGroups: true, Named: []string{"sg-byo"}, Drop: "sg-own"}, writes: true},
		{name: "named groups held: no step; a detached group the annotation names is kept",
			want: FrameDesired{Scheme: "internet-facing", Groups: SecurityGroups{Named: []string{"sg-byo"}}},
			have: FrameObserved{Exists: true, Scheme: "internet-facing", Groups: []string{"sg-byo"}, Detached: "sg-byo"},
			plan: Frame{Named: []string{"sg-byo"}}},
		{name: "node rules: added where wanted, the Service's revoked elsewhere, MTU looked at in both",
			want: FrameDesired{Scheme: "internet-facing", Nodes: nodeRules([]sgrules.Rule{r80}, "sg-node")},
			have: FrameObserved{Exists: true, Scheme: "internet-facing", Nodes: []sgrules.Group{{ID: "sg-node"}, {ID: "sg-old", Rules: []sgrules.Rule{r80, client("10.0.0.0/8", 80, otherDesc)}}}},
			plan: Frame{Nodes: []sgrules.Change{{Group: "sg-node", Add: []sgrules.Rule{r80}}, {Group: "sg-old", Del: []sgrules.Rule{r80}}},
				MTU: map[string][]sgrules.Rule{"sg-node": {r80}, "sg-old": nil}}, writes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanFrame(tc.want, tc.have)
			if !reflect.DeepEqual(got, tc.plan) {
				t.Errorf("plan\n%+v\nwant\n%+v", got, tc.plan)
			}
			if got.Writes() != tc.writes {
				t.Errorf("Writes() = %v, want %v", got.Writes(), tc.writes)
			}
		})
	}
}

// Upstream's node rules that are wanted get ccm's description in place (never revoked and
// added again); those not wanted go; a group read twice is planned once.
func TestPlanNodeRulesTakesUpstreamsOver(t *testing.T) {
	want := client("10.0.0.0/8", 80, svcDesc)
	upWanted := client("10.0.0.0/8", 80, upDesc)
	upStale := client("10.0.0.0/8", 99, upDesc)
	g := sgrules.Group{ID: "sg-node", Rules: []sgrules.Rule{upWanted, upStale}}
	changes, mtu := PlanNodeRules(nodeRules([]sgrules.Rule{want}, "sg-node"), []sgrules.Group{g, g})
	if len(changes) != 1 {
		t.Fatalf("changes %+v: want one group's", changes)
	}
	c := changes[0]
	if !reflect.DeepEqual(c.Redescribe, []sgrules.Rule{want}) || len(c.Add) != 0 || !reflect.DeepEqual(c.Del, []sgrules.Rule{upStale}) {
		t.Errorf("change %+v: want the wanted rule redescribed, nothing added, the stale one revoked", c)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "taken over") {
		t.Errorf("notes %q", c.Notes)
	}
	if _, ok := mtu["sg-node"]; !ok {
		t.Errorf("MTU groups %v: want the changed group", mtu)
	}
}

// A group holding what is wanted, with its MTU rule, plans nothing.
func TestPlanNodeRulesNothingToDo(t *testing.T) {
	r := client("10.0.0.0/8", 80, svcDesc)
	mtu := sgrules.Rule{Proto: "icmp", From: 3, To: 4, CIDR: "10.0.0.0/8", Desc: sgrules.MTUDescription("c")}
	changes, groups := PlanNodeRules(nodeRules([]sgrules.Rule{r}, "sg-node"), []sgrules.Group{{ID: "sg-node", Rules: []sgrules.Rule{r, mtu}}})
	if len(changes) != 0 || groups != nil {
		t.Errorf("changes %+v, MTU %v: want none", changes, groups)
	}
}

// Upstream's target groups kept by the plan are tagged first, once each; Writes says so.
func TestComputeTagsUpstreamsTargetGroups(t *testing.T) {
	want := Desired{Ports: []Port{{Protocol: "TCP", Port: 80, Group: "tg-80", Backend: "TCP", NodePort: 30080}, {Protocol: "TCP", Port: 81, Group: "tg-81", Backend: "TCP", NodePort: 30080}},
		Tags: map[string]string{"k": "v"}}
	up := Group{ARN: "arn:up", Name: "k8s-up", Untagged: true}
	p := Compute(want, Observed{Found: map[string]Group{"tg-80": up, "tg-81": up}, Tags: map[string]string{"k": "v"}})
	if !reflect.DeepEqual(p.TagGroups, []Ref{{ARN: "arn:up", Name: "k8s-up"}}) {
		t.Errorf("TagGroups %+v: want upstream's group once", p.TagGroups)
	}
	if !p.Writes() {
		t.Error("Writes() = false for a plan that tags")
	}
	up.Untagged = false
	p = Compute(want, Observed{Found: map[string]Group{"tg-80": up, "tg-81": up}, Tags: map[string]string{"k": "v"}})
	if len(p.TagGroups) != 0 {
		t.Errorf("TagGroups %+v for a tagged group", p.TagGroups)
	}
	var none *Plan
	if !none.Writes() {
		t.Error("a plan not made yet must count as writing")
	}
}
