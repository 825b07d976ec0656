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
	onVIP := func(m memberKey) memberKey { m.Subnet = "vip-sub"; return m }
	onCfg := func(m memberKey) memberKey { m.Subnet = "cfg-sub"; return m }
	wantOnCfg := want
	wantOnCfg.Members, wantOnCfg.MemberSubnetAlts = []memberKey{onCfg(a), onCfg(b)}, []string{"vip-sub"}
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
		{"persistence wanted (sessionAffinity ClientIP): written, not a repair", same,
			func() poolState { w := want; w.Persistence = "SOURCE_IP"; return w }(), 1, nil},
		{"persistence no longer wanted (None): removed, not a repair", with(func(s *poolState) { s.Persistence = "SOURCE_IP" }), want, 1, nil},
		{"persistence and lb-method: one pool update", with(func(s *poolState) { s.Persistence = "SOURCE_IP"; s.Method = "SOURCE_IP" }), want, 1,
			[]string{"lb-method was SOURCE_IP"}},
		{"cookie persistence set by hand: a repair", with(func(s *poolState) { s.Persistence = "APP_COOKIE(sid)" }),
			func() poolState { w := want; w.Persistence = "SOURCE_IP"; return w }(), 1, []string{"session persistence was APP_COOKIE(sid)"}},
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
		// an earlier ccm's default member subnet (the VIP's) satisfies upstream's default
		{"members on an accepted other subnet: no write", with(func(s *poolState) { s.Members = []memberKey{onVIP(a), onVIP(b)} }), wantOnCfg, 0, nil},
		{"members on a subnet not accepted: written", with(func(s *poolState) { s.Members = []memberKey{onVIP(a), onVIP(b)} }),
			func() poolState { w := wantOnCfg; w.MemberSubnetAlts = nil; return w }(), 1, nil},
		{"accepted subnet, but a member missing: written", with(func(s *poolState) { s.Members = []memberKey{onVIP(a)} }), wantOnCfg, 1, nil},
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

// A rewrite of the members keeps those already on an accepted other subnet there.
func TestKeptSubnets(t *testing.T) {
	have := []memberKey{{Address: "10.0.0.10", Subnet: "vip"}, {Address: "10.0.0.11", Subnet: "other"}, {Address: "10.0.0.12", Subnet: "cfg"}}
	got := keptSubnets(have, []string{"vip"})
	if len(got) != 1 || got["10.0.0.10"] != "vip" {
		t.Errorf("keptSubnets = %v, want only 10.0.0.10 on vip", got)
	}
	spec := &lbSpec{memberSubnetID: "cfg"}
	ls := listenerSpec{NodePort: 30080}
	opts := ls.memberOpts(spec, []member{{Node: "a", Address: "10.0.0.10"}, {Node: "b", Address: "10.0.0.13"}}, got)
	if opts[0].SubnetID != "vip" || opts[1].SubnetID != "cfg" || opts[0].Tags[0] != ls.memberOpts(spec, []member{{Node: "a", Address: "10.0.0.10"}, {Node: "b", Address: "10.0.0.13"}}, nil)[0].Tags[0] {
		t.Errorf("member opts %+v: want the kept member on vip, the new on cfg, the tag of the set on cfg", opts)
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
