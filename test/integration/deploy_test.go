package integration

import (
	"context"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ccm-project/ccm/common/testenv"
)

// Every overlay under deploy/ renders, passes server-side dry-run with strict field validation
// on the real API server, runs its own provider with its own image, and ships an example
// cloud-config that its provider accepts.
func TestOverlays(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "deploy", "*", "kustomization.yaml"))
	overlays := 0
	for _, k := range dirs {
		dir := filepath.Dir(k)
		name := filepath.Base(dir)
		if name == "base" {
			continue
		}
		overlays++
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := env.Kubectl(ctx, "apply", "--dry-run=server", "--validate=strict", "-k", dir); err != nil {
				t.Fatalf("server-side dry-run: %v", err)
			}
			out, err := env.Kubectl(ctx, "kustomize", dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"--cloud-provider=" + name, "image: ccm.local/ccm-" + name + ":", "secretName: cloud-controller-manager-config-", "--cluster-name=$(CLUSTER_NAME)", "cluster-name: CHANGE-ME"} {
				if !strings.Contains(out, want) {
					t.Errorf("rendered overlay lacks %q", want)
				}
			}
			if strings.Contains(out, "OVERLAY-SETS-THIS") {
				t.Error("the overlay does not set --cloud-provider")
			}
			conf := filepath.Join(dir, "cloud.conf")
			if _, err := os.Stat(conf); err != nil {
				t.Fatalf("no example cloud.conf: %v", err)
			}
			// make integration builds bin/ccm-NAME for every provider with a tag file.
			bin := filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-"+name)
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("no binary for the overlay's provider (set CCM_BIN_DIR; make integration does): %v", err)
			}
			if out, err := exec.Command(bin, "check-config", "--cloud-provider="+name, "--cloud-config="+conf, "--cluster-name=prod-eu-1").CombinedOutput(); err != nil {
				t.Errorf("example config rejected: %s", out)
			}
			// The overlay's placeholder cluster name must be filled in: check-config says so.
			out2, err := exec.Command(bin, "check-config", "--cloud-provider="+name, "--cloud-config="+conf, "--cluster-name=CHANGE-ME").CombinedOutput()
			if err == nil || !strings.Contains(string(out2), "placeholder") {
				t.Errorf("check-config accepted the placeholder cluster name: %s", out2)
			}
		})
	}
	if overlays == 0 {
		t.Fatal("no overlays under deploy/")
	}
	// A schema error must fail the dry-run (the check can fail).
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "kustomization.yaml"), []byte("resources: [ds.yaml]\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "ds.yaml"), []byte("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: kube-system}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i, livenesProbe: {}}]\n"), 0o644)
	if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-k", bad); err == nil {
		t.Error("a DaemonSet with an unknown field passed the dry-run")
	}
}

