// Package integration runs the real ccm-aws binary against a real kube-apiserver and etcd, as
// the ServiceAccount of deploy/aws, with the SDK's endpoints pointed at the in-process EC2/ELB
// fake. Run it with CCM_BIN_DIR (holding ccm-aws) and CCM_TESTBIN set (`make integration`).
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
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const (
	cluster = "testcluster" // = --cluster-name of testenv.StartCCM
	secret  = "it-secret-Rk7mQ2vX9p"
)

var (
	env  *testenv.Env
	fake *fakeaws.Server
	ccm  *testenv.CCM
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	binDir := os.Getenv("CCM_BIN_DIR")
	if binDir == "" {
		fmt.Fprintln(os.Stderr, "CCM_BIN_DIR is not set: run these tests with `make integration` (it builds bin/ccm-aws and the control plane)")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if env, err = testenv.Start(ctx, testenv.Options{Overlay: "aws"}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer env.Stop()
	fake = fakeaws.New("us-east-1", cluster)
	fake.AddCredentials("AKIDINTEGRATION", secret)
	fake.SetNLBProvisioning(2 * time.Second) // NLBs take minutes in AWS: the ccm must poll, not block
	url, err := fake.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer fake.Close()
	creds := filepath.Join(env.Dir, "aws-credentials")
	conf := filepath.Join(env.Dir, "aws-cloud.conf")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDINTEGRATION\naws_secret_access_key = "+secret+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`[Global]
Region = us-east-1
KubernetesClusterID = %s
CredentialsFile = %s
InstanceCacheTTL = 1s

[ServiceOverride "ec2"]
Service = ec2
Region = us-east-1
URL = %s
SigningRegion = us-east-1

[ServiceOverride "elb"]
Service = elasticloadbalancing
Region = us-east-1
URL = %s
SigningRegion = us-east-1
`, cluster, creds, url, url)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// One ccm for the package, at the highest verbosity, so the log check below sees everything.
	ccm, err = env.StartCCM(ctx, testenv.CCMOptions{Binary: filepath.Join(binDir, "ccm-aws"), Provider: "aws", CloudConfig: conf,
		Args: []string{"--v=10", "--node-deletion-confirmation=3s",
			"--configure-cloud-routes=true", "--cluster-cidr=100.64.0.0/16", "--route-reconciliation-period=1s"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ccm-aws:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		// At --v=10 the tail is mostly HTTP traces: show the lines about the cloud instead.
		var lines []string
		for _, l := range strings.Split(ccm.Log(), "\n") {
			if strings.Contains(l, "aws: ") || strings.Contains(l, "ELB") || strings.Contains(l, "rror syncing") || strings.Contains(l, "AWS") {
				lines = append(lines, l)
			}
		}
		fmt.Fprintln(os.Stderr, "ccm log, lines about aws:\n"+strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	dir := env.Dir
	env.Stop()
	if left := testenv.LeftoversOf(dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes of this run left behind: %v\n", left)
		return 1
	}
	fmt.Println("no etcd, kube-apiserver or ccm process of this run left behind")
	return code
}
