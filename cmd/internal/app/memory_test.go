package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		file, body string
		want       int64
	}{
		"v2 limit":     {"memory.max", "268435456\n", 268435456},
		"v2 unlimited": {"memory.max", "max\n", 0},
		"v1 limit":     {"memory/memory.limit_in_bytes", "134217728\n", 134217728},
		"v1 unlimited": {"memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		"none":         {"other", "1", 0},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, tc.file), tc.body)
			got, err := cgroupMemoryLimit(root)
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "memory.max"), "lots")
	if _, err := cgroupMemoryLimit(root); err == nil || !strings.Contains(err.Error(), "memory.max") {
		t.Errorf("a garbled file should be an error naming it, got %v", err)
	}
}

// The flag sets the runtime's soft limit: auto from the cgroup, a quantity as given, off as
// none; a bad value is an error naming the flag.
func TestMemoryLimitFlag(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "memory.max"), "1000000000\n")
	m := &memoryLimit{value: "auto", cgroup: root}
	m.apply()
	if got := debug.SetMemoryLimit(-1); got != 900000000 {
		t.Errorf("auto: limit %d, want 90%% of 1e9", got)
	}
	if err := m.Set("200Mi"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Errorf("200Mi: limit %d", got)
	}
	if err := m.Set("off"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("off: limit %d", got)
	}
	for _, bad := range []string{"lots", "-5Mi", "0Mi", ""} {
		if err := m.Set(bad); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
			t.Errorf("%q: want an error naming --memory-limit, got %v", bad, err)
		}
	}
	if m.String() != "off" {
		t.Errorf("a rejected value must not replace the last good one, have %q", m.String())
	}

	// GOMEMLIMIT wins: the runtime applied it at start (simulated here), the flag leaves it.
	t.Setenv("GOMEMLIMIT", "300MiB")
	debug.SetMemoryLimit(300 << 20)
	if err := m.Set("100Mi"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 || memoryLimitInForce.source != "GOMEMLIMIT=300MiB" {
		t.Errorf("GOMEMLIMIT should win: limit %d from %q", got, memoryLimitInForce.source)
	}
}

func TestMemoryLimitFlagRegistered(t *testing.T) {
	fs := pflag.NewFlagSet("ccm", pflag.ContinueOnError)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	addMemoryLimitFlag(fs)
	if err := fs.Parse([]string{"--memory-limit=bogus"}); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
		t.Errorf("want a parse error naming the flag, got %v", err)
	}
	if f := fs.Lookup("memory-limit"); f == nil || f.DefValue != "auto" {
		t.Errorf("flag missing or default not auto: %+v", f)
	}
}

// ccm's collector target is 50 unless GOGC says otherwise.
func TestGCPercentDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	applyGCPercent()
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GOGC unset: collector target %d, want %d", got, defaultGCPercent)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // as the runtime does at start when GOGC is set
	applyGCPercent()
	if got := debug.SetGCPercent(100); got != 80 || gcPercentInForce.source != "GOGC=80" {
		t.Errorf("GOGC=80: collector target %d from %q, want 80 from GOGC=80", got, gcPercentInForce.source)
	}
}
