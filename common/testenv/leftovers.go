package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Leftovers lists running processes whose executable is one of paths (Linux /proc), so a test
// run can prove it left no etcd, kube-apiserver or ccm behind.
func Leftovers(paths ...string) []string {
	want := map[string]bool{}
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			want[abs] = true
		}
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && want[exe] {
			out = append(out, fmt.Sprintf("pid %d (%s)", pid, exe))
		}
	}
	return out
}

// Binaries returns the paths of the control-plane binaries this Env runs.
func (e *Env) Binaries() []string {
	return []string{filepath.Join(e.Bin, "etcd"), filepath.Join(e.Bin, "kube-apiserver")}
}
