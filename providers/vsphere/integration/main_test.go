// Package integration runs the real ccm binary built with -tags vsphere against a real
// kube-apiserver and etcd, as the ServiceAccount of deploy/vsphere, and govmomi's vCenter
// simulator (vcsim) in this process. `make integration` sets CCM_BIN_DIR and CCM_TESTBIN.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

const (
	user     = "k8s-ccm@vsphere.local"
	password = "Int3gration;#Secret"
	// secretName is the credentials Secret deploy/vsphere's RBAC allows.
	secretName = "vsphere-cloud-credentials"
)

var (
	env    *testenv.Env
	vc     *sim.Sim
	binary string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir := os.Getenv("CCM_BIN_DIR")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "CCM_BIN_DIR is not set: run these tests with `make integration` (it builds ccm-vsphere and the control plane)")
		return 1
	}
	binary = filepath.Join(dir, "ccm-vsphere")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{Overlay: "vsphere"}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	vc, err = sim.Start(ctx, sim.Options{User: user, Password: password, Datacenters: 2, ZoneCategory: "k8s-zone", RegionCategory: "k8s-region"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "vcsim:", err)
		return 1
	}
	defer vc.Close()
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: "kube-system"},
		StringData: map[string]string{vc.Host() + ".username": user, vc.Host() + ".password": password}}
	if _, err := env.Client.CoreV1().Secrets("kube-system").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "credentials Secret:", err)
		return 1
	}
	code := m.Run()
	envDir := env.Dir
	env.Stop()
	if left := testenv.LeftoversOf(envDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left behind: %v\n", left)
		return 1
	}
	fmt.Println("no etcd, kube-apiserver or ccm process of this run left behind")
	return code
}
