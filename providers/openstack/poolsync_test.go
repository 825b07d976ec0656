package openstack

import (
	"strings"
	"testing"
)

func TestPlanPool(t *testing.T) {
	mon := &observedMonitor{ID: "hm", Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1}
	a := memberKey{Address: "10.0.0.10", Port: 30080}
	b := memberKey{Address: "10.0.0.11", Port: 30080}
	c := memberKey{Address: "10.0.0.12", Port: 30080}
	want := poolState{Method: "ROUND_ROBIN", CIDRs: []string{"10.0.0.0/8"}, Monitor: &observedMonitor{Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1},
		Members: []memberKey{a, b}}
	tagAB := membersTag([]memberKey{b, a})
	same := poolState{Method: "ROUND_ROBIN", CIDRs: []string{"10.0.0.0/8"}, Monitor: mon, Members: []memberKey{b, a}, Tags: []string{tagAB}}
	with := func(f func(*poolState)) poolState {
		s := same
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name    string
		have    poolState
		want    poolState
		writes  int
		repairs []string // parts of the repairs, in order
	}{
		{"unchanged: no write", same, want, 0, nil},
		{"members in another order: no write", with(func(s *poolState) { s.Members = []memberKey{a, b} }), want, 0, nil},
		{"lb-method changed", with(func(s *poolState) { s.Method = "SOURCE_IP" }), want, 1, []string{"lb-method was SOURCE_IP"}},
		{"allowed CIDRs changed", with(func(s *poolState) { s.CIDRs = nil }), want, 1, []string{"allowed CIDRs were []"}},
		{"monitor deleted", with(func(s *poolState) { s.Monitor = nil }), want, 1, []string{"health monitor of TCP/80 was deleted"}},
		{"monitor settings changed", with(func(s *poolState) {
			s.Monitor = &observedMonitor{ID: "hm", Type: "TCP", Delay: 60, Timeout: 30, MaxRetries: 1}
		}), want, 1,
			[]string{"settings were delay=60 timeout=30"}},
		{"monitor type changed: delete and create", with(func(s *poolState) {
			s.Monitor = &observedMonitor{ID: "hm", Type: "PING", Delay: 5, Timeout: 3, MaxRetries: 1}
		}), want, 2,
			[]string{"was of type PING"}},
		{"monitor added by hand", same, with(func(s *poolState) { s.Monitor = nil; s.Members = want.Members; s.Tags = nil; s.CIDRs = want.CIDRs }), 1, []string{"was added"}},
		{"member removed out of band: the others carry the wanted set's tag", with(func(s *poolState) { s.Members = []memberKey{a} }), want, 1, []string{"members of TCP/80 were changed (1, want 2)"}},
		{"member added by hand", with(func(s *poolState) { s.Members = []memberKey{a, b, c} }), want, 1, []string{"members of TCP/80 were changed (3, want 2)"}},
		{"a Node change (older tag) is written, not a repair", with(func(s *poolState) { s.Members = []memberKey{a}; s.Tags = []string{membersTag([]memberKey{a})} }), want, 1, nil},
		{"members without a tag (earlier ccm) are written, not a repair", with(func(s *poolState) { s.Members = []memberKey{a}; s.Tags = nil }), want, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planPool("TCP/80", tc.want, tc.have)
			if got := p.writes(); got != tc.writes {
				t.Errorf("writes = %d, want %d (plan %+v)", got, tc.writes, p)
			}
			if len(p.Repairs) != len(tc.repairs) {
				t.Fatalf("repairs = %q, want %d mentioning %q", p.Repairs, len(tc.repairs), tc.repairs)
			}
			for i, part := range tc.repairs {
				if !strings.Contains(p.Repairs[i], part) {
					t.Errorf("repair %q does not mention %q", p.Repairs[i], part)
				}
			}
		})
	}
}

// The tag names the set, not the order the Nodes came in.
func TestMembersTagIsOrderFree(t *testing.T) {
	a, b := memberKey{Address: "10.0.0.10", Port: 1}, memberKey{Address: "10.0.0.9", Port: 1}
	if membersTag([]memberKey{a, b}) != membersTag([]memberKey{b, a}) {
		t.Error("the tag depends on the order")
	}
	if membersTag([]memberKey{a}) == membersTag([]memberKey{a, b}) || !strings.HasPrefix(membersTag(nil), membersTagPrefix) {
		t.Error("different sets share a tag, or the prefix is missing")
	}
}
