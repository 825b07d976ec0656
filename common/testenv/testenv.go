// Package testenv runs a real control plane for tests and the demo: etcd and kube-apiserver
// built by build/testbin.sh, on free loopback ports, under a temporary folder, stopped (and
// killed if need be) when the Env stops or the parent process dies.
package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Env is a running etcd + kube-apiserver.
type Env struct {
	Dir            string // temporary folder holding data, keys and kubeconfigs
	Host           string // https://127.0.0.1:PORT
	AdminToken     string
	Config         *rest.Config // admin (system:masters)
	Client         kubernetes.Interface
	KubeconfigPath string // admin kubeconfig
	Bin            string // folder with kube-apiserver, etcd, kubectl

	procs []*Process
}

// Options tune Start.
type Options struct {
	// Bin is the folder with the binaries; default $CCM_TESTBIN, else bin/testbin at the
	// repository root found from the working directory.
	Bin string
	// Dir is where to keep state and the processes' logs; default a new temporary folder,
	// removed by Stop.
	Dir string
	// Overlay, when set, is applied (kubectl apply -k deploy/OVERLAY at the repository root)
	// once the API server is ready: a provider's namespace, RBAC and ServiceAccount.
	Overlay string
	// EtcdQuotaBytes, when set, is etcd's --quota-backend-bytes (its default is 2 GiB): a bench
	// that writes large objects many times within the API server's 5-minute compaction
	// interval can fill the default.
	EtcdQuotaBytes int64
}

// Start starts etcd and kube-apiserver and waits until the API server is ready.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	bin, err := findBin(opts.Bin)
	if err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ccm-testenv-"); err != nil {
			return nil, err
		}
	}
	env := &Env{Dir: dir, Bin: bin}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcdArgs := []string{"--name=default", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--unsafe-no-fsync=true", "--log-level=warn"}
	if opts.EtcdQuotaBytes > 0 {
		etcdArgs = append(etcdArgs, "--quota-backend-bytes="+strconv.FormatInt(opts.EtcdQuotaBytes, 10))
	}
	etcd, err := StartProcess(dir, "etcd", nil, filepath.Join(bin, "etcd"), etcdArgs...)
	if err != nil {
		return nil, err
	}
	env.procs = append(env.procs, etcd)

	saKey, err := writeKey(filepath.Join(dir, "sa.key"))
	if err != nil {
		return nil, err
	}
	// A client CA makes the apiserver publish kube-system/extension-apiserver-authentication,
	// which delegated authentication (the ccm's secure port) reads.
	clientCA, err := writeCA(filepath.Join(dir, "client-ca.crt"))
	if err != nil {
		return nil, err
	}
	env.AdminToken = randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(env.AdminToken+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	env.Host = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	api, err := StartProcess(dir, "kube-apiserver", nil, filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]), "--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+tokens, "--client-ca-file="+clientCA,
		"--requestheader-client-ca-file="+clientCA, "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group", "--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--v=0")
	if err != nil {
		return nil, err
	}
	env.procs = append(env.procs, api)

	env.Config = &rest.Config{Host: env.Host, BearerToken: env.AdminToken, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if env.Client, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if err := env.waitReady(ctx, api, etcd); err != nil {
		return nil, err
	}
	env.KubeconfigPath = filepath.Join(dir, "admin.kubeconfig")
	if err := WriteKubeconfig(env.KubeconfigPath, env.Host, env.AdminToken); err != nil {
		return nil, err
	}
	if opts.Overlay != "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", opts.Overlay)); err != nil {
			return nil, fmt.Errorf("applying deploy/%s: %w", opts.Overlay, err)
		}
	}
	return env, nil
}

// waitReady polls /readyz until it answers ok, a process dies or ctx ends.
func (e *Env) waitReady(ctx context.Context, procs ...*Process) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	for {
		for _, p := range procs {
			if p.Exited() {
				return fmt.Errorf("%s exited while starting; its log %s ends with:\n%s", p.Name, p.LogPath, p.Tail(20))
			}
		}
		body, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %v (last: %v); log: %s", ctx.Err(), last, procs[0].LogPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops every process (SIGTERM, then SIGKILL) and removes the folder unless keep is set
// in CCM_TESTENV_KEEP.
func (e *Env) Stop() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].Stop(10 * time.Second)
	}
	e.procs = nil
	if os.Getenv("CCM_TESTENV_KEEP") == "" && e.Dir != "" {
		os.RemoveAll(e.Dir)
	}
}

func findBin(bin string) (string, error) {
	if bin == "" {
		bin = os.Getenv("CCM_TESTBIN")
	}
	if bin == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, "bin", "testbin")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make testbin` first (builds kube-apiserver and etcd from Go modules)", b, bin)
		}
	}
	return bin, nil
}

// RepoRoot is the folder holding go.work, found upwards from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory; set CCM_TESTBIN")
		}
		dir = parent
	}
}

// freePorts reserves n distinct loopback ports by listening, then releases them.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	p, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func writeKey(path string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func writeCA(path string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ccm-testenv-client-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// InsecureHTTPClient talks TLS to the test servers, which use self-signed certificates.
var InsecureHTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: insecureTLS(),
}}
