// Package helm tests the charts under deploy/charts with a real helm (built by
// `build/testbin.sh helm` into bin/testbin) against a real kube-apiserver: lint, render with the
// defaults and with every ci/*.yaml values file (shaped like the upstream charts' documented
// examples), the rendered cloud-config through `ccm check-config`, every manifest through a
// server-side dry-run, and a helm install + upgrade of the dummy chart with ccm running as the
// chart's ServiceAccount. `make helm-test` runs it.
package helm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ccm-project/ccm/common/testenv"
)

var (
	env   *testenv.Env
	root  string
	helm  string
	hhome string // HELM_*_HOME folders, so the operator's own helm setup is never touched
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin := os.Getenv("CCM_TESTBIN")
	if bin == "" {
		bin = filepath.Join(root, "bin", "testbin")
	}
	helm = filepath.Join(bin, "helm")
	if _, err := os.Stat(helm); err != nil || os.Getenv("CCM_BIN_DIR") == "" {
		fmt.Fprintln(os.Stderr, "no helm in", bin, "or CCM_BIN_DIR unset: run these tests with `make helm-test`")
		return 1
	}
	if hhome, err = os.MkdirTemp("", "ccm-helm-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(hhome)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if env, err = testenv.Start(ctx, testenv.Options{Bin: bin}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	// The ServiceMonitor and PrometheusRule kinds of the Prometheus Operator, so that charts
	// rendering them dry-run.
	for name, def := range map[string]string{"servicemonitors": serviceMonitorCRD, "prometheusrules": prometheusRuleCRD} {
		crd := filepath.Join(env.Dir, name+"-crd.yaml")
		os.WriteFile(crd, []byte(def), 0o644)
		if _, err = env.Kubectl(ctx, "apply", "-f", crd); err == nil {
			_, err = env.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=30s", "crd/"+name+".monitoring.coreos.com")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, name, "CRD:", err)
			env.Stop()
			return 1
		}
	}
	code := m.Run()
	dir := env.Dir
	env.Stop()
	if left := testenv.LeftoversOf(dir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: processes left behind: %v\n", left)
		return 1
	}
	return code
}

// runHelm runs helm against the test control plane with a private helm home.
func runHelm(args ...string) (string, error) {
	cmd := exec.Command(helm, args...)
	cmd.Env = helmEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// helmEnv is the environment of helm and kubectl here: the test control plane, and helm folders
// of the test's own.
func helmEnv() []string {
	return append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath,
		"HELM_CACHE_HOME="+filepath.Join(hhome, "cache"), "HELM_CONFIG_HOME="+filepath.Join(hhome, "config"),
		"HELM_DATA_HOME="+filepath.Join(hhome, "data"))
}

func charts(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, "deploy", "charts", "*", "Chart.yaml"))
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Base(filepath.Dir(d)))
	}
	// One chart per provider with a tag file in cmd/ccm.
	tags, _ := filepath.Glob(filepath.Join(root, "cmd", "ccm", "provider_*.go"))
	if len(out) != len(tags) {
		t.Fatalf("charts %v, but %d providers in cmd/ccm", out, len(tags))
	}
	return out
}

