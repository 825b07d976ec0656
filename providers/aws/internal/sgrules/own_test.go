package sgrules

import (
	"reflect"
	"strings"
	"testing"
)

// A Service's own group: made with every wanted rule, taken over when upstream's, and given
// the difference otherwise (every rule in it is the Service's, whoever described it).
func TestPlanOwn(t *testing.T) {
	r80 := Rule{Proto: "tcp", From: 80, To: 80, CIDR: "0.0.0.0/0", Desc: "ccm:me"}
	r22 := Rule{Proto: "tcp", From: 22, To: 22, CIDR: "10.0.0.0/8", Desc: "by hand"}
	for _, tc := range []struct {
		name   string
		seen   *Group
		want   []Rule
		plan   Own
		writes bool
	}{
		{"none: made with its rules", nil, []Rule{r80}, Own{Create: true, Add: []Rule{r80}}, true},
		{"as wanted", &Group{ID: "sg-1", Rules: []Rule{r80}}, []Rule{r80}, Own{ID: "sg-1"}, false},
		{"upstream's: taken over", &Group{ID: "sg-1", Rules: []Rule{r80}, Upstream: true}, []Rule{r80}, Own{ID: "sg-1", TakeOver: true}, true},
		{"a rule added by hand goes, a missing one comes", &Group{ID: "sg-1", Rules: []Rule{r22}}, []Rule{r80}, Own{ID: "sg-1", Add: []Rule{r80}, Del: []Rule{r22}}, true},
	} {
		got := PlanOwn(tc.seen, tc.want)
		if !reflect.DeepEqual(*got, tc.plan) {
			t.Errorf("%s: %+v, want %+v", tc.name, *got, tc.plan)
		}
		if got.Writes() != tc.writes {
			t.Errorf("%s: Writes() = %v", tc.name, got.Writes())
		}
	}
	var none *Own
	if none.Writes() {
		t.Error("no own group writes nothing")
	}
}

// Each group gets its wanted rules; the Service's rules go from a group that wants none; a
// group as wanted is not in the changes.
func TestPlanGroups(t *testing.T) {
	mine := func(r Rule) bool { return strings.HasPrefix(r.Desc, "ccm:") }
	r := Rule{Proto: "tcp", From: 30080, To: 30080, Group: "sg-elb", Desc: "ccm:me"}
	other := Rule{Proto: "tcp", From: 22, To: 22, CIDR: "10.0.0.0/8", Desc: "by hand"}
	groups := []Group{{ID: "sg-a"}, {ID: "sg-b", Rules: []Rule{r}}, {ID: "sg-old", Rules: []Rule{r, other}}}
	got := PlanGroups(groups, map[string][]Rule{"sg-a": {r}, "sg-b": {r}}, mine)
	want := []Change{{Group: "sg-a", Add: []Rule{r}}, {Group: "sg-old", Del: []Rule{r}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %+v, want %+v", got, want)
	}
}
