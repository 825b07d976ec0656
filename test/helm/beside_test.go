package helm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The dummy chart with its load-balancers-only values runs beside another CCM's release in the
// same namespace: no object of one has the other's kind, namespace and name, both apply together
// (server-side dry-run), and the second runs only the service controller under a Lease of its
// own that its Role names.
func TestLoadBalancersOnlyBesideAnotherCCM(t *testing.T) {
	dir := filepath.Join(root, "deploy", "charts", "dummy")
	other, err := runHelm("template", "ccm", dir, "--namespace", "kube-system", "--set", "ccm.clusterName=main")
	if err != nil {
		t.Fatal(err)
	}
	lbOnly, err := runHelm("template", "lb", dir, "--namespace", "kube-system", "-f", filepath.Join(dir, "ci", "load-balancers-only-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, o := range decode(t, other) {
		ids[str(o, "kind")+" "+str(o, "metadata", "namespace")+"/"+str(o, "metadata", "name")] = true
	}
	var args []string
	var leaseRule []any
	for _, o := range decode(t, lbOnly) {
		id := str(o, "kind") + " " + str(o, "metadata", "namespace") + "/" + str(o, "metadata", "name")
		if ids[id] {
			t.Errorf("%s is in both releases: one would take over the other's", id)
		}
		switch str(o, "kind") {
		case "DaemonSet":
			for _, a := range get(o, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
		case "Role":
			if strings.HasSuffix(str(o, "metadata", "name"), ":leader-election") {
				leaseRule, _ = get(o, "rules").([]any)
			}
		}
	}
	for _, want := range []string{"--controllers=service-lb-controller", "--leader-elect-resource-name=ccm-load-balancers"} {
		if !slices.Contains(args, want) {
			t.Errorf("load-balancers-only args lack %s: %v", want, args)
		}
	}
	named := false
	for _, r := range leaseRule {
		names, _ := get(r, "resourceNames").([]any)
		named = named || slices.Contains(names, any("ccm-load-balancers"))
	}
	if !named {
		t.Errorf("the leader election Role does not name the Lease ccm-load-balancers: %v", leaseRule)
	}
	manifest := filepath.Join(t.TempDir(), "both.yaml")
	if err := os.WriteFile(manifest, []byte(other+"\n---\n"+lbOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
		t.Errorf("server-side dry-run of both releases: %v", err)
	}
}
