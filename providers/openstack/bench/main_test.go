package main

import (
	"testing"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestWithMember(t *testing.T) {
	lbs := []fake.LoadBalancer{
		{Name: "both listeners", Listeners: []fake.Listener{{Members: []string{"10.0.1.2:30080", "10.0.1.5:30080"}}, {Members: []string{"10.0.1.5:30443"}}}},
		{Name: "one of two", Listeners: []fake.Listener{{Members: []string{"10.0.1.5:30080"}}, {Members: []string{"10.0.1.2:30443"}}}},
		{Name: "a longer address", Listeners: []fake.Listener{{Members: []string{"10.0.1.50:30080"}}}},
		{Name: "no listener"},
	}
	if n := withMember(lbs, "10.0.1.5"); n != 1 {
		t.Errorf("withMember: %d, want 1 (only the LB with the member in every listener)", n)
	}
}

// Nothing changed: a restart and a resync write nothing; counted at the fake.
func TestSteadyStateWritesNothing(t *testing.T) {
	for _, sg := range []string{"", "manage-security-groups = true"} {
		s, err := measureSteady(t.Context(), 4, sg)
		if err != nil {
			t.Fatal(err)
		}
		if s.RestartWrites != 0 || s.ResyncWrites != 0 {
			t.Errorf("%q: %d writes after a restart, %d on a resync, want 0 (%v / %v)", sg, s.RestartWrites, s.ResyncWrites, s.RestartByOp, s.ResyncByOp)
		}
		if s.RestartReads == 0 || s.ResyncReads == 0 {
			t.Errorf("%q: no reads: the sync did not compare with the cloud", sg)
		}
		// One member list per LB (one listener each), the rest shared: the bulk lists (five,
		// seven with security groups) and, with security groups, one ports list per LB.
		limit := s.LBs + 5
		if sg != "" {
			limit = 2*s.LBs + 7
		}
		if s.ResyncReads > limit {
			t.Errorf("%q: a resync of %d LBs read %d times, want at most %d: %v", sg, s.LBs, s.ResyncReads, limit, s.ResyncByOp)
		}
		t.Logf("%q: restart %d reads for 4 LBs %v; resync %d %v", sg, s.RestartReads, s.RestartByOp, s.ResyncReads, s.ResyncByOp)
	}
}

// 100 load balancers made by the upstream CCM are taken over with no create, no delete of
// anything that serves, the same addresses, and upstream's groups gone (with security
// groups); the next sync writes nothing. Counted at the fake; the figures are logged.
func TestTakeoverOfUpstreamLoadBalancers(t *testing.T) {
	for _, sg := range []bool{false, true} {
		tk, err := measureTakeover(t.Context(), 100, sg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("security groups %v: %s; %v", sg, tk, tk.ByOp)
		if tk.Creates != 0 || tk.ServingDeletes != 0 || tk.ChangedAddrs != 0 || tk.UpstreamGroupsLeft != 0 {
			t.Errorf("security groups %v: %s", sg, tk)
		}
		if tk.NextWrites != 0 {
			t.Errorf("security groups %v: the sync after the takeover made %d writes", sg, tk.NextWrites)
		}
		if sg && tk.UpstreamGroupsSeeded != 100 {
			t.Errorf("seeded %d upstream groups, want 100", tk.UpstreamGroupsSeeded)
		}
	}
}
