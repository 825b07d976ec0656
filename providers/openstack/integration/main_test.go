// Package integration runs the real ccm-openstack binary against a real kube-apiserver and etcd,
// as the ServiceAccount of deploy/openstack, with the wire-level fake OpenStack in-process.
// CCM_BIN_DIR (with ccm-openstack) and CCM_TESTBIN must be set (make integration does).
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

var (
	env   *testenv.Env
	cloud *fake.Cloud
	ccm   *testenv.CCM
)

// Provisioning delay of the fake: every new load balancer is PENDING_CREATE this long.
const provisionDelay = 3 * time.Second

// deletionWindow is the ccm's --node-deletion-confirmation.
const deletionWindow = 2 * time.Second

// password is the fake's; it must never appear in the ccm's log.
const password = "s3cr3t-Pa55w0rd;#x"

func TestMain(m *testing.M) {
	code := run(m)
	if envDir == "" {
		os.Exit(code) // no control plane was started (skipped): nothing to look for
	}
	if left := testenv.LeftoversOf(envDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left behind: %v\n", left)
		code = 1
	} else {
		fmt.Println("no etcd, kube-apiserver or ccm process of this run left behind")
	}
	os.Exit(code)
}

// envDir is the control plane's folder; every process this run starts names it in its
// arguments, which tells them apart from other runs' on a shared machine.
var envDir string

func run(m *testing.M) int {
	bin := os.Getenv("CCM_BIN_DIR")
	if bin == "" {
		fmt.Fprintln(os.Stderr, "CCM_BIN_DIR is not set: run with `make integration`, or CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go test ./providers/openstack/integration")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{Overlay: "openstack"}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	envDir = env.Dir
	defer env.Stop()
	cloud = fake.New(fake.Options{Password: password, ProvisionDelay: provisionDelay, UpdateDelay: 200 * time.Millisecond})
	if _, err := cloud.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the fake OpenStack:", err)
		return 1
	}
	defer cloud.Close()
	// The router is shared: an operator's route in the cluster CIDR is there before ccm starts.
	routerID = cloud.AddRouter("k8s-router")
	cloud.SetRouterRoutes(routerID, []fake.RouterRoute{operatorRoute})
	conf := filepath.Join(env.Dir, "cloud.conf")
	// TestLoadBalancerLifecycle brings a floating IP allocated by hand: the operator allows it.
	if err := os.WriteFile(conf, []byte(cloud.CloudConfig("floating-network-id = "+fake.PublicNetworkID, "create-monitor = true", "pending-retry = 500ms",
		"allowed-resource-ids = "+userFIP, "\n[Route]\nrouter-id = "+routerID)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// One worker for Services: load balancers provisioning in parallel must not need more.
	ccm, err = env.StartCCM(ctx, testenv.CCMOptions{Name: "ccm-openstack", Binary: filepath.Join(bin, "ccm-openstack"),
		Provider: "openstack", CloudConfig: conf,
		Args: []string{"--v=10", "--concurrent-service-syncs=1", "--node-deletion-confirmation=" + deletionWindow.String(),
			"--configure-cloud-routes=true", "--cluster-cidr=10.244.0.0/16", "--route-reconciliation-period=1s"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ccm:", err)
		return 1
	}
	code := m.Run()
	ccm.Stop(10 * time.Second)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "ccm log (last 60 lines):\n%s\n", ccm.Tail(60))
	}
	fmt.Printf("fake OpenStack calls: %s\n", cloud.CallSummary())
	if log := ccm.Log(); strings.Contains(log, password) || strings.Contains(log, "s3cr3t") {
		fmt.Fprintln(os.Stderr, "FAIL: the ccm log at --v=10 contains the OpenStack password")
		code = 1
	}
	return code
}
