package main

import (
	"strings"
	"testing"
)

// 100 Services served before ccm (upstream's vSphere CCM has no load balancer without NSX-T;
// MetalLB or kube-vip gave the addresses) are taken over with no new address, no record
// deleted and every address kept; the next sync writes nothing. Counted at the simulator.
func TestTakeoverOfServicesServedBeforeCCM(t *testing.T) {
	tk, err := measureTakeover(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; %v", tk, tk.ByOp)
	if tk.Creates != 0 || tk.ServingDeletes != 0 || tk.ChangedAddrs != 0 {
		t.Errorf("%s", tk)
	}
	if tk.Records != 100 {
		t.Errorf("%d records written, want one per Service (100)", tk.Records)
	}
	if tk.NextWrites != 0 {
		t.Errorf("the sync after the takeover made %d writes", tk.NextWrites)
	}
}

func TestRecordIPs(t *testing.T) {
	for desc, want := range map[string]string{
		`{"c":"bench","s":"bench/a","u":"x","ips":["10.128.100.1","fd00::1"],"p":["TCP/80"]}`: "10.128.100.1 fd00::1",
		`{"c":"bench","ips":[]}`: "",
		`made by hand`:           "",
	} {
		if got := strings.Join(recordIPs(desc), " "); got != want {
			t.Errorf("recordIPs(%q) = %q, want %q", desc, got, want)
		}
	}
}
