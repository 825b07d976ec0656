package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Kubectl runs the kubectl built with the control plane against this Env as admin.
func (e *Env) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.Bin, "kubectl"), append([]string{"--kubeconfig=" + e.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}

// ServiceAccountKubeconfig writes a kubeconfig at path that authenticates as the
// ServiceAccount namespace/name with a fresh token (one hour), and returns the token.
func (e *Env) ServiceAccountKubeconfig(ctx context.Context, namespace, name, path string) (string, error) {
	tr, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, WriteKubeconfig(path, e.Host, tr.Status.Token)
}

// CCMOptions say how to run a ccm process against the Env.
type CCMOptions struct {
	Name        string // log file and leader identity; default "ccm"
	Binary      string // path of the ccm binary; default $CCM_BINARY
	Provider    string
	CloudConfig string
	// Kubeconfig to run as; default a ServiceAccount kubeconfig for
	// kube-system/cloud-controller-manager (apply deploy/base first).
	Kubeconfig string
	Args       []string // more flags, appended last (so they win)
	Env        []string // more environment variables (KEY=value)
}

// CCM is a running ccm process.
type CCM struct {
	*Process
	Port  int    // secure port (/healthz, /metrics)
	Token string // the ServiceAccount token it runs with, to call its endpoints
}

// StartCCM starts ccm as the ServiceAccount of deploy/base with leader election on and the
// timings shortened for tests (node monitor 1s, lease 4s).
func (e *Env) StartCCM(ctx context.Context, o CCMOptions) (*CCM, error) {
	if o.Name == "" {
		o.Name = "ccm"
	}
	if o.Binary == "" {
		o.Binary = os.Getenv("CCM_BINARY")
	}
	if o.Binary == "" {
		return nil, fmt.Errorf("no ccm binary: set CCM_BINARY or CCMOptions.Binary")
	}
	c := &CCM{}
	if o.Kubeconfig == "" {
		o.Kubeconfig = filepath.Join(e.Dir, o.Name+".kubeconfig")
		tok, err := e.ServiceAccountKubeconfig(ctx, "kube-system", "cloud-controller-manager", o.Kubeconfig)
		if err != nil {
			return nil, err
		}
		c.Token = tok
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c.Port = port
	args := []string{
		"--cloud-provider=" + o.Provider,
		"--kubeconfig=" + o.Kubeconfig,
		"--authentication-kubeconfig=" + o.Kubeconfig,
		"--authorization-kubeconfig=" + o.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(e.Dir, o.Name+"-certs"),
		"--leader-elect=true",
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		"--configure-cloud-routes=false",
		"--cluster-name=testcluster",
		"--node-monitor-period=1s",
		"--v=2",
	}
	if o.CloudConfig != "" {
		args = append(args, "--cloud-config="+o.CloudConfig)
	}
	p, err := StartProcess(e.Dir, o.Name, o.Env, o.Binary, append(args, o.Args...)...)
	if err != nil {
		return nil, err
	}
	c.Process = p
	e.procs = append(e.procs, p)
	return c, nil
}

// StartProcess starts another program (a cloud simulator, say) in the Env's folder; it is
// stopped with the Env, before the control plane.
func (e *Env) StartProcess(name, binary string, args ...string) (*Process, error) {
	p, err := StartProcess(e.Dir, name, nil, binary, args...)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, p)
	return p, nil
}
