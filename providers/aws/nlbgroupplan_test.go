package aws

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
)

// The decision of an NLB's groups, as upstream HEAD's ensureNLBSecurityGroup: mode x
// annotation x the NLB (none, with no groups, with groups) x the Service's own group on it.
func TestPlanNLBGroups(t *testing.T) {
	byo := []string{"sg-a", "sg-b"}
	for _, tc := range []struct {
		name    string
		managed bool
		named   []string
		exists  bool
		current []string
		own     string
		want    nlbGroupPlan
		advice  string // a word the advice holds ("": none)
	}{
		{name: "default mode, no annotation, new NLB", want: nlbGroupPlan{}},
		{name: "default mode, no annotation, NLB with groups: left as they are", exists: true, current: []string{"sg-own"}, own: "sg-own", want: nlbGroupPlan{}},
		{name: "default mode, annotation: ignored with advice (new NLB)", named: byo, advice: "NLBSecurityGroupMode = Managed"},
		{name: "default mode, annotation: ignored with advice (NLB with groups)", named: byo, exists: true, current: []string{"sg-x"}, advice: "NLBSecurityGroupMode = Managed"},
		{name: "managed, no annotation, new NLB: its own group", managed: true, want: nlbGroupPlan{Own: true}},
		{name: "managed, no annotation, NLB with its own group", managed: true, exists: true, current: []string{"sg-own"}, own: "sg-own", want: nlbGroupPlan{Own: true}},
		{name: "managed, annotation removed: its own group replaces the named ones", managed: true, exists: true, current: byo, want: nlbGroupPlan{Own: true}},
		{name: "managed, no annotation, NLB made without groups: none (AWS cannot add)", managed: true, exists: true, want: nlbGroupPlan{}},
		{name: "managed, annotation, NLB made without groups: advice", managed: true, named: byo, exists: true, advice: "created without security groups"},
		{name: "managed, annotation, new NLB: the named groups", managed: true, named: byo, want: nlbGroupPlan{Named: byo}},
		{name: "managed, annotation, NLB with them already", managed: true, named: byo, exists: true, current: []string{"sg-b", "sg-a"}, want: nlbGroupPlan{Named: byo}},
		{name: "managed, annotation added: the own group is dropped", managed: true, named: byo, exists: true, current: []string{"sg-own"}, own: "sg-own", want: nlbGroupPlan{Named: byo, DropOwn: true}},
		{name: "managed, annotation naming the own group: kept", managed: true, named: []string{"sg-own"}, exists: true, current: []string{"sg-own"}, own: "sg-own", want: nlbGroupPlan{Named: []string{"sg-own"}}},
		{name: "managed, annotation, NLB recreated (scheme) from one with the own group", managed: true, named: byo, own: "sg-own", want: nlbGroupPlan{Named: byo, DropOwn: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planNLBGroups(tc.managed, tc.named, tc.exists, tc.current, tc.own)
			if tc.advice != "" {
				if !strings.Contains(got.Advice, tc.advice) || !strings.Contains(got.Advice, annotationPrefix+annSecurityGroup) {
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

// AWS refusing a group (InvalidSecurityGroup) is the annotation's fault only when the
// annotation named the groups; refusing the Service's own group is reported as AWS's answer.
func TestSetNLBGroupsError(t *testing.T) {
	invalid := &smithy.GenericAPIError{Code: "InvalidSecurityGroup", Message: "sg-1 is not in vpc-1"}
	other := &smithy.GenericAPIError{Code: "InvalidConfigurationRequest"}
	for _, c := range []struct {
		named     bool
		err       error
		annotated bool
	}{
		{true, invalid, true},
		{false, invalid, false},
		{true, other, false},
		{false, other, false},
	} {
		err := setNLBGroupsError("k8s-x", c.named, c.err)
		if got := strings.Contains(err.Error(), annotationPrefix+annSecurityGroup); got != c.annotated || !strings.Contains(err.Error(), c.err.Error()) {
			t.Errorf("named %v, %v: %v; want naming the annotation %v", c.named, c.err, err, c.annotated)
		}
	}
}