// The templates that render the objects are one file, copied into every chart (helm has no
// way to share templates without a dependency step): they must not drift apart.
func TestSharedTemplatesIdentical(t *testing.T) {
	cs := charts(t)
	for _, f := range []string{"_ccm.tpl", "ccm.yaml", "NOTES.txt"} {
		want, err := os.ReadFile(filepath.Join(root, "deploy", "charts", cs[0], "templates", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs[1:] {
			got, err := os.ReadFile(filepath.Join(root, "deploy", "charts", c, "templates", f))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("deploy/charts/%s/templates/%s differs from deploy/charts/%s's (copy it over): %v", c, f, cs[0], err)
			}
		}
	}
}

// A case is one chart rendered with its defaults ("") or with one ci/ values file.
type outcome struct {
	configErr string // check-config must fail with this; "" = must pass
	external  bool   // the chart renders no cloud-config: it mounts the operator's own
}

// Defaults cannot make a working install where the upstream charts' defaults cannot either
// (openstack: no Keystone; dummy: the placeholder cluster name): the rendered config must fail
// check-config with the message that says what to set. AWS starts without a config, as upstream.
var expect = map[string]outcome{
	"dummy":                         {configErr: "placeholder"},
	"openstack":                     {configErr: "auth-url"},
	"vsphere":                       {external: true}, // config.enabled is false upstream: ConfigMap cloud-config
	"aws/ci/own-config-values.yaml": {external: true},
	"openstack/ci/external-secret-values.yaml": {external: true},
}

func TestCharts(t *testing.T) {
	for _, chart := range charts(t) {
		t.Run(chart, func(t *testing.T) {
			dir := filepath.Join(root, "deploy", "charts", chart)
			files, _ := filepath.Glob(filepath.Join(dir, "ci", "*.yaml"))
			if len(files) < 1 {
				t.Fatalf("no values files in deploy/charts/%s/ci", chart)
			}
			if _, err := runHelm("lint", "--strict", dir); err != nil {
				t.Errorf("lint with the defaults: %v", err)
			}
			for _, f := range append([]string{""}, files...) {
				name, key, args := "defaults", chart, []string{}
				if f != "" {
					name, key, args = filepath.Base(f), chart+"/ci/"+filepath.Base(f), []string{"-f", f}
				}
				t.Run(name, func(t *testing.T) {
					if f != "" {
						if _, err := runHelm(append([]string{"lint", "--strict", dir}, args...)...); err != nil {
							t.Errorf("lint: %v", err)
						}
					}
					out, err := runHelm(append([]string{"template", "rel", dir, "--namespace", "kube-system"}, args...)...)
					if err != nil {
						t.Fatal(err)
					}
					checkRendered(t, chart, out, expect[key])
					manifest := filepath.Join(t.TempDir(), "manifest.yaml")
					os.WriteFile(manifest, []byte(out), 0o644)
					if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
						t.Errorf("server-side dry-run: %v", err)
					}
				})
			}
		})
	}
}

