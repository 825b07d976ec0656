package nlbplan

import (
	"reflect"
	"strings"
	"testing"
)

// ann stands for the security-groups annotation's name, which package aws passes.
const ann = "service.beta.kubernetes.io/aws-load-balancer-security-groups"

// The decision of an NLB's groups, as upstream HEAD's ensureNLBSecurityGroup: mode x
// annotation x the NLB (none, with no groups, with groups) x the Service's own group on it.
func TestPlanSecurityGroups(t *testing.T) {
	byo := []string{"sg-a", "sg-b"}
	for _, tc := range []struct {
		name    string
		managed bool
		named   []string
		exists  bool
		current []string
		own     string
		want    SecurityGroups
		advice  string // a word the advice holds ("": none)
	}{
		{name: "default mode, no annotation, new NLB", want: SecurityGroups{}},
		{name: "default mode, no annotation, NLB with groups: left as they are", exists: true, current: []string{"sg-own"}, own: "sg-own", want: SecurityGroups{}},
		{name: "default mode, annotation: ignored with advice (new NLB)", named: byo, advice: "NLBSecurityGroupMode = Managed"},
		{name: "default mode, annotation: ignored with advice (NLB with groups)", named: byo, exists: true, current: []string{"sg-x"}, advice: "NLBSecurityGroupMode = Managed"},
		{name: "managed, no annotation, new NLB: its own group", managed: true, want: SecurityGroups{Own: true}},
		{name: "managed, no annotation, NLB with its own group", managed: true, exists: true, current: []string{"sg-own"}, own: "sg-own", want: SecurityGroups{Own: true}},
		{name: "managed, annotation removed: its own group replaces the named ones", managed: true, exists: true, current: byo, want: SecurityGroups{Own: true}},
		{name: "managed, no annotation, NLB made without groups: none (AWS cannot add)", managed: true, exists: true, want: SecurityGroups{}},
		{name: "managed, annotation, NLB made without groups: advice", managed: true, named: byo, exists: true, advice: "created without security groups"},
		{name: "managed, annotation, new NLB: the named groups", managed: true, named: byo, want: SecurityGroups{Named: byo}},
		{name: "managed, annotation, NLB with them already", managed: true, named: byo, exists: true, current: []string{"sg-b", "sg-a"}, want: SecurityGroups{Named: byo}},
		{name: "managed, annotation added: the own group is dropped", managed: true, named: byo, exists: true, current: []string{"sg-own"}, own: "sg-own", want: SecurityGroups{Named: byo, DropOwn: true}},
		{name: "managed, annotation naming the own group: kept", managed: true, named: []string{"sg-own"}, exists: true, current: []string{"sg-own"}, own: "sg-own", want: SecurityGroups{Named: []string{"sg-own"}}},
		{name: "managed, annotation, NLB recreated (scheme) from one with the own group", managed: true, named: byo, own: "sg-own", want: SecurityGroups{Named: byo, DropOwn: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanSecurityGroups(ann, tc.managed, tc.named, tc.exists, tc.current, tc.own)
			if tc.advice != "" {
				if !strings.Contains(got.Advice, tc.advice) || !strings.Contains(got.Advice, ann) {
					t.Errorf("advice %q: want it to name the annotation and say %q", got.Advice, tc.advice)
				}
				if got.Own || len(got.Named) > 0 || got.DropOwn {
					t.Errorf("plan %+v: want nothing changed with the advice", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
}
