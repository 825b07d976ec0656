package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
			for _, want := range []string{"--cloud-provider=" + name, "image: ccm.local/ccm-" + name + ":", "secretName: cloud-controller-manager-config", "--cluster-name=CHANGE-ME"} {
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
