package aws

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// captureNotices replaces logNotice for the test and returns what it was called with.
func captureNotices(t *testing.T) *[]string {
	t.Helper()
	var got []string
	old := logNotice
	logNotice = func(msg string) { got = append(got, msg) }
	t.Cleanup(func() { logNotice = old })
	return &got
}

const overrideBase = "[ServiceOverride \"o\"]\nService = ec2\nURL = https://ec2.example.com\n"

// withKey is a complete config (Region, cluster ID, one override) with key = value in section,
// and the line the key is on. The keys the row may replace are left out of the base.
func withKey(section, key, value string) (string, int) {
	conf := "[Global]\n"
	if section != secGlobal || (key != "Region" && key != "Zone") {
		conf += "Region = us-east-1\n"
	}
	if section != secGlobal || (key != "KubernetesClusterID" && key != "KubernetesClusterTag") {
		conf += "KubernetesClusterID = c\n"
	}
	if section == secGlobal {
		conf += key + " = " + value + "\n"
		return conf + overrideBase, strings.Count(conf, "\n")
	}
	for _, l := range strings.SplitAfter(overrideBase, "\n") {
		if !strings.HasPrefix(l, key+" =") {
			conf += l
		}
	}
	conf += key + " = " + value + "\n"
	return conf, strings.Count(conf, "\n")
}

func fieldOf(t *testing.T, c *Config, section, key string) reflect.Value {
	t.Helper()
	ss := config.SectionValues(reflect.ValueOf(c).Elem(), section)
	if len(ss) != 1 {
		t.Fatalf("section %s: %d values", section, len(ss))
	}
	f, ok := config.FieldByKey(ss[0].Value, key)
	if !ok {
		t.Fatalf("no config field reads [%s] %s", section, key)
	}
	return f
}

// Every row of the table: the key has a field, parses, and does what its status says.
func TestUpstreamKeyTable(t *testing.T) {
	base, err := New(strings.NewReader("[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n" + overrideBase))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range upstreamKeys {
		id := k.Section + "/" + k.Key
		t.Run(id, func(t *testing.T) {
			if seen[id] {
				t.Fatalf("%s is in the table twice", id)
			}
			seen[id] = true
			if k.Status != config.Implemented && (k.Why == "" || k.Instead == "") {
				t.Fatal("row needs a reason and advice")
			}
			if k.Status == config.Unsupported {
				t.Fatal("the aws table refuses nothing: implement the key or report it")
			}
			logged := captureNotices(t)
			conf, line := withKey(k.Section, k.Key, k.Example)
			c, err := New(strings.NewReader(conf))
			if err != nil {
				t.Fatalf("config with %s = %s: %v", k.Key, k.Example, err)
			}
			switch k.Status {
			case config.Implemented:
				if n := c.cfg.Notices(); len(n) != 0 || len(*logged) != 0 {
					t.Errorf("implemented key reported: %q %q", n, *logged)
				}
				got, was := fieldOf(t, &c.cfg, k.Section, k.Key), fieldOf(t, &base.cfg, k.Section, k.Key)
				if reflect.DeepEqual(got.Interface(), was.Interface()) {
					t.Errorf("%s = %s did not take effect (still %v)", k.Key, k.Example, got.Interface())
				}
			case config.Unused:
				n := c.cfg.Notices()
				if len(n) != 1 || len(*logged) != 1 || n[0] != (*logged)[0] {
					t.Fatalf("want exactly one report, got notices %q, logged %q", n, *logged)
				}
				for _, w := range []string{"[" + k.Section + "] " + k.Key + ": read by the upstream CCM, not used by ccm: ", k.Why, k.Instead} {
					if !strings.Contains(n[0], w) {
						t.Errorf("report %q lacks %q", n[0], w)
					}
				}
				// check-config says it too (its output is the log), and the line is the key's.
				_ = line
			}
		})
	}
	// Every field of ccm's config that upstream does not have is ccm's own, on purpose: the
	// table and this list together name every key ccm accepts.
	own := map[string]bool{"NodeNameTag": true, "CredentialsFile": true, "InstanceCacheTTL": true,
		"AllowedResourceNamespaces": true, "AllowedResourceIDs": true, "NodeSecurityGroupRulesPerNamespace": true}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(base.cfg.Global)) {
		if f.Anonymous || !f.IsExported() || own[f.Name] {
			continue
		}
		if !seen[secGlobal+"/"+f.Name] {
			t.Errorf("[Global] %s is neither in the upstream table nor one of ccm's own keys", f.Name)
		}
	}
}