// checkRendered finds the DaemonSet, checks what every chart must render as the overlays do,
// and runs the rendered cloud-config through `ccm-PROVIDER check-config`.
func checkRendered(t *testing.T, provider, out string, want outcome) {
	t.Helper()
	objs := decode(t, out)
	var ds map[string]any
	secrets := map[string]map[string]any{}
	kinds := map[string]int{}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		kinds[kind]++
		switch kind {
		case "DaemonSet":
			ds = o
		case "Secret":
			secrets[str(o, "metadata", "name")] = o
		}
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "DaemonSet"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rendered", k)
		}
	}
	if ds == nil {
		t.FailNow()
	}
	spec := get(ds, "spec", "template", "spec").(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	if img, _ := c["image"].(string); !strings.HasPrefix(img, "ccm.local/ccm-"+provider+":") {
		t.Errorf("image %q is not ccm's %s image", img, provider)
	}
	psc, _ := spec["securityContext"].(map[string]any)
	csc, _ := c["securityContext"].(map[string]any)
	if psc["runAsNonRoot"] != true || csc["allowPrivilegeEscalation"] != false || csc["readOnlyRootFilesystem"] != true {
		t.Errorf("security context lost: pod %v, container %v", psc, csc)
	}
	for _, p := range []string{"livenessProbe", "readinessProbe"} {
		if str(c, p, "httpGet", "path") != "/healthz" {
			t.Errorf("%s is not /healthz: %v", p, c[p])
		}
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	flag := func(name string) string {
		v := ""
		for _, a := range args {
			if s, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				v = s
			}
		}
		return v
	}
	if flag("cloud-provider") != provider || flag("leader-elect") != "true" || flag("secure-port") != "10258" {
		t.Errorf("args lack the provider, leader election or the secure port: %v", args)
	}
	for _, name := range []string{"cloud-provider", "cloud-config", "cluster-name"} {
		if n := strings.Count(" "+strings.Join(args, " "), " --"+name+"="); n > 1 {
			t.Errorf("--%s given %d times: %v", name, n, args)
		}
	}
	// Every flag is one the provider's binary has (its --help lists them all).
	known := flagsOf(t, provider)
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !known[name] {
			t.Errorf("%s: ccm-%s has no such flag", a, provider)
		}
	}
	// The cloud-config: the file --cloud-config names, in the volume mounted at its folder.
	path := flag("cloud-config")
	var secretName string
	for _, m := range c["volumeMounts"].([]any) {
		m := m.(map[string]any)
		if m["mountPath"] == filepath.Dir(path) {
			for _, v := range spec["volumes"].([]any) {
				v := v.(map[string]any)
				if v["name"] == m["name"] {
					secretName = str(v, "secret", "secretName")
				}
			}
		}
	}
	sec := secrets[secretName]
	if want.external {
		if sec != nil {
			t.Errorf("expected the operator's own cloud-config, but the chart renders Secret %s", secretName)
		}
		return
	}
	if sec == nil {
		t.Fatalf("no Secret rendered for --cloud-config=%s (volume secret %q)", path, secretName)
	}
	b64, _ := get(sec, "data", filepath.Base(path)).(string)
	conf, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(conf) == 0 {
		t.Fatalf("Secret %s has no %s: %v", secretName, filepath.Base(path), err)
	}
	file := filepath.Join(t.TempDir(), filepath.Base(path))
	os.WriteFile(file, conf, 0o600)
	cc := []string{"check-config", "--cloud-provider=" + provider, "--cloud-config=" + file}
	if cl := flag("cluster-name"); cl != "" {
		cc = append(cc, "--cluster-name="+cl)
	}
	for _, a := range args {
		if a == "--allow-default-cluster-name" {
			cc = append(cc, a)
		}
	}
	res, err := exec.Command(filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-"+provider), cc...).CombinedOutput()
	switch {
	case want.configErr == "" && err != nil:
		t.Errorf("rendered cloud-config rejected (%v):\n%s\n--- config:\n%s", cc, res, conf)
	case want.configErr != "" && err == nil:
		t.Errorf("rendered cloud-config passed check-config, want an error naming %q:\n%s", want.configErr, conf)
	case want.configErr != "" && !strings.Contains(string(res), want.configErr):
		t.Errorf("check-config error does not name %q:\n%s", want.configErr, res)
	}
}

var helpFlags = map[string]map[string]bool{}

// flagsOf lists the flags of bin/ccm-PROVIDER, from its --help.
func flagsOf(t *testing.T, provider string) map[string]bool {
	t.Helper()
	if f, ok := helpFlags[provider]; ok {
		return f
	}
	out, err := exec.Command(filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-"+provider), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("ccm-%s --help: %v\n%s", provider, err, out)
	}
	f := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		f[m[1]] = true
	}
	if !f["--cloud-provider"] || !f["--leader-elect"] {
		t.Fatalf("ccm-%s --help lists no flags I can read:\n%s", provider, out)
	}
	helpFlags[provider] = f
	return f
}