// An operator's overlay sets the cluster name in one place (the generated ConfigMap), and the
// rendered DaemonSet runs with it; the config Secret and that ConfigMap carry a hash of their
// content, so a change rolls the pods. Each overlay, so rendered, starts a ccm with the
// DaemonSet's args (against the provider's simulator, the dummy with the overlay's own
// cloud.conf) that becomes healthy and leads.
func TestOverlayClusterName(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aws", "dummy", "openstack", "vsphere"} {
		t.Run(name, func(t *testing.T) {
			r := renderWithClusterName(t, filepath.Join(root, "deploy", name), "prod-eu-1")
			if r.clusterName != "prod-eu-1" {
				t.Fatalf("cluster name %q from the overlay's ConfigMap, want prod-eu-1", r.clusterName)
			}
			if !strings.HasPrefix(r.secretName, "cloud-controller-manager-config-") || !strings.HasPrefix(r.configMapName, "cloud-controller-manager-cluster-") {
				t.Errorf("generated names without a content hash: Secret %q, ConfigMap %q", r.secretName, r.configMapName)
			}
			again := renderWithClusterName(t, filepath.Join(root, "deploy", name), "prod-eu-2")
			if again.configMapName == r.configMapName {
				t.Error("another cluster name gives the same ConfigMap name: the pods would not roll")
			}
			// The dummy runs with the overlay's own cloud.conf; the others with their simulator's,
			// as the overlay's points at a real cloud.
			conf := filepath.Join(t.TempDir(), "cloud.conf")
			if name == "dummy" {
				if err := os.WriteFile(conf, r.cloudConf, 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				var sim *testenv.Process
				if conf, sim, err = env.StartSimulator(context.Background(), root, name, []string{"overlay-node-1"}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { sim.Stop(5 * time.Second) })
			}
			var args []string
			for _, a := range r.args {
				switch {
				case strings.HasPrefix(a, "--cloud-provider="), strings.HasPrefix(a, "--secure-port="), strings.HasPrefix(a, "--bind-address="):
					continue // the test environment's own
				case strings.HasPrefix(a, "--cloud-config="):
					a = "--cloud-config=" + conf
				}
				args = append(args, strings.ReplaceAll(a, "$(CLUSTER_NAME)", r.clusterName))
			}
			c, err := env.StartCCM(context.Background(), testenv.CCMOptions{Name: "ccm-overlay-" + name, Provider: name, Args: args,
				Binary: filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-"+name)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Stop(10 * time.Second)
				if t.Failed() {
					t.Logf("ccm log:\n%s", c.Tail(40))
				}
			})
			eventually(t, 30*time.Second, "the overlay's ccm is healthy and starts its controllers", func() (bool, error) {
				code, _, err := c.Get("/healthz", "")
				return err == nil && code == 200 && strings.Contains(c.Tail(400), "Starting service controller"), nil
			})
		})
	}
}

type rendered struct {
	args                                   []string
	clusterName, configMapName, secretName string
	cloudConf                              []byte
}

// renderWithClusterName renders an operator's kustomization on top of overlay that sets the
// cluster name as the base's comment says, and reads back what the DaemonSet runs with.
func renderWithClusterName(t *testing.T, overlay, cluster string) rendered {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, overlay) // kustomize takes relative paths only
	if err != nil {
		t.Fatal(err)
	}
	k := "resources: [" + rel + "]\nconfigMapGenerator:\n  - name: cloud-controller-manager-cluster\n    namespace: kube-system\n" +
		"    behavior: replace\n    literals: [cluster-name=" + cluster + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := env.Kubectl(context.Background(), "kustomize", "--load-restrictor=LoadRestrictionsNone", dir)
	if err != nil {
		t.Fatal(err)
	}
	var r rendered
	cms, secrets := map[string]map[string]string{}, map[string]map[string][]byte{}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
			Spec struct {
				Template struct {
					Spec v1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := dec.Decode(&obj); err != nil {
			if err == io.EOF {
				break
			}
			t.Fatal(err)
		}
		switch obj.Kind {
		case "ConfigMap":
			cms[obj.Metadata.Name] = obj.Data
		case "Secret":
			secrets[obj.Metadata.Name] = map[string][]byte{}
			for k, v := range obj.Data {
				b, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					t.Fatal(err)
				}
				secrets[obj.Metadata.Name][k] = b
			}
		case "DaemonSet":
			pod := obj.Spec.Template.Spec
			r.args = pod.Containers[0].Args
			for _, e := range pod.Containers[0].Env {
				if e.Name == "CLUSTER_NAME" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					r.configMapName = e.ValueFrom.ConfigMapKeyRef.Name
				}
			}
			for _, v := range pod.Volumes {
				if v.Secret != nil {
					r.secretName = v.Secret.SecretName
				}
			}
		}
	}
	r.clusterName = cms[r.configMapName]["cluster-name"]
	r.cloudConf = secrets[r.secretName]["cloud.conf"]
	if len(r.args) == 0 || r.configMapName == "" || len(r.cloudConf) == 0 {
		t.Fatalf("rendered overlay without args, cluster-name ConfigMap or cloud.conf Secret:\n%s", out)
	}
	return r
}
