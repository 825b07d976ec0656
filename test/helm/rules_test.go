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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// ccm.prometheusRule.enabled renders, in each chart, a PrometheusRule whose recording rules give
// the upstream CCM's metric names from ccm's series. Every recorded name is one of README's
// table of upstream metric names (for the chart's provider); every expression reads only series
// a running ccm exposes, by label names those series carry, and only the chart's provider's;
// the manifest passes a strict server-side dry-run. Every upstream name of the table that no
// rule records is named in docs/helm.md as not mapped. Charts whose upstream CCM has no exact
// mapping render no PrometheusRule and say so in their notes.
func TestPrometheusRuleRecordsUpstreamNames(t *testing.T) {
	upstream := upstreamMetricNames(t)
	exposed := exposedMetrics(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The charts whose upstream CCM has metrics with an exact ccm equivalent (docs/helm.md).
	withRules := map[string]bool{"openstack": true}
	for _, chart := range charts(t) {
		t.Run(chart, func(t *testing.T) {
			set := []string{"--set", "ccm.prometheusRule.enabled=true", "--set", "ccm.prometheusRule.additionalLabels.release=prometheus"}
			out, err := runHelm(append([]string{"template", "rel", filepath.Join(root, "deploy", "charts", chart), "--namespace", "kube-system"}, set...)...)
			if err != nil {
				t.Fatal(err)
			}
			var rules []map[string]any
			for _, o := range decode(t, out) {
				if str(o, "kind") != "PrometheusRule" {
					continue
				}
				if str(o, "metadata", "labels", "release") != "prometheus" {
					t.Errorf("PrometheusRule lacks ccm.prometheusRule.additionalLabels: %v", get(o, "metadata", "labels"))
				}
				for _, g := range get(o, "spec", "groups").([]any) {
					for _, r := range get(g, "rules").([]any) {
						rules = append(rules, r.(map[string]any))
					}
				}
			}
			if !withRules[chart] {
				if rules != nil {
					t.Errorf("%s renders recording rules, but docs/helm.md says none of its upstream metrics maps", chart)
				}
				if n := notes(t, chart, set...); !strings.Contains(n, "no PrometheusRule is rendered") {
					t.Errorf("the notes do not say why no PrometheusRule is rendered:\n%s", n)
				}
				return
			}
			if len(rules) == 0 {
				t.Fatal("no recording rules rendered")
			}
			recorded := map[string]bool{}
			for _, r := range rules {
				record, expr := str(r, "record"), str(r, "expr")
				recorded[record] = true
				if !upstream[chart][upstreamFamily(record, upstream[chart])] {
					t.Errorf("record %s is not one of README's upstream %s metric names %v", record, chart, upstream[chart])
				}
				checkExpr(t, chart, record, expr, exposed)
			}
			// What the rules leave out is said to be left out.
			for name := range upstream[chart] {
				if recorded[name] {
					continue
				}
				if histogramRecorded(name, recorded) {
					if !recorded[name+"_bucket"] && !strings.Contains(string(doc), "`"+name+"_bucket`") {
						t.Errorf("%s_bucket is not recorded and docs/helm.md does not list it as not mapped", name)
					}
					continue
				}
				if !strings.Contains(string(doc), "`"+name+"`") {
					t.Errorf("%s is not recorded and docs/helm.md does not list it as not mapped", name)
				}
			}
			manifest := filepath.Join(t.TempDir(), "manifest.yaml")
			os.WriteFile(manifest, []byte(out), 0o644)
			if _, err := env.Kubectl(context.Background(), "apply", "--dry-run=server", "--validate=strict", "-f", manifest); err != nil {
				t.Errorf("server-side dry-run: %v", err)
			}
		})
	}
	// The upstream names the charts leave out entirely are listed too.
	for provider, names := range upstream {
		if withRules[provider] {
			continue
		}
		for name := range names {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s: %s has no rule and docs/helm.md does not list it as not mapped", provider, name)
			}
		}
	}
}

// upstreamFamily is the upstream metric a recorded series name belongs to: itself, or the
// histogram it is the _bucket, _sum or _count series of.
func upstreamFamily(record string, names map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(record, suffix); ok && names[base] && strings.HasSuffix(base, "_seconds") {
			return base
		}
	}
	return record
}

func histogramRecorded(name string, recorded map[string]bool) bool {
	return recorded[name+"_sum"] || recorded[name+"_count"] || recorded[name+"_bucket"]
}

