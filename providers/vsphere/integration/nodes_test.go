package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

const shutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// config is a vsphere.conf for the simulator with credentials from the Secret.
func config() string {
	return fmt.Sprintf(`[Global]
secret-name = %s
secret-namespace = kube-system
insecure-flag = 1
ip-family = "ipv4,ipv6"

[VirtualCenter %q]
port = %s
datacenters = "DC0,DC1"

[Labels]
zone = k8s-zone
region = k8s-region

[Nodes]
internal-network-subnet-cidr = "10.20.0.0/16,fd00:20::/64"
external-network-subnet-cidr = "192.168.10.0/24"

[Pool "vips"]
cidr = 192.0.2.0/28
`, secretName, vc.Host(), vc.Port())
}

func startCCM(t *testing.T, name, cloudConfig string, args ...string) *testenv.CCM {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vsphere.conf")
	if err := os.WriteFile(path, []byte(cloudConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := env.StartCCM(context.Background(), testenv.CCMOptions{Name: name, Binary: binary, Provider: "vsphere", CloudConfig: path, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s log (last 60 lines):\n%s", name, c.Tail(60))
		}
	})
	return c
}

var eventually = testenv.Eventually

func node(name string) (*v1.Node, error) {
	return env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

func newNode(t *testing.T, name string) {
	t.Helper()
	if err := testenv.RegisterNode(context.Background(), env.Client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// initialised waits until the cloud node controller has finished with the Node.
func initialised(t *testing.T, name string) *v1.Node {
	t.Helper()
	var nd *v1.Node
	eventually(t, 30*time.Second, name+" initialised", func() (bool, error) {
		var err error
		nd, err = node(name)
		return err == nil && testenv.Initialised(nd), err
	})
	return nd
}

func addVM(t *testing.T, name string, dc int, nics ...sim.NIC) *sim.VM {
	t.Helper()
	v, err := vc.AddVM(context.Background(), name, dc, 0, nics)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// One ccm at -v=10 through a Node's life: initialisation with the right addresses and labels
// on multi-NIC VMs in two datacenters, a vCenter session that expires (one re-login), a VM
// powered off (shutdown taint), a VM destroyed while vCenter fails (no deletion until vCenter
// answers again, then deletion), and no password anywhere in the log.
func TestNodeLifecycle(t *testing.T) {
	const window = 3 * time.Second
	multi := addVM(t, "it-multi", 0,
		sim.NIC{Network: "mgmt", IPs: []string{"192.168.10.5", "fe80::5"}},
		sim.NIC{Network: "k8s", IPs: []string{"172.16.0.5", "10.20.0.5", "fd00:20::5"}})
	addVM(t, "it-plain", 1, sim.NIC{Network: "VM Network", IPs: []string{"10.20.1.7"}})
	off := addVM(t, "it-off", 0, sim.NIC{Network: "VM Network", IPs: []string{"10.20.2.8"}})
	gone := addVM(t, "it-gone", 1, sim.NIC{Network: "VM Network", IPs: []string{"10.20.3.9"}})

	ccm := startCCM(t, "ccm-life", config(), "--v=10", "--node-deletion-confirmation="+window.String())
	for _, n := range []string{"it-multi", "it-plain", "it-off", "it-gone"} {
		newNode(t, n)
	}
	nd := initialised(t, "it-multi")
	if nd.Spec.ProviderID != "vsphere://"+multi.UUID {
		t.Errorf("providerID %q, want vsphere://%s", nd.Spec.ProviderID, multi.UUID)
	}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.20.0.5"}, {Type: v1.NodeInternalIP, Address: "fd00:20::5"},
		{Type: v1.NodeExternalIP, Address: "192.168.10.5"}, {Type: v1.NodeHostName, Address: "it-multi"}}
	if !slices.Equal(nd.Status.Addresses, want) {
		t.Errorf("addresses %v, want %v", nd.Status.Addresses, want)
	}
	for k, v := range map[string]string{"topology.kubernetes.io/zone": "zone-0-0", "topology.kubernetes.io/region": "region-0",
		"node.kubernetes.io/instance-type": "vsphere-vm.cpu-2.mem-4gb.os-ubuntu"} {
		if nd.Labels[k] != v {
			t.Errorf("it-multi label %s = %q, want %q", k, nd.Labels[k], v)
		}
	}
	if p := initialised(t, "it-plain"); p.Labels["topology.kubernetes.io/zone"] != "zone-1-0" || p.Labels["topology.kubernetes.io/region"] != "region-1" {
		t.Errorf("it-plain labels %v, want zone-1-0 / region-1", p.Labels)
	}
	initialised(t, "it-off")
	initialised(t, "it-gone")

	// The session expires: the next look-up logs in once more, not once per call.
	tok, err := env.MetricsReaderToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	logins := func() float64 {
		v, err := ccm.Metric(tok, `ccm_cloud_api_requests_total{operation="Login",provider="vsphere",result="ok"`)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if n := logins(); n != 1 {
		t.Errorf("%v logins before the session expired, want 1", n)
	}
	if n, err := vc.ExpireSessions(context.Background()); err != nil || n == 0 {
		t.Fatalf("expiring sessions: %d, %v", n, err)
	}
	addVM(t, "it-late", 0, sim.NIC{Network: "VM Network", IPs: []string{"10.20.4.1"}})
	newNode(t, "it-late")
	initialised(t, "it-late")
	if n := logins(); n != 2 {
		t.Errorf("%v logins after one session expiry, want 2", n)
	}

	// Powered off and NotReady: shutdown taint, Node kept.
	if err := vc.PowerOff(context.Background(), off.Ref); err != nil {
		t.Fatal(err)
	}
	if err := testenv.SetNodeReady(context.Background(), env.Client, "it-off", v1.ConditionFalse); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "shutdown taint on it-off", func() (bool, error) {
		n, err := node("it-off")
		return err == nil && testenv.HasTaint(n, shutdownTaint), err
	})

	// vCenter fails while a VM is destroyed: the Node stays for well over the window.
	restore := vc.FailReads()
	if err := vc.Destroy(context.Background(), gone.Ref); err != nil {
		restore()
		t.Fatal(err)
	}
	if err := testenv.SetNodeReady(context.Background(), env.Client, "it-gone", v1.ConditionUnknown); err != nil {
		restore()
		t.Fatal(err)
	}
	time.Sleep(3 * window)
	if _, err := node("it-gone"); err != nil {
		restore()
		t.Fatalf("Node deleted while vCenter returned faults: %v", err)
	}
	restore()
	eventually(t, 60*time.Second, "it-gone deleted once vCenter answers", func() (bool, error) {
		_, err := node("it-gone")
		return apierrors.IsNotFound(err), err
	})
	if _, err := node("it-off"); err != nil {
		t.Errorf("the powered-off VM's Node was deleted: %v", err)
	}

	log := ccm.Log()
	if !strings.Contains(log, "Read vCenter credentials from Secret") {
		t.Errorf("the log does not show the Secret was read; the password check below would prove nothing")
	}
	for _, secret := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), strings.TrimSuffix(base64.StdEncoding.EncodeToString([]byte(password)), "=")} {
		if strings.Contains(log, secret) {
			t.Errorf("the ccm log at -v=10 contains the vCenter password (as %q)", secret)
		}
	}
}

// Bad config: each cause is named once in the log, and the Node is neither initialised nor
// deleted.
func TestBadCredentialsAndUnreachableServer(t *testing.T) {
	closed, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[Global]
insecure-flag = 1
user = %q
password = "wrong-%s"

[VirtualCenter %q]
port = %s

[VirtualCenter "localhost"]
port = %d
`, user, password, vc.Host(), vc.Port(), closed)
	ccm := startCCM(t, "ccm-bad", cfg, "--v=10")
	addVM(t, "it-bad", 0, sim.NIC{Network: "VM Network", IPs: []string{"10.20.5.1"}})
	newNode(t, "it-bad")
	eventually(t, 30*time.Second, "both login errors in the log", func() (bool, error) {
		l := ccm.Log()
		return strings.Contains(l, "wrong user name or password") && strings.Contains(l, "cannot connect to localhost"), nil
	})
	time.Sleep(12 * time.Second) // past the login back-off: further failures must not repeat the line
	log := ccm.Log()
	for _, cause := range []string{"wrong user name or password", "cannot connect to localhost"} {
		n := 0
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "Cannot log in to vCenter") && strings.Contains(l, cause) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q logged by the session %d times, want once", cause, n)
		}
	}
	if strings.Contains(log, "wrong-"+password) {
		t.Errorf("the ccm log contains the (wrong) password")
	}
	if n, err := node("it-bad"); err != nil || n.Spec.ProviderID != "" {
		t.Errorf("it-bad: %v, providerID %q; want kept and not initialised", err, n.Spec.ProviderID)
	}
}

// A misspelled key stops the ccm at start with the key and line, before it touches anything.
func TestMisspelledKeyStopsTheCCM(t *testing.T) {
	ccm := startCCM(t, "ccm-typo", strings.Replace(config(), "insecure-flag = 1", "insecure-flg = 1", 1))
	select {
	case <-ccm.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the ccm kept running with a misspelled key")
	}
	if log := ccm.Log(); !strings.Contains(log, "line 4: [Global] insecure-flg: unknown key") {
		t.Errorf("the log does not name the key and line; last lines:\n%s", ccm.Tail(10))
	}
}
