package helm

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// With --use-service-account-credentials=true the library builds each controller's client, and
// the provider's, as a ServiceAccount of its own in kube-system, which the ccm gets or creates
// and requests tokens for. helm install of the dummy chart with the flag, then ccm runs as the
// chart's ServiceAccount with every flag of the DaemonSet (startFromRelease): it must create
// those ServiceAccounts, initialise a Node and give a LoadBalancer Service an address, with no
// request refused. The API server's bootstrap bindings of kube-controller-manager's controllers
// of the same names (node-controller, service-controller, route-controller) are taken away for
// the test, so the chart's own rules are all the controllers have: a missing rule fails here.
func TestServiceAccountCredentials(t *testing.T) {
	ctx := context.Background()
	rbac := env.Client.RbacV1().ClusterRoleBindings()
	for _, name := range []string{"system:controller:node-controller", "system:controller:service-controller", "system:controller:route-controller"} {
		crb, err := rbac.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := rbac.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			crb.ResourceVersion, crb.UID = "", ""
			if _, err := rbac.Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				t.Errorf("restoring %s: %v", name, err)
			}
		})
	}
	clients := []string{"node-controller", "service-controller", "ccm-node-guard", "dummy-cloud-provider"}
	sas := env.Client.CoreV1().ServiceAccounts("kube-system")
	for _, name := range clients {
		if _, err := sas.Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Fatalf("ServiceAccount kube-system/%s exists before ccm ran: the test could not tell that ccm made it", name)
		}
		t.Cleanup(func() { sas.Delete(ctx, name, metav1.DeleteOptions{}) })
	}

	values := filepath.Join(t.TempDir(), "values.yaml")
	os.WriteFile(values, []byte("enabledControllers: [cloud-node, cloud-node-lifecycle, service]\n"+
		"ccm:\n  clusterName: testcluster\n  extraArgs: [--use-service-account-credentials=true]\n  cloudConfig: |\n"+
		"    [Global]\n    region = dc1\n\n    [Instance \"sa-node-1\"]\n    internal-ip = 10.0.0.31\n\n"+
		"    [Pool \"default\"]\n    cidr = 192.0.2.48/28\n"), 0o644)
	if _, err := runHelm("install", "sacreds", filepath.Join(root, "deploy", "charts", "dummy"), "--namespace", "kube-system", "-f", values); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runHelm("uninstall", "sacreds", "--namespace", "kube-system"); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})
	if args := daemonSetArgs(t)["args"]; !strings.Contains(args, "--use-service-account-credentials=true") || strings.Contains(args, "--use-service-account-credentials=false") {
		t.Fatalf("the DaemonSet does not turn --use-service-account-credentials on: %s", args)
	}

	ccm := startFromRelease(t, "ccm-sacreds")
	if err := testenv.RegisterNode(ctx, env.Client, "sa-node-1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Client.CoreV1().Nodes().Delete(ctx, "sa-node-1", metav1.DeleteOptions{}) })
	testenv.Eventually(t, 30*time.Second, "Node sa-node-1 initialised by the node-controller ServiceAccount", func() (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, "sa-node-1", metav1.GetOptions{})
		return err == nil && n.Spec.ProviderID != "" && !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool {
			return t.Key == "node.cloudprovider.kubernetes.io/uninitialized"
		}), err
	})
	lb(t, "sa-lb-1", "192.0.2.")

	// The clients really were those ServiceAccounts: ccm made them (none existed before).
	for _, name := range clients {
		if _, err := sas.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ServiceAccount kube-system/%s: %v (ccm did not run that client as its own identity)", name, err)
		}
	}
	// Refused requests that do not stop the work (an Event, a retried write) are only logged.
	if m := regexp.MustCompile(`(?i).*forbidden.*`).FindAllString(ccm.Log(), 5); len(m) > 0 {
		t.Errorf("ccm was refused requests:\n%s", strings.Join(m, "\n"))
	}
}