var (
	// A selector: metric name and its label matchers.
	selectorRe = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	// label_join(SELECTOR, "dst", "sep", "src", ...) and label_replace(SELECTOR, "dst", "repl", "src", "regex").
	labelJoinRe    = regexp.MustCompile(`label_join\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{[^}]*\}\s*,\s*"[^"]*"\s*,\s*"[^"]*"((?:\s*,\s*"[^"]*")+)\s*\)`)
	labelReplaceRe = regexp.MustCompile(`label_replace\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{[^}]*\}\s*,\s*"[^"]*"\s*,\s*"[^"]*"\s*,\s*"([^"]*)"\s*,\s*"[^"]*"\s*\)`)
	stringRe       = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	groupingRe     = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRe        = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

// checkExpr reads a recording rule's PromQL as far as the test needs: the metric names it
// selects (with or without matchers), the label names its matchers and label_join/label_replace
// read, and the provider it selects. Each must be what a running ccm exposes.
func checkExpr(t *testing.T, chart, record, expr string, exposed map[string]map[string]bool) {
	t.Helper()
	used := map[string][]string{} // metric -> label names read
	for _, m := range selectorRe.FindAllStringSubmatch(expr, -1) {
		var labels []string
		provider := ""
		for _, mm := range matcherRe.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, mm[1])
			if mm[1] == "provider" && mm[2] == "=" {
				provider = mm[3]
			}
		}
		used[m[1]] = append(used[m[1]], labels...)
		if provider != chart {
			t.Errorf("%s: %s{%s} does not select provider=%q: it would record other providers' series", record, m[1], m[2], chart)
		}
	}
	for _, fn := range []string{"label_join(", "label_replace("} {
		if n := strings.Count(expr, fn); n > 0 {
			re := labelJoinRe
			if fn == "label_replace(" {
				re = labelReplaceRe
			}
			ms := re.FindAllStringSubmatch(expr, -1)
			if len(ms) != n {
				t.Errorf("%s: cannot read the source labels of %d of the %d %s calls in %s", record, n-len(ms), n, fn, expr)
			}
			for _, m := range ms {
				for _, s := range stringRe.FindAllString(m[2], -1) {
					used[m[1]] = append(used[m[1]], strings.Trim(s, `"`))
				}
			}
		}
	}
	// Bare metric names: identifiers left once strings, matchers, ranges and grouping lists are
	// gone, that are neither functions (followed by "(") nor keywords.
	rest := groupingRe.ReplaceAllString(stringRe.ReplaceAllString(expr, `""`), " ")
	rest = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`).ReplaceAllString(rest, " ")
	for _, m := range identRe.FindAllStringSubmatch(rest, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(m[0], "("))
		if m[1] != "" || slices.Contains([]string{"and", "or", "unless", "bool", "offset", "inf", "nan"}, strings.ToLower(name)) {
			continue
		}
		if _, ok := used[name]; !ok {
			used[name] = nil
		}
	}
	if len(used) == 0 {
		t.Errorf("%s: no metric name found in %s", record, expr)
	}
	for name, labels := range used {
		have, ok := exposed[name]
		if !ok {
			t.Errorf("%s: %s is not a series ccm exposes", record, name)
			continue
		}
		for _, l := range labels {
			if !have[l] {
				t.Errorf("%s: ccm's %s has no label %q (it has %v)", record, name, l, have)
			}
		}
	}
}

// upstreamMetricNames reads README's table "upstream | ccm" of the metrics section: for each
// provider, the upstream CCM's metric names it maps ("aws: `name{labels}`"; a name starting with
// "_" continues the row's first name, without its "_total").
func upstreamMetricNames(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n| upstream | ccm |\n")
	if !ok {
		t.Fatal("README.md has no table | upstream | ccm |")
	}
	out := map[string]map[string]bool{}
	code := regexp.MustCompile("`([^`]+)`")
	for _, row := range strings.Split(table, "\n") {
		if !strings.HasPrefix(row, "|") {
			break
		}
		cells := strings.Split(row, "|")
		provider, names, ok := strings.Cut(strings.TrimSpace(cells[1]), ":")
		if !ok || strings.Contains(provider, " ") {
			continue // the separator row, and rows of names ccm keeps as they are
		}
		base := ""
		for _, m := range code.FindAllStringSubmatch(names, -1) {
			name, _, _ := strings.Cut(m[1], "{")
			switch {
			case name == "":
				continue // a label list of its own: `{operation}`
			case strings.HasPrefix(name, "_"):
				name = base + name
			default:
				base = strings.TrimSuffix(name, "_total")
			}
			if out[provider] == nil {
				out[provider] = map[string]bool{}
			}
			out[provider][name] = true
		}
	}
	for _, p := range []string{"aws", "openstack", "vsphere"} {
		if len(out[p]) == 0 {
			t.Fatalf("README's upstream metric table has no names for %s: %v", p, out)
		}
	}
	return out
}

// exposedMetrics runs the dummy ccm until it has initialised a Node and served a LoadBalancer
// Service (so that its cloud call and reconcile families have series), and returns the series
// names on its /metrics with the label names each carries. The families are the same for every
// provider; only their provider label differs.
func exposedMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	ctx := context.Background()
	conf := filepath.Join(t.TempDir(), "cloud.conf")
	os.WriteFile(conf, []byte("[Global]\nregion = dc1\n\n[Instance \"rules-node-1\"]\ninternal-ip = 10.0.0.21\n\n[Pool \"default\"]\ncidr = 192.0.2.32/28\n"), 0o600)
	c, err := env.StartCCM(ctx, testenv.CCMOptions{Name: "ccm-rules", Provider: "dummy", CloudConfig: conf,
		Binary: filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-dummy"), Kubeconfig: env.KubeconfigPath,
		Args: []string{"--leader-elect-resource-name=ccm-rules-test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("ccm-rules log (last 40 lines):\n%s", c.Tail(40))
		}
	})
	if err := testenv.RegisterNode(ctx, env.Client, "rules-node-1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Client.CoreV1().Nodes().Delete(ctx, "rules-node-1", metav1.DeleteOptions{}) })
	testenv.Eventually(t, 30*time.Second, "Node rules-node-1 initialised", func() (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, "rules-node-1", metav1.GetOptions{})
		return err == nil && testenv.Initialised(n), err
	})
	lb(t, "rules-lb", "192.0.2.")
	// The admin token: ccm delegates /metrics to the API server, where it is system:masters.
	code, body, err := c.Get("/metrics", env.AdminToken)
	if err != nil || code != 200 {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	out := map[string]map[string]bool{}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, l := range strings.Split(body, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]bool{}
		}
		for _, lm := range label.FindAllStringSubmatch(m[2], -1) {
			out[m[1]][lm[1]] = true
		}
	}
	for _, want := range []string{"ccm_reconcile_total", "ccm_cloud_api_requests_total"} {
		if out[want] == nil {
			t.Fatalf("ccm's /metrics has no %s after a Node and a Service: the scrape is not what the test thinks", want)
		}
	}
	return out
}