// [ServiceOverride] Service: the SDK v2 service IDs upstream compares with and the endpoint
// names; services ccm does not call are reported; other names fail with their line.
func TestServiceOverrideNames(t *testing.T) {
	for _, name := range []string{"EC2", "ec2", `"Elastic Load Balancing"`, "elasticloadbalancing", "elb",
		`"Elastic Load Balancing v2"`, "elasticloadbalancingv2", "STS", "sts", "ec2imds"} {
		logged := captureNotices(t)
		conf, _ := withKey(secOverride, "Service", name)
		c, err := New(strings.NewReader(conf))
		if err != nil || len(c.cfg.Notices()) != 0 || len(*logged) != 0 {
			t.Errorf("Service = %s: %v, reports %q", name, err, *logged)
		}
	}
	for _, name := range []string{"KMS", "kms", `"Auto Scaling"`, "autoscaling", "S3", "s3"} {
		logged := captureNotices(t)
		conf, _ := withKey(secOverride, "Service", name)
		c, err := New(strings.NewReader(conf))
		if err != nil || len(c.cfg.Notices()) != 1 || len(*logged) != 1 ||
			!strings.Contains((*logged)[0], `[ServiceOverride "o"] Service: read by the upstream CCM, not used by ccm: ccm does not call`) {
			t.Errorf("Service = %s: %v, reports %q", name, err, *logged)
		}
	}
	for _, name := range []string{"SQS", "ec-2", `"Elastic Load Balancer"`, `"Elastic Load Balancing v3"`} {
		conf, line := withKey(secOverride, "Service", name)
		_, err := New(strings.NewReader(conf))
		want := fmt.Sprintf("line %d: [ServiceOverride \"o\"] Service: %s is not a service the upstream CCM or ccm calls", line, `"`+strings.Trim(name, `"`)+`"`)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Service = %s: %v\nwant %q", name, err, want)
		}
	}
	// Two sections for one service and region: which one wins would be chance.
	conf := "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n" + overrideBase + "[ServiceOverride \"p\"]\nService = EC2\nURL = https://other.example.com\n"
	if _, err := New(strings.NewReader(conf)); err == nil || !strings.Contains(err.Error(), `[ServiceOverride "p"] Service: EC2 is overridden for region "" by [ServiceOverride "o"] too`) {
		t.Errorf("duplicate: %v", err)
	}
	// A section for another region is not used, as upstream; one without Region is.
	conf = "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"w\"]\nService = EC2\nRegion = us-west-2\nURL = https://west.example.com\n" +
		"[ServiceOverride \"e\"]\nService = \"Elastic Load Balancing\"\nRegion = us-east-1\nURL = https://elb.example.com\n"
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	if o := c.cfg.override(serviceEC2); o != nil {
		t.Errorf("the us-west-2 override applies in us-east-1: %+v", o)
	}
	if n := c.cfg.Notices(); len(n) != 1 || !strings.HasPrefix(n[0], `[ServiceOverride "w"] Region: us-west-2 is not this cloud's region us-east-1, so the section is not used`) {
		t.Errorf("reports %q", n)
	}
	if c.cfg.endpoint(serviceELB) != "https://elb.example.com" || c.cfg.override(serviceELBv2, serviceELB) == nil {
		t.Errorf("the us-east-1 ELB override does not apply")
	}
}