func decode(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	d := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var o map[string]any
		if err := d.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

// notes renders a chart as `helm install --dry-run` and returns its NOTES.
func notes(t *testing.T, chart string, args ...string) string {
	t.Helper()
	out, err := runHelm(append([]string{"install", "notes", filepath.Join(root, "deploy", "charts", chart), "--namespace", "kube-system", "--dry-run=client", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var rel struct {
		Info struct {
			Notes string `json:"notes"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(out), &rel); err != nil {
		t.Fatalf("helm install -o json: %v", err)
	}
	return rel.Info.Notes
}

// Upstream values ccm does not use are accepted and listed in NOTES; unknown ones too, apart;
// the upstream default cluster name is called out.
func TestNotesListUnusedValues(t *testing.T) {
	for _, tc := range []struct {
		chart, file string
		want, not   []string
	}{
		{"openstack", "password-values.yaml", []string{"  - image\n"}, []string{"ACTION NEEDED", "neither"}},
		{"openstack", "", []string{"ACTION NEEDED", `"kubernetes"`}, []string{"accepts and does not use"}},
		{"aws", "irsa-values.yaml", []string{"  - image\n", "  - clusterRoleRules\n"}, []string{"ACTION NEEDED"}},
		{"aws", "", []string{"instance metadata service"}, []string{"ACTION NEEDED"}},
		{"vsphere", "full-values.yaml", []string{"  - podSecurityPolicy\n", "  - daemonset.image\n", "  - daemonset.tag\n", "  - daemonset.replicaCount\n", "  - daemonset.extraVolumesMounts\n"}, []string{"ACTION NEEDED"}},
		{"dummy", "", []string{"ACTION NEEDED", `"CHANGE-ME"`}, nil},
	} {
		t.Run(tc.chart+"/"+tc.file, func(t *testing.T) {
			var args []string
			if tc.file != "" {
				args = []string{"-f", filepath.Join(root, "deploy", "charts", tc.chart, "ci", tc.file)}
			}
			n := notes(t, tc.chart, args...)
			for _, w := range tc.want {
				if !strings.Contains(n, w) {
					t.Errorf("NOTES lack %q:\n%s", w, n)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(n, w) {
					t.Errorf("NOTES hold %q:\n%s", w, n)
				}
			}
		})
	}
	if n := notes(t, "aws", "--set", "hostNetworking=false"); !strings.Contains(n, "HttpPutResponseHopLimit") {
		t.Errorf("without the host network, the notes do not say how IMDSv2 is reached:\n%s", n)
	}
	n := notes(t, "openstack", "--set", "cluster.name=prod", "--set", "imagee.tag=x")
	if !strings.Contains(n, "neither the upstream chart nor ccm knows") || !strings.Contains(n, "  - imagee\n") {
		t.Errorf("a misspelt value is not reported:\n%s", n)
	}
}

const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`

// prometheusRuleCRD is the Prometheus Operator's PrometheusRule with the part of its schema the
// charts render (groups of recording and alerting rules), so a misspelt field fails the strict
// server-side dry-run.
const prometheusRuleCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                groups:
                  type: array
                  items:
                    type: object
                    required: [name, rules]
                    properties:
                      name: {type: string}
                      interval: {type: string}
                      rules:
                        type: array
                        items:
                          type: object
                          required: [expr]
                          properties:
                            record: {type: string}
                            alert: {type: string}
                            expr: {x-kubernetes-int-or-string: true}
                            for: {type: string}
                            labels: {type: object, additionalProperties: {type: string}}
                            annotations: {type: object, additionalProperties: {type: string}}
`

// Parity with the kustomize overlays: the dummy chart's defaults render the objects of
// deploy/dummy (same kinds and names, rules, bindings and pod spec); every chart grants the
// base's rules and runs with its security context and probes.
func TestParityWithOverlays(t *testing.T) {
	ctx := context.Background()
	byKey := func(objs []map[string]any) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, o := range objs {
			m[str(o, "kind")+"/"+str(o, "metadata", "namespace")+"/"+str(o, "metadata", "name")] = o
		}
		return m
	}
	render := func(chart string) map[string]map[string]any {
		out, err := runHelm("template", "rel", filepath.Join(root, "deploy", "charts", chart), "--namespace", "kube-system")
		if err != nil {
			t.Fatal(err)
		}
		return byKey(decode(t, out))
	}
	kout, err := env.Kubectl(ctx, "kustomize", filepath.Join(root, "deploy", "dummy"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := byKey(overlayAsChart(t, decode(t, kout)))
	podSpec := func(o map[string]any) map[string]any {
		s := get(o, "spec", "template", "spec").(map[string]any)
		c := s["containers"].([]any)[0].(map[string]any)
		return map[string]any{"pod": s["securityContext"], "container": c["securityContext"],
			"liveness": c["livenessProbe"], "readiness": c["readinessProbe"], "hostNetwork": s["hostNetwork"]}
	}
	dummy := render("dummy")
	for key, want := range overlay {
		got, ok := dummy[key]
		if !ok {
			t.Errorf("dummy chart lacks %s of deploy/dummy", key)
			continue
		}
		for _, f := range [][]string{{"rules"}, {"roleRef"}, {"subjects"}, {"spec", "template", "spec"}, {"spec", "selector"}} {
			if w, g := get(want, f...), get(got, f...); !equalJSON(w, g) {
				t.Errorf("%s %v: overlay %v, chart %v", key, f, w, g)
			}
		}
	}
	base := overlay["ClusterRole//system:cloud-controller-manager"]
	lease := overlay["Role/kube-system/system:cloud-controller-manager:leader-election"]
	var ds map[string]any
	for _, o := range overlay {
		if o["kind"] == "DaemonSet" {
			ds = o
		}
	}
	for _, chart := range []string{"openstack", "aws", "vsphere"} {
		objs := render(chart)
		if !equalJSON(get(objs["ClusterRole//system:cloud-controller-manager"], "rules"), base["rules"]) && !equalJSON(get(objs["ClusterRole//cloud-controller-manager"], "rules"), base["rules"]) {
			t.Errorf("%s: the ClusterRole differs from deploy/base's", chart)
		}
		var leaseOK bool
		for k, o := range objs {
			if strings.HasPrefix(k, "Role/kube-system/") && strings.HasSuffix(k, ":leader-election") {
				leaseOK = equalJSON(o["rules"], lease["rules"])
			}
			if o["kind"] == "DaemonSet" && !equalJSON(podSpec(o), podSpec(ds)) {
				t.Errorf("%s: security context, probes or host network differ from deploy/base's:\n%v\n%v", chart, podSpec(o), podSpec(ds))
			}
		}
		if !leaseOK {
			t.Errorf("%s: no leader-election Role with deploy/base's rules", chart)
		}
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// overlayAsChart rewrites the rendered overlay the way the chart writes the same things: the
// chart names its Secret without kustomize's content hash and puts the cluster name in the
// DaemonSet's args, where the overlay takes it from a generated ConfigMap (which it then drops).
func overlayAsChart(t *testing.T, objs []map[string]any) []map[string]any {
	t.Helper()
	unhash := func(name string) string {
		for _, base := range []string{"cloud-controller-manager-config", "cloud-controller-manager-cluster"} {
			if strings.HasPrefix(name, base+"-") {
				return base
			}
		}
		return name
	}
	cluster := ""
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == "ConfigMap" && unhash(str(o, "metadata", "name")) == "cloud-controller-manager-cluster" {
			cluster = str(o, "data", "cluster-name")
			continue
		}
		out = append(out, o)
	}
	if cluster == "" {
		t.Fatal("deploy/dummy renders no cloud-controller-manager-cluster ConfigMap with a cluster-name")
	}
	for _, o := range out {
		meta := o["metadata"].(map[string]any)
		meta["name"] = unhash(str(o, "metadata", "name"))
		if o["kind"] != "DaemonSet" {
			continue
		}
		spec := get(o, "spec", "template", "spec").(map[string]any)
		c := spec["containers"].([]any)[0].(map[string]any)
		// The chart writes the cluster name into the args; the Pod's own name and namespace
		// come from the downward API in both.
		var env []any
		for _, e := range c["env"].([]any) {
			if e.(map[string]any)["name"] != "CLUSTER_NAME" {
				env = append(env, e)
			}
		}
		c["env"] = env
		for i, a := range c["args"].([]any) {
			c["args"].([]any)[i] = strings.ReplaceAll(a.(string), "$(CLUSTER_NAME)", cluster)
		}
		for _, v := range spec["volumes"].([]any) {
			if sec, ok := v.(map[string]any)["secret"].(map[string]any); ok {
				sec["secretName"] = unhash(sec["secretName"].(string))
			}
		}
	}
	return out
}
