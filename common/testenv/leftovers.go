package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LeftoversOf lists running processes whose command line names dir: every process an Env
// starts (etcd, kube-apiserver, ccm, simulators) gets a path in the Env's folder, so after
// Stop this proves the run left nothing behind, while other runs on the same machine (with
// their own folders) do not count.
func LeftoversOf(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), dir) {
			continue
		}
		if args := strings.Split(string(cmd), "\x00"); len(args) > 0 {
			out = append(out, fmt.Sprintf("pid %d (%s)", pid, args[0]))
		}
	}
	return out
}
