package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// StartSimulator builds providers/<p>/cmd/<p>-sim into root/bin and starts it: it serves the
// provider's simulated cloud on loopback with one machine per node name and writes a
// cloud-config for the ccm once it serves, whose path is returned with the process. It stops
// with the Env, or before with Process.Stop.
func (e *Env) StartSimulator(ctx context.Context, root, provider string, nodes []string) (string, *Process, error) {
	bin := filepath.Join(root, "bin", provider+"-sim")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./providers/"+provider+"/cmd/"+provider+"-sim")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the %s simulator: %w\n%s", provider, err, out)
	}
	cfg := filepath.Join(e.Dir, provider+".conf")
	p, err := e.StartProcess(provider+"-sim", bin, "--nodes="+strings.Join(nodes, ","), "--cloud-config="+cfg)
	if err != nil {
		return "", nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(cfg); err == nil {
			return cfg, p, nil
		}
		if p.Exited() || time.Now().After(deadline) {
			return "", nil, fmt.Errorf("the %s simulator wrote no cloud-config; its log:\n%s", provider, p.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
