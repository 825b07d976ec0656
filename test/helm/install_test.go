package helm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ccm-project/ccm/common/testenv"
)

// helm install of the dummy chart, then ccm runs as the chart's ServiceAccount with the
// cloud-config and cluster name the chart installed (no kubelet runs the DaemonSet here, so the
// test starts the binary as the integration tests do with the overlay): it initialises a Node
// and gives a LoadBalancer Service an address, which needs every rule of the chart's RBAC
// (nodes, services/status, events, the Lease, the dummy's ConfigMaps). Then helm upgrade with
// another pool: the Secret and the DaemonSet change in place, and a restarted ccm uses the new
// pool.
func TestInstallAndUpgradeDummy(t *testing.T) {
	ctx := context.Background()
	chart := filepath.Join(root, "deploy", "charts", "dummy")
	values := func(pool string) string {
		f := filepath.Join(t.TempDir(), "values.yaml")
		// enabledControllers: the upstream OpenStack chart's default list, which ccm must accept.
		os.WriteFile(f, []byte("enabledControllers: [cloud-node, cloud-node-lifecycle, route, service]\n"+
			"ccm:\n  clusterName: testcluster\n  cloudConfig: |\n    [Global]\n    region = dc1\n\n"+
			"    [Instance \"helm-node-1\"]\n    internal-ip = 10.0.0.11\n\n    [Pool \"default\"]\n    cidr = "+pool+"\n"), 0o644)
		return f
	}
	if _, err := runHelm("install", "ccm", chart, "--namespace", "kube-system", "-f", values("192.0.2.0/28")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runHelm("uninstall", "ccm", "--namespace", "kube-system"); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})

	ccm := startFromRelease(t, "ccm-1")
	if err := testenv.RegisterNode(ctx, env.Client, "helm-node-1"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "Node helm-node-1 initialised by ccm running as the chart's ServiceAccount", func() (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, "helm-node-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.Spec.ProviderID != "" && !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool {
			return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
		}), nil
	})
	lb(t, "helm-lb-1", "192.0.2.")
	ds1 := daemonSetArgs(t)
	ccm.Stop(10 * time.Second)

	if _, err := runHelm("upgrade", "ccm", chart, "--namespace", "kube-system", "-f", values("198.51.100.0/28"), "--set", "logVerbosityLevel=4"); err != nil {
		t.Fatal(err)
	}
	if out, err := runHelm("history", "ccm", "--namespace", "kube-system"); err != nil || !strings.Contains(out, "Upgrade complete") {
		t.Errorf("no second revision: %v\n%s", err, out)
	}
	ds2 := daemonSetArgs(t)
	if ds1["checksum"] == ds2["checksum"] || !strings.Contains(ds2["args"], "--v=4") {
		t.Errorf("the upgrade did not change the DaemonSet's config checksum and args: %v -> %v", ds1, ds2)
	}
	startFromRelease(t, "ccm-2")
	lb(t, "helm-lb-2", "198.51.100.")
}

// startFromRelease writes the cloud-config of the installed Secret and starts ccm with it, as
// kube-system/<the chart's ServiceAccount>, with the DaemonSet's cluster name.
func startFromRelease(t *testing.T, name string) *testenv.CCM {
	t.Helper()
	if args := daemonSetArgs(t)["args"]; !strings.Contains(args, "--controllers=") {
		t.Fatalf("the DaemonSet passes no --controllers for the values' enabledControllers: %s", args)
	}
	return startReleased(t, name, filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-dummy"), "testcluster")
}

// startReleased is startFromRelease with the binary to run and the cluster name the DaemonSet
// must pass.
func startReleased(t *testing.T, name, binary, wantCluster string) *testenv.CCM {
	t.Helper()
	ctx := context.Background()
	sec, err := env.Client.CoreV1().Secrets("kube-system").Get(ctx, "cloud-controller-manager-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	os.WriteFile(conf, sec.Data["cloud.conf"], 0o600)
	ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every flag of the DaemonSet but the file and port ones (the test's own) goes to the ccm,
	// so a flag or value it refuses fails here.
	var cluster string
	var args []string
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--cluster-name="); ok {
			cluster = v
		}
		if !strings.HasPrefix(a, "--cloud-config=") && !strings.HasPrefix(a, "--secure-port=") && !strings.HasPrefix(a, "--bind-address=") {
			args = append(args, a)
		}
	}
	if ds.Spec.Template.Spec.ServiceAccountName != "cloud-controller-manager" || cluster != wantCluster {
		t.Fatalf("DaemonSet runs as %q with %v", ds.Spec.Template.Spec.ServiceAccountName, args)
	}
	c, err := env.StartCCM(ctx, testenv.CCMOptions{Name: name, Provider: "dummy", CloudConfig: conf,
		Binary: binary, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s log (last 40 lines):\n%s", name, c.Tail(40))
		}
	})
	return c
}

// lb creates a LoadBalancer Service and waits for an address with the given prefix, then
// deletes it and waits for the finalizer to go (the ccm is still running).
func lb(t *testing.T, name, prefix string) {
	t.Helper()
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services("default")
	_, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
		Type:  v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "an address from the chart's pool for Service "+name, func() (bool, error) {
		s, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ing := s.Status.LoadBalancer.Ingress
		return len(ing) == 1 && strings.HasPrefix(ing[0].IP, prefix), nil
	})
	if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "Service "+name+" released", func() (bool, error) {
		_, err := svcs.Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	})
}

func daemonSetArgs(t *testing.T) map[string]string {
	t.Helper()
	ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"checksum": ds.Spec.Template.Annotations["checksum/config"],
		"args": strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")}
}
