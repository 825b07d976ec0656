package vsphere

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestInstanceType(t *testing.T) {
	for _, tc := range []struct {
		cpus    int32
		memMB   int32
		guestID string
		want    string
	}{
		{2, 4096, "ubuntu64Guest", "vsphere-vm.cpu-2.mem-4gb.os-ubuntu"},
		{1, 1536, "ubuntu64Guest", "vsphere-vm.cpu-1.mem-1gb.os-ubuntu"}, // rounded down, as upstream
		{1, 1023, "vmwarePhoton64Guest", "vsphere-vm.cpu-1.mem-0gb.os-photon"},
		{8, 16383, "windows9Server64Guest", "vsphere-vm.cpu-8.mem-15gb.os-win10server"},
		{4, 8192, "rhel9_64Guest", "vsphere-vm.cpu-4.mem-8gb.os-unknown"}, // not in upstream's table
		{1, 2048, "", "vsphere-vm.cpu-1.mem-2gb.os-unknown"},
		{2, 2048, "eComStation2Guest", "vsphere-vm.cpu-2.mem-2gb.os-eComStation2"},
		{2, 2048, "UBUNTU64GUEST", "vsphere-vm.cpu-2.mem-2gb.os-unknown"}, // guest IDs are case-sensitive
	} {
		got := instanceType(&vm{cpus: tc.cpus, memMB: tc.memMB, guestID: tc.guestID})
		if got != tc.want {
			t.Errorf("instanceType(cpu %d, %d MB, %q) = %q, want %q", tc.cpus, tc.memMB, tc.guestID, got, tc.want)
		}
	}
}

// TestGuestOSUpstreamTable checks every guest ID of the upstream CCM's table (kept as data in
// testdata) and that the table here has no pair upstream lacks.
func TestGuestOSUpstreamTable(t *testing.T) {
	f, err := os.Open("testdata/upstream-guest-os.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 2 {
			t.Fatalf("testdata line %q: want guest ID and name", line)
		}
		want[fs[0]] = fs[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) < 140 {
		t.Fatalf("testdata has %d guest IDs, want the whole upstream table", len(want))
	}
	for id, name := range want {
		if got := guestOSName(id); got != name {
			t.Errorf("guestOSName(%q) = %q, want %q", id, got, name)
		}
		typ := instanceType(&vm{cpus: 128, memMB: 1 << 30, guestID: id})
		if errs := validation.IsValidLabelValue(typ); len(errs) > 0 {
			t.Errorf("instance type %q is not a label value: %v", typ, errs)
		}
	}
	seen := map[string]bool{}
	for _, g := range guestOSNames {
		for _, id := range g.ids {
			if seen[id] {
				t.Errorf("guest ID %q listed twice", id)
			}
			seen[id] = true
			if want[id] != g.name {
				t.Errorf("guest ID %q: %q here, %q upstream", id, g.name, want[id])
			}
		}
	}
}
