package benchscenario

import (
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/benchreport"
)

func row(t *testing.T, rs []benchreport.Row, key string) benchreport.Row {
	t.Helper()
	for _, r := range rs {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no row %s", key)
	return benchreport.Row{}
}

func met(r benchreport.Row) string {
	switch {
	case r.Met == nil:
		return "none"
	case *r.Met:
		return "met"
	}
	return "not met"
}

func TestRowsTargets(t *testing.T) {
	f := &Figures{Nodes: 2, NodeTimes: []float64{1, 3}, NodeCalls: 8, Services: 100, Delay: 10 * time.Second,
		RestartLBs: 100, RestartReads: 50, NodeAddedLBs: 100, NodeAddedUpdated: 100, NodeAddedWrites: 100}
	for i := range 100 {
		f.ServiceTimes = append(f.ServiceTimes, float64(i)/5) // last at 19.8s: 1.98×D
	}
	rs := Rows(f)
	for key, want := range map[string]string{
		benchreport.KeyNodeInitNodes: "met", benchreport.KeyLBServices: "met", benchreport.KeyLBAllInD: "met",
		benchreport.KeyRestartWrites: "met", benchreport.KeyNodeAddedLBs: "met", benchreport.KeyNodeAddedWrites: "met",
		benchreport.KeyLBP99: "none",
	} {
		if got := met(row(t, rs, key)); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	if v := row(t, rs, benchreport.KeyNodeInitCallsPerNode).Value; v != 4 {
		t.Errorf("calls per Node: %v, want 4", v)
	}

	// Past 2×D, a write on restart, more writes than LBs, an LB not updated: all reported.
	f.ServiceTimes[99] = 20.5
	f.RestartWrites, f.NodeAddedWrites, f.NodeAddedUpdated = 1, 101, 99
	rs = Rows(f)
	for _, key := range []string{benchreport.KeyLBAllInD, benchreport.KeyRestartWrites, benchreport.KeyNodeAddedWrites, benchreport.KeyNodeAddedLBs} {
		if got := met(row(t, rs, key)); got != "not met" {
			t.Errorf("%s: %s, want not met", key, got)
		}
	}

	// The 2×D target is the for 100 Services; other sizes report the figure only, and
	// without a delay there is no such row.
	f.Services = 1000
	if got := met(row(t, Rows(f), benchreport.KeyLBAllInD)); got != "none" {
		t.Errorf("1000 Services: %s, want no target", got)
	}
	f.Delay = 0
	for _, r := range Rows(f) {
		if r.Key == benchreport.KeyLBAllInD {
			t.Error("a row in units of D without a delay")
		}
	}
	if err := (&benchreport.Report{Schema: benchreport.SchemaVersion, Provider: "x", Rows: Rows(f), Latencies: Latencies(f)}).Validate(); err != nil {
		t.Error(err)
	}
}