// Every chart, with --use-service-account-credentials turned on where its upstream chart puts
// flags, renders the RBAC of every client name the code asks the library's client builder for:
// the library's controllers that run, ccm's node deletion guard and the provider's own (read
// from the sources, so a renamed or added client fails here). The ccm may get those
// ServiceAccounts and request their tokens (those only), each is bound to a ClusterRole of its
// own, the provider's Roles go to the provider's client, and the manifest passes a strict
// server-side dry-run.
func TestServiceAccountCredentialsRBAC(t *testing.T) {
	flag := map[string][]string{
		"dummy":     {"--set", "ccm.extraArgs[0]=--use-service-account-credentials=true"},
		"aws":       {"--set", "args[0]=--use-service-account-credentials=true"},
		"openstack": {"--set", "controllerExtraArgs[0]=--use-service-account-credentials"},
		"vsphere":   {"--set", "daemonset.cmdline.additionalParams.use-service-account-credentials=true", "--set", "config.enabled=true"},
	}
	builder := regexp.MustCompile(`\bb\.(?:Client|Config)(?:OrDie)?\("([^"]+)"\)|\.Start\(b, "([^"]+)"`)
	for _, chart := range charts(t) {
		t.Run(chart, func(t *testing.T) {
			// The library's controllers that run by default here (no routes: the AWS chart turns
			// --configure-cloud-routes off), then the names in ccm's own sources.
			want := map[string]bool{"node-controller": true, "service-controller": true}
			provider := ""
			for _, dir := range []string{filepath.Join("providers", chart), filepath.Join("common", "nodeguard")} {
				files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
				for _, f := range files {
					if strings.HasSuffix(f, "_test.go") {
						continue
					}
					src, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range builder.FindAllStringSubmatch(string(src), -1) {
						name := m[1] + m[2]
						want[name] = true
						if strings.HasPrefix(dir, "providers") {
							provider = name
						}
					}
				}
			}
			if provider == "" || !want["ccm-node-guard"] {
				t.Fatalf("no client names found in the sources of %s and common/nodeguard: %v", chart, want)
			}
			out, err := runHelm(append([]string{"template", "rel", filepath.Join(root, "deploy", "charts", chart), "--namespace", "kube-system"}, flag[chart]...)...)
			if err != nil {
				t.Fatal(err)
			}
			var tokens []any
			bound := map[string]bool{}
			providerRoles := 0
			objs := decode(t, out)
			prefix := "" // the chart's ClusterRole name, which names the per-client objects
			for _, o := range objs {
				if n, ok := strings.CutSuffix(str(o, "metadata", "name"), ":controller-credentials"); ok && str(o, "kind") == "Role" {
					prefix = n
				}
			}
			for _, o := range objs {
				kind, name := str(o, "kind"), str(o, "metadata", "name")
				switch {
				case kind == "Role" && name == prefix+":controller-credentials":
					if str(o, "metadata", "namespace") != "kube-system" {
						t.Errorf("Role %s is not in kube-system, where the library keeps the controllers' ServiceAccounts", name)
					}
					for _, r := range get(o, "rules").([]any) {
						if slices.Contains(get(r, "resources").([]any), any("serviceaccounts/token")) {
							tokens = get(r, "resourceNames").([]any)
						}
					}
				case kind == "ClusterRoleBinding":
					for _, s := range get(o, "subjects").([]any) {
						if str(s, "namespace") == "kube-system" && want[str(s, "name")] && name == prefix+":"+str(s, "name") && str(o, "roleRef", "name") == name {
							bound[str(s, "name")] = true
						}
					}
				case kind == "RoleBinding" && (strings.HasSuffix(name, ":dummy-store") || strings.HasSuffix(name, ":vsphere-credentials")):
					providerRoles++
					if s := get(o, "subjects").([]any); len(s) != 1 || str(s[0], "name") != provider || str(s[0], "namespace") != "kube-system" {
						t.Errorf("%s binds %v, want the provider's client kube-system/%s", name, s, provider)
					}
				}
			}
			for name := range want {
				if !slices.Contains(tokens, any(name)) {
					t.Errorf("the ccm may not request tokens of kube-system/%s (it may for %v)", name, tokens)
				}
				if !bound[name] {
					t.Errorf("no ClusterRoleBinding of its own for kube-system/%s", name)
				}
			}
			if len(tokens) != len(want) {
				t.Errorf("tokens of %v, want exactly %v", tokens, want)
			}
			if (chart == "dummy" || chart == "vsphere") && providerRoles != 1 {
				t.Errorf("%d provider RoleBindings, want 1", providerRoles)
			}
			manifest := filepath.Join(t.TempDir(), "manifest.yaml")
			os.WriteFile(manifest, []byte(out), 0o644)
			if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
				t.Errorf("server-side dry-run: %v", err)
			}
		})
	}
}
