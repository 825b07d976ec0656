package helm

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dummy and vSphere charts with their load-balancers-only values run beside another CCM's
// release in the same namespace: no object of one has the other's kind, namespace and name, both
// apply together (server-side dry-run), and the second runs only the service controller under a
// Lease of its own that its Role names, with an address pool in its cloud-config (without one
// the provider offers no load balancers and the service controller would not run).
func TestLoadBalancersOnlyBesideAnotherCCM(t *testing.T) {
	for _, tc := range []struct {
		chart string
		// The release beside: the dummy chart's defaults; for vSphere the upstream README's
		// install (the defaults' objects plus the config and credentials Secrets, so that the
		// load-balancers-only release's reuse of the credentials Secret is seen against them).
		other []string
		// A pool in the rendered cloud-config (INI for the dummy, YAML for vSphere).
		pool *regexp.Regexp
	}{
		{"dummy", []string{"--set", "ccm.clusterName=main"}, regexp.MustCompile(`(?m)^\[Pool "[^"]+"\]\n\s*cidr\s*=`)},
		{"vsphere", []string{"-f", filepath.Join(root, "deploy", "charts", "vsphere", "ci", "simple-values.yaml")}, regexp.MustCompile(`(?m)^pools:\n\s+\S+:\n\s+cidr:\n\s+- \S`)},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			dir := filepath.Join(root, "deploy", "charts", tc.chart)
			other, err := runHelm(append([]string{"template", "ccm", dir, "--namespace", "kube-system"}, tc.other...)...)
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
			secrets := map[string]map[string]any{}
			var configSecret, configKey string
			for _, o := range decode(t, lbOnly) {
				id := str(o, "kind") + " " + str(o, "metadata", "namespace") + "/" + str(o, "metadata", "name")
				if ids[id] {
					t.Errorf("%s is in both releases: one would take over the other's", id)
				}
				switch str(o, "kind") {
				case "DaemonSet":
					c := get(o, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
					for _, a := range c["args"].([]any) {
						args = append(args, a.(string))
						if p, ok := strings.CutPrefix(a.(string), "--cloud-config="); ok {
							configKey = filepath.Base(p)
						}
					}
					for _, v := range get(o, "spec", "template", "spec", "volumes").([]any) {
						if get(v, "name") == "cloud-config" {
							configSecret = str(v, "secret", "secretName")
						}
					}
				case "Role":
					if strings.HasSuffix(str(o, "metadata", "name"), ":leader-election") {
						leaseRule, _ = get(o, "rules").([]any)
					}
				case "Secret":
					secrets[str(o, "metadata", "name")] = o
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
			conf, err := base64.StdEncoding.DecodeString(str(secrets[configSecret], "data", configKey))
			if err != nil || !tc.pool.Match(conf) {
				t.Errorf("the cloud-config (Secret %q, key %q) has no address pool (%v):\n%s", configSecret, configKey, err, conf)
			}
			manifest := filepath.Join(t.TempDir(), "both.yaml")
			if err := os.WriteFile(manifest, []byte(other+"\n---\n"+lbOnly), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
				t.Errorf("server-side dry-run of both releases: %v", err)
			}
		})
	}
}
