// Package integration runs the real ccm binary against a real kube-apiserver and etcd, as the
// ServiceAccount of deploy/dummy (deploy/base plus the dummy's own RBAC). `make integration`
// builds both; CCM_BINARY and CCM_TESTBIN
// point at them.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("CCM_BINARY") == "" {
		fmt.Fprintln(os.Stderr, "CCM_BINARY is not set: run these tests with `make integration` (it builds ccm and the control plane)")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var err error
	env, err = testenv.Start(ctx, testenv.Options{Overlay: "dummy"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	fmt.Printf("control plane ready with deploy/dummy in %v at %s (state in %s)\n", time.Since(start).Round(time.Millisecond), env.Host, env.Dir)
	code := m.Run()
	dir := env.Dir
	env.Stop()
	if left := testenv.LeftoversOf(dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left behind: %v\n", left)
		return 1
	}
	fmt.Println("no etcd, kube-apiserver or ccm process left behind")
	return code
}