// The harness's config written with the SDK v2 service IDs drives the same clients at the fake.
func TestServiceOverrideSDKIDsReachTheFake(t *testing.T) {
	h := newHarness(t, "sdkids")
	cfg := strings.Replace(strings.Replace(h.cfg, "Service = ec2\n", "Service = EC2\n", 1),
		"Service = elasticloadbalancing\n", "Service = \"Elastic Load Balancing\"\n", 1)
	if !strings.Contains(cfg, "EC2") || !strings.Contains(cfg, "Elastic Load Balancing") {
		t.Fatal("the harness's config changed shape")
	}
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(nil, nil)
	_, md := h.machine("sdk-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sdk-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	lb, _ := c.LoadBalancer()
	svc := lbService("web", nil)
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := lb.EnsureLoadBalancer(context.Background(), "x", svc, []*v1.Node{node}); err != nil {
		t.Fatal(err)
	}
	if calls := h.fake.Operations(); calls["ec2:DescribeInstances"] == 0 || calls["elb:CreateLoadBalancer"] != 1 {
		t.Errorf("calls at the fake %v", calls)
	}
}

// SourceARN goes with RoleARN's AssumeRole as x-amz-source-arn, the role's account as
// x-amz-source-account (upstream sends both), so a trust policy with those conditions holds.
func TestSourceARN(t *testing.T) {
	const source = "arn:aws:eks:us-east-1:123456789012:cluster/prod"
	for _, tc := range []struct{ extra, wantARN string }{{"SourceARN = " + source + "\n", source}, {"", ""}} {
		h := newHarness(t, "source")
		cfg := strings.Replace(h.cfg, "[Global]\n", "[Global]\nRoleARN = "+testRole+"\n"+tc.extra, 1) +
			"\n[ServiceOverride \"3\"]\nService = STS\nURL = " + h.fake.URL() + "\n"
		c, err := New(strings.NewReader(cfg))
		if err != nil {
			t.Fatal(err)
		}
		c.Initialize(nil, nil)
		_, md := h.machine("src-a")
		inst, _ := c.InstancesV2()
		if _, err := inst.InstanceExists(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "src-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}); err != nil {
			t.Fatal(err)
		}
		got := h.fake.AssumeRoleSources()
		if len(got) != 1 || got[0] != [2]string{"123456789012", tc.wantARN} {
			t.Errorf("SourceARN %q: AssumeRole headers %q", tc.wantARN, got)
		}
	}
}

// ClusterServiceLoadBalancerHealthProbeMode = Shared: Services with externalTrafficPolicy
// Cluster are health-checked on kube-proxy, on classic ELBs and NLBs, and the nodes admit it;
// Local Services keep their health check NodePort.
func TestSharedHealthProbe(t *testing.T) {
	for _, tc := range []struct {
		extra, classic, nlb string
		port                int
	}{
		{"", "TCP:30080", "TCP:traffic-port:", 0},
		{"ClusterServiceLoadBalancerHealthProbeMode = ServiceNodePort\n", "TCP:30080", "TCP:traffic-port:", 0},
		{"ClusterServiceLoadBalancerHealthProbeMode = Shared\nClusterServiceSharedLoadBalancerHealthProbePort = 0\n", "HTTP:10256/healthz", "HTTP:10256:/healthz", 10256},
		{"ClusterServiceLoadBalancerHealthProbeMode = Shared\nClusterServiceSharedLoadBalancerHealthProbePort = 10257\nClusterServiceSharedLoadBalancerHealthProbePath = /livez\n", "HTTP:10257/livez", "HTTP:10257:/livez", 10257},
	} {
		h := newHarness(t, "probe")
		c := h.cloud(t, "[Global]\n"+tc.extra)
		lb, _ := c.LoadBalancer()
		_, md := h.machine("probe-a")
		nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "probe-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
		classic := lbService("classic", nil)
		classic.Spec.Ports = classic.Spec.Ports[:1]
		nlb := lbService("net", map[string]string{annotations.Prefix + "type": "nlb"})
		nlb.Spec.Ports = nlb.Spec.Ports[:1]
		local := lbService("local", nil)
		local.Spec.Ports = local.Spec.Ports[:1]
		local.Spec.Ports[0].NodePort = 30081
		local.Spec.ExternalTrafficPolicy, local.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
		for _, svc := range []*v1.Service{classic, nlb, local} {
			if _, err := lb.EnsureLoadBalancer(context.Background(), "x", svc, nodes); err != nil {
				if _, err = lb.EnsureLoadBalancer(context.Background(), "x", svc, nodes); err != nil { // NLB provisioning
					t.Fatalf("%s: %v", svc.Name, err)
				}
			}
		}
		elb, _ := h.fake.ClassicLB(c.lb.name(classic))
		if elb.HealthCheck.Target != tc.classic {
			t.Errorf("%q: classic health check %s, want %s", tc.extra, elb.HealthCheck.Target, tc.classic)
		}
		if l, _ := h.fake.ClassicLB(c.lb.name(local)); l.HealthCheck.Target != "HTTP:32000/healthz" {
			t.Errorf("%q: Local Service health check %s", tc.extra, l.HealthCheck.Target)
		}
		_, _, tgs, ok := h.fake.NLBByName(c.lb.name(nlb))
		if !ok || len(tgs) != 1 || tgs[0].HealthProtocol+":"+tgs[0].HealthPort+":"+tgs[0].HealthPath != tc.nlb {
			t.Errorf("%q: NLB target groups %+v, want health %s", tc.extra, tgs, tc.nlb)
		}
		g, _ := h.fake.Group(fakeaws.NodeGroup)
		admitted := 0
		for _, r := range g.Rules {
			if r.From == tc.port && r.To == tc.port {
				admitted++
			}
		}
		if (tc.port != 0) != (admitted >= 2) { // from the ELB's group and for the NLB
			t.Errorf("%q: node group rules for port %d: %d (%v)", tc.extra, tc.port, admitted, g.Rules)
		}
	}
	for _, bad := range []string{"ClusterServiceLoadBalancerHealthProbeMode = shared\n", "ClusterServiceSharedLoadBalancerHealthProbePort = 70000\n",
		"ClusterServiceSharedLoadBalancerHealthProbePath = healthz\n"} {
		if _, err := New(strings.NewReader("[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 4: [Global] ClusterService") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A name neither upstream nor ccm knows still fails, with its line.
func TestUpstreamTyposStillFail(t *testing.T) {
	base := "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n"
	for _, tc := range []struct{ conf, want string }{
		{base + "SourceArn2 = x\n", "line 4: [Global] SourceArn2: unknown key"},
		{base + "NLBSecurityGroupModes = Managed\n", "line 4: [Global] NLBSecurityGroupModes: unknown key"},
		{base + "ClusterServiceLoadBalancerHealthProbe = Shared\n", "line 4: [Global] ClusterServiceLoadBalancerHealthProbe: unknown key"},
		{base + "DisableStrictZoneChecks = true\n", "line 4: [Global] DisableStrictZoneChecks: unknown key"},
		{base + "SubnetIDs = subnet-1\n", "line 4: [Global] SubnetIDs: unknown key"},
		{base + "[ServiceOverride \"1\"]\nService = ec2\nURL = https://x\nSigningRegon = us-east-1\n", `line 7: [ServiceOverride "1"] SigningRegon: unknown key`},
		{base + "[Metadata]\n", "line 4: [Metadata] unknown section"},
		// Values upstream could not parse either.
		{base + "DisableStrictZoneCheck = maybe\n", "line 4: [Global] DisableStrictZoneCheck: "},
		{base + "ClusterServiceSharedLoadBalancerHealthProbePort = http\n", "line 4: [Global] ClusterServiceSharedLoadBalancerHealthProbePort: "},
	} {
		_, err := New(strings.NewReader(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

const docsPath = "../../docs/providers/aws.md"
const docsBegin = "<!-- upstream-keys:begin (generated from providers/aws/upstreamkeys.go: UPDATE_DOCS=1 go test -run TestUpstreamKeysDocumented .) -->\n"
const docsEnd = "<!-- upstream-keys:end -->\n"

// The docs carry the table as the code has it. UPDATE_DOCS=1 rewrites it.
func TestUpstreamKeysDocumented(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the upstream-keys markers", docsPath)
	}
	want := upstreamKeysMarkdown()
	if got := doc[i+len(docsBegin) : j]; got != want {
		if os.Getenv("UPDATE_DOCS") != "" {
			if err := os.WriteFile(docsPath, []byte(doc[:i+len(docsBegin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the upstream key table in %s is out of date; run UPDATE_DOCS=1 go test -run TestUpstreamKeysDocumented .", docsPath)
	}
	for _, k := range upstreamKeys {
		if !strings.Contains(doc, "| `"+k.Key+"` |") {
			t.Errorf("%s: [%s] %s is not in the table", docsPath, k.Section, k.Key)
		}
	}
}

// The corpus: files shaped like the upstream CCM's documented configs and generated ones
// (kops, OpenShift, the docs' examples, the no-config start) all pass `ccm check-config`
// (provider.CheckConfig, the same code), with the reports each should give; the typo cases
// fail naming their line.
func TestUpstreamConfigCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/upstream/*.conf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/upstream/*.conf: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			logged := captureNotices(t)
			if err := provider.CheckConfig(ProviderName, f); err != nil {
				t.Fatalf("check-config %s: %v", f, err)
			}
			want := wantReports(t, f)
			if len(*logged) != len(want) {
				t.Errorf("%d reports, want %d:\n%s", len(*logged), len(want), strings.Join(*logged, "\n"))
			}
			for i := range want {
				if i < len(*logged) && !strings.HasPrefix((*logged)[i], want[i]) {
					t.Errorf("report %d: %q\nwant it to start %q", i, (*logged)[i], want[i])
				}
			}
		})
	}
	// No --cloud-config at all, as the upstream chart runs: valid, two reports.
	t.Run("no config", func(t *testing.T) {
		logged := captureNotices(t)
		if err := provider.CheckConfig(ProviderName, ""); err != nil {
			t.Fatal(err)
		}
		if len(*logged) != 2 || !strings.HasPrefix((*logged)[0], "[Global] Region: not set") || !strings.HasPrefix((*logged)[1], "[Global] KubernetesClusterID: not set") {
			t.Errorf("reports %q", *logged)
		}
	})
	bad, _ := filepath.Glob("testdata/upstream/typos/*.conf")
	if len(bad) == 0 {
		t.Fatal("no testdata/upstream/typos/*.conf")
	}
	for _, f := range bad {
		t.Run("typos/"+filepath.Base(f), func(t *testing.T) {
			captureNotices(t)
			err := provider.CheckConfig(ProviderName, f)
			for _, w := range wantReports(t, f) {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("check-config: %v\nwant %q", err, w)
				}
			}
		})
	}
}

// wantReports reads the "; want: ..." comment lines of a corpus file, in order.
func wantReports(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if w, ok := strings.CutPrefix(l, "; want: "); ok {
			out = append(out, w)
		}
	}
	return out
}

// [ServiceOverride] SigningMethod: upstream has the field but never reads it (its config.go
// documents "SigningMethod = signing_method"), so any value loads; one
// other than v4 is reported once, without repeating the value.
func TestSigningMethodAnyValueAsUpstream(t *testing.T) {
	for value, reported := range map[string]bool{"v4": false, "V4": false, "signing_method": true, "hmac": true, "v2": true} {
		logged := captureNotices(t)
		conf, _ := withKey(secOverride, "SigningMethod", value)
		c, err := New(strings.NewReader(conf))
		if err != nil {
			t.Errorf("SigningMethod = %s: %v; want it accepted as upstream accepts it", value, err)
			continue
		}
		n := c.cfg.Notices()
		if !reported {
			if len(n) != 0 || len(*logged) != 0 {
				t.Errorf("SigningMethod = %s reported: %q", value, n)
			}
			continue
		}
		want := `[ServiceOverride "o"] SigningMethod: read by the upstream CCM, not used by ccm: ` + signingMethodNote
		if len(n) != 1 || len(*logged) != 1 || !strings.Contains(n[0], want) || strings.Contains(n[0], value) {
			t.Errorf("SigningMethod = %s: notices %q, logged %q; want one %q without the value", value, n, *logged, want)
		}
	}
}
