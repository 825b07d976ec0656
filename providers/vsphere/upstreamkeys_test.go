package vsphere

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/soap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/provider"
)

// isolate runs a test without the process environment and the default secrets directory,
// and captures the start-up reports.
func isolate(t *testing.T, env ...string) *[]string {
	t.Helper()
	var got []string
	oldEnv, oldDir, oldLog := environ, defaultSecretsDirectory, logNotice
	environ = func() []string { return env }
	defaultSecretsDirectory = ""
	logNotice = func(msg string) { got = append(got, msg) }
	t.Cleanup(func() { environ, defaultSecretsDirectory, logNotice = oldEnv, oldDir, oldLog })
	return &got
}

// tableConfig renders a config with one vCenter "vc.example.com" (credentials in [Global])
// plus key = value in section, in INI or YAML, and the line the key is on.
func tableConfig(k upstreamKey, value string, yaml bool) (string, int) {
	// Keys that only mean something in pairs get their partner.
	partner := map[string]string{"secret-name": "secret-namespace", "secret-namespace": "secret-name"}
	extra := map[string]string{}
	if p, ok := partner[k.Key]; ok && (k.Section == secGlobal || k.Section == secVC) {
		extra[p] = "x"
	}
	if !yaml {
		secs := map[string][]string{secGlobal: {"user = u", "password = p"}, secVC: nil}
		order := []string{secGlobal, secVC}
		if _, ok := secs[k.Section]; !ok {
			order = append(order, k.Section)
		}
		kv := k.Key + " = " + value
		secs[k.Section] = append(secs[k.Section], kv)
		for p, v := range extra {
			secs[k.Section] = append(secs[k.Section], p+" = "+v)
		}
		var b strings.Builder
		line := 0
		n := 0
		for _, s := range order {
			switch s {
			case secVC:
				b.WriteString("[VirtualCenter \"vc.example.com\"]\n")
			case secLBClass:
				b.WriteString("[LoadBalancerClass \"c\"]\n")
			default:
				b.WriteString("[" + s + "]\n")
			}
			n++
			for _, l := range secs[s] {
				b.WriteString(l + "\n")
				n++
				if l == kv && s == k.Section {
					line = n
				}
			}
		}
		return b.String(), line
	}
	yv := strings.Trim(value, `"`)
	switch k.yamlKey {
	case "datacenters", "ipFamily":
		yv = "[" + yv + "]"
	case "tags":
		yv = "{owner: team}"
	case "port", "soapRoundtripCount":
	default:
		if yv != "true" && yv != "false" {
			yv = fmt.Sprintf("%q", yv)
		}
	}
	ykv := k.yamlKey + ": " + yv
	lines := []string{"global:", "  user: u", "  password: p"}
	if k.Section == secGlobal && (k.yamlKey == "user" || k.yamlKey == "password") {
		lines = []string{"global:", "  user: u"}
		if k.yamlKey == "user" {
			lines = []string{"global:", "  password: p"}
		}
	}
	vc := []string{"vcenter:", "  vc:", "    server: vc.example.com"}
	var at int
	add := func(indent string, dst *[]string) {
		*dst = append(*dst, indent+ykv)
		at = len(*dst)
		for p := range extra {
			*dst = append(*dst, indent+(map[string]string{"secret-name": "secretName", "secret-namespace": "secretNamespace"})[p]+": x")
		}
	}
	switch k.Section {
	case secGlobal:
		add("  ", &lines)
		return strings.Join(append(lines, vc...), "\n") + "\n", at
	case secVC:
		if k.yamlKey == "server" {
			vc = vc[:2]
		}
		add("    ", &vc)
		return strings.Join(append(lines, vc...), "\n") + "\n", len(lines) + at
	}
	out := append(lines, vc...)
	out = append(out, yamlSectionOf[k.Section]+":")
	indent := "  "
	if k.Section == secLBClass {
		out = append(out, "  c:")
		indent = "    "
	}
	add(indent, &out)
	return strings.Join(out, "\n") + "\n", at
}

func sectionOf(cfg *Config, section string) reflect.Value {
	switch section {
	case secVC:
		for _, vc := range cfg.VirtualCenter {
			return reflect.ValueOf(vc).Elem()
		}
		return reflect.ValueOf(&VirtualCenterConfig{}).Elem()
	case secLBClass:
		if c := cfg.LoadBalancerClass["c"]; c != nil {
			return reflect.ValueOf(c).Elem()
		}
		return reflect.ValueOf(&upstreamLBClass{}).Elem()
	}
	return reflect.ValueOf(cfg).Elem().FieldByName(section)
}

// Every row of the table, in both forms where upstream has both: the key has a field, its
// example parses, an implemented key takes effect without a report, an unused one gives
// exactly one report naming the key, its line, why and what to do.
func TestUpstreamKeyTable(t *testing.T) {
	isolate(t)
	seen := map[string]bool{}
	for _, k := range upstreamKeys {
		id := k.Section + "/" + k.Key
		if seen[id] {
			t.Fatalf("%s is in the table twice", id)
		}
		seen[id] = true
		for _, yaml := range []bool{false, true} {
			if yaml && k.yamlKey == "" {
				continue
			}
			name := id
			if yaml {
				name += "/yaml"
			}
			t.Run(name, func(t *testing.T) {
				logged := isolate(t)
				if k.Status == config.Unused && (k.Why == "" || k.Instead == "") {
					t.Fatalf("row needs a reason and advice")
				}
				base, _ := readConfig(strings.NewReader("[Global]\nuser = u\npassword = p\n[VirtualCenter \"vc.example.com\"]\n"))
				if _, ok := config.FieldByKey(sectionOf(base, k.Section), k.Key); !ok {
					t.Fatalf("no config field reads [%s] %s", k.Section, k.Key)
				}
				conf, line := tableConfig(k, k.Example, yaml)
				c, err := readConfig(strings.NewReader(conf))
				if err != nil {
					t.Fatalf("%s\n%v", conf, err)
				}
				n := c.Notices()
				switch k.Status {
				case config.Implemented:
					if len(n) != 0 || len(*logged) != 0 {
						t.Errorf("config.Implemented key reported: %q", n)
					}
					var got reflect.Value
					if k.Section == secGlobal && k.Key == "server" {
						if len(c.vcenters()) != 2 {
							t.Errorf("[Global] server did not add a vCenter: %+v", c.vcenters())
						}
						return
					}
					got, _ = config.FieldByKey(sectionOf(c, k.Section), k.Key)
					was, _ := config.FieldByKey(sectionOf(base, k.Section), k.Key)
					if reflect.DeepEqual(got.Interface(), was.Interface()) {
						t.Errorf("%s\n%s = %s did not take effect (still %v)", conf, k.Key, k.Example, got.Interface())
					}
				case config.Unused:
					if len(n) != 1 || len(*logged) != 1 || n[0] != (*logged)[0] {
						t.Fatalf("%s\nwant exactly one report, got notices %q, logged %q", conf, n, *logged)
					}
					want := fmt.Sprintf("line %d: ", line)
					switch {
					case yaml:
						sub := ""
						if k.Section == secVC {
							sub = "vc"
						} else if k.Section == secLBClass {
							sub = "c"
						}
						want += yamlPath(k, sub)
					case k.Section == secVC:
						want += `[VirtualCenter "vc.example.com"] ` + k.Key
					case k.Section == secLBClass:
						want += `[LoadBalancerClass "c"] ` + k.Key
					default:
						want += "[" + k.Section + "] " + k.Key
					}
					for _, w := range []string{want + ": read by the upstream CCM, not used by ccm: ", k.Why, k.Instead} {
						if !strings.Contains(n[0], w) {
							t.Errorf("%s\nreport %q lacks %q", conf, n[0], w)
						}
					}
					if v := strings.Trim(k.Example, `"`); len(v) > 3 && !strings.Contains(k.Why+k.Instead, v) && strings.Contains(n[0], v) {
						t.Errorf("report echoes the value %q: %s", v, n[0])
					}
				}
			})
		}
	}
}

// A name neither upstream nor ccm knows still fails, with its line; so does a value upstream
// could not parse either.
func TestUpstreamTyposStillFail(t *testing.T) {
	isolate(t)
	const base = "[Global]\nuser = u\npassword = p\nserver = vc\n"
	for _, tc := range []struct{ conf, want string }{
		{base + "api-bindng = :1\n", "line 5: [Global] api-bindng: unknown key"},
		{base + "serviceaccount = x\n", "line 5: [Global] serviceaccount: unknown key"},
		{base + "[LoadBalancerClass \"c\"]\nsize = SMALL\n", `line 6: [LoadBalancerClass "c"] size: unknown key`},
		{base + "[Route]\nrouter-id = r\n", "line 6: [Route] router-id: unknown key"},
		{base + "[Disk]\nscsi-controller-type = pvscsi\n", "line 6: [Disk] scsi-controller-type: unknown key"},
		{base + "[Workspace]\nresource-pool-path = x\n", "line 6: [Workspace] resource-pool-path: unknown key"},
		{base + "[NSX]\nhost = h\n", "line 5: [NSX] unknown section"},
		{base + "api-disable = maybe\n", "line 5: [Global] api-disable: "},
		{base + "[LoadBalancer]\nsnat-disabled = maybe\n", "line 6: [LoadBalancer] snat-disabled: "},
		{"global:\n  user: u\n  password: p\n  server: vc\n  secretsDir: x\n", "line 5: secretsDir: unknown key"},
		{"global:\n  user: u\n  password: p\n  server: vc\nroute:\n  routerID: x\n", "line 6: routerID: unknown key"},
	} {
		_, err := readConfig(strings.NewReader(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\ngot %v, want %q", tc.conf, err, tc.want)
		}
	}
}

// The corpus: files shaped like the upstream manifests' and chart's vsphere.conf and its
// documented examples pass `ccm check-config` (the provider's CheckConfig path), each with
// exactly the reports listed, and resolve to the vCenters upstream would use.
func TestUpstreamCorpus(t *testing.T) {
	type vc struct {
		name, server, user, secret, dir string
		insecure, thumbprint            bool
	}
	multiVC := []vc{{name: "10.0.0.3", server: "10.0.0.3", secret: "kube-system/eu-secret", insecure: true},
		{name: "tenant1", server: "10.0.0.1", secret: "kube-system/tenant1-secret", insecure: true},
		{name: "tenant2", server: "10.0.0.2", secret: "kube-system/tenant2-secret", insecure: true}}
	cases := map[string]struct {
		notices []string // each report's beginning, in order
		vcs     []vc
	}{
		"manifests-vsphere.conf": {
			[]string{"line 8: [Global] service-account: read by", `line 25: [VirtualCenter "10.0.0.1"] insecure-flag: false has no effect while [Global] insecure-flag (line 14) = true`},
			[]vc{{name: "1.2.3.4", server: "1.2.3.4", user: "k8s@vsphere.local", secret: "kube-system/vsphere-cloud-secret", insecure: true},
				{name: "10.0.0.1", server: "10.0.0.1", secret: "kube-system/vsphere-cloud-secret", insecure: true}}},
		"integration-vsphere.conf": {
			[]string{"line 5: [Global] service-account: read by"},
			[]vc{{name: "10.96.96.96", server: "10.96.96.96", secret: "kube-system/vsphere-cloud-secret", insecure: true}}},
		"global-server-and-vc.conf": {nil,
			[]vc{{name: "10.0.0.1", server: "10.0.0.1", user: "viadmin@vsphere.local", thumbprint: true}}},
		"vc-server-key.conf": {nil,
			[]vc{{server: "vc-west.example.com", user: "k8s@vsphere.local", thumbprint: true}, {name: "east", server: "10.0.0.5", user: "k8s@vsphere.local", thumbprint: true}}},
		"secrets-directory.conf": {nil,
			[]vc{{name: "east", server: "10.0.0.5", dir: "testdata/upstream/secrets"}, {name: "vc.example.com", server: "vc.example.com", dir: "testdata/upstream/secrets"}}},
		"api.conf": {
			[]string{"line 6: [Global] api-disable: read by", "line 7: [Global] api-binding: read by"},
			[]vc{{server: "vc.example.com", user: "u@vsphere.local"}}},
		"nsxt.conf": {
			[]string{"line 10: [LoadBalancer] ip-pool-name: read by", "line 11: [LoadBalancer] size: read by", "line 12: [LoadBalancer] tier1-gateway-path: read by",
				"line 13: [LoadBalancer] tcp-app-profile-name: read by", "line 14: [LoadBalancer] udp-app-profile-name: read by", "line 15: [LoadBalancer] tags: read by",
				`line 18: [LoadBalancerClass "public"] ip-pool-name: read by`, `line 21: [LoadBalancerClass "private"] ip-pool-id: read by`,
				"line 24: [NSXT] user: read by", "line 25: [NSXT] password: read by", "line 26: [NSXT] host: read by", "line 27: [NSXT] insecure-flag: read by",
				"line 30: [Route] router-path: read by"},
			[]vc{{name: "vc.example.com", server: "vc.example.com", user: "u@vsphere.local", insecure: true}}},
		"in-tree.conf": {
			[]string{"line 7: [Global] datacenter: read by", "line 9: [Global] datastore: read by", "line 10: [Global] working-dir: read by",
				"line 12: [Global] secret-not-managed: read by", "line 17: [Workspace] server: read by", "line 18: [Workspace] datacenter: read by",
				"line 19: [Workspace] folder: read by", "line 20: [Workspace] default-datastore: read by", "line 21: [Workspace] resourcepool-path: read by",
				"line 24: [Disk] scsicontrollertype: read by", "line 27: [Network] public-network: read by"},
			[]vc{{name: "10.0.0.1", server: "10.0.0.1", user: "u@vsphere.local", insecure: true}}},
		// upstream's documented full example: insecure-flag = "1" switches off the ca-file and
		// thumbprint it also sets, in govmomi and so in both CCMs; ccm says so.
		"documented-spec.conf": {
			[]string{"line 11: [Global] ca-file: is ignored: [Global] insecure-flag (line 6) = true", "line 12: [Global] thumbprint: is ignored: [Global] insecure-flag (line 6) = true"},
			[]vc{{name: "10.0.0.1", server: "10.0.0.1", user: "viadmin@vmare.local", insecure: true, thumbprint: true}}},
		"multi-vc-secrets.conf": {nil, multiVC},
		"multi-vc-secrets.yaml": {nil, multiVC},
		"chart-insecure.yaml": {nil,
			[]vc{{name: "vcenter.local", server: "vcenter.local", secret: "kube-system/vsphere-cloud-secret", insecure: true}}},
		"chart-ca-file.yaml": {nil,
			[]vc{{name: "vc.example.com", server: "vc.example.com", secret: "kube-system/vsphere-cloud-secret"}}},
		"chart-thumbprint.yaml": {nil,
			[]vc{{name: "vcenter.local", server: "vcenter.local", secret: "kube-system/vsphere-cloud-secret", thumbprint: true}}},
		"nsxt.yaml": {
			[]string{"line 8: global.apiDisable: read by", "line 9: global.apiBinding: read by", "line 13: vcenter.tenant-a.tenantref: read by",
				"line 14: vcenter.tenant-a.secretref: read by", "line 16: loadBalancer.ipPoolName: read by", "line 17: loadBalancer.lbServiceId: read by",
				"line 18: loadBalancer.size: read by", "line 19: loadBalancer.tcpAppProfileName: read by", "line 20: loadBalancer.udpAppProfileName: read by",
				"line 21: loadBalancer.tags: read by", "line 26: loadBalancerClass.public.ipPoolName: read by", "line 28: loadBalancerClass.private.ipPoolName: read by",
				"line 30: nsxt.user: read by", "line 31: nsxt.password: read by", "line 32: nsxt.host: read by", "line 33: nsxt.insecureFlag: read by",
				"line 35: route.routerPath: read by"},
			[]vc{{server: "vc.example.com", user: "u@vsphere.local", dir: "testdata/upstream/secrets"}, {name: "tenant-a", server: "10.0.0.5", dir: "testdata/upstream/secrets"}}},
	}
	files, _ := filepath.Glob("testdata/upstream/*.conf")
	yamls, _ := filepath.Glob("testdata/upstream/*.yaml")
	files = append(files, yamls...)
	if len(files) != len(cases) {
		t.Errorf("%d files in testdata/upstream, %d cases: every file needs its case", len(files), len(cases))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := cases[filepath.Base(f)]
			if !ok {
				t.Fatalf("no case for %s", f)
			}
			logged := isolate(t)
			if err := provider.CheckConfig(ProviderName, f); err != nil {
				t.Fatalf("check-config %s: %v", f, err)
			}
			if len(*logged) != len(want.notices) {
				t.Errorf("check-config reported %d times, want %d:\n%s", len(*logged), len(want.notices), strings.Join(*logged, "\n"))
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := readConfig(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			n := c.Notices()
			if len(n) != len(want.notices) {
				t.Errorf("%d reports, want %d:\n%s", len(n), len(want.notices), strings.Join(n, "\n"))
			}
			for i := range min(len(n), len(want.notices)) {
				if !strings.HasPrefix(n[i], want.notices[i]) {
					t.Errorf("report %d:\n%s\nwant it to begin with\n%s", i, n[i], want.notices[i])
				}
			}
			var got []vc
			for _, v := range c.vcenters() {
				g := vc{name: v.Name, server: v.Server, user: v.User, dir: v.SecretsDirectory, insecure: v.Insecure, thumbprint: v.Thumbprint != ""}
				if v.SecretName != "" {
					g.secret = v.SecretNamespace + "/" + v.SecretName
				}
				got = append(got, g)
			}
			sort.Slice(got, func(i, j int) bool { return got[i].name < got[j].name })
			if !reflect.DeepEqual(got, want.vcs) {
				t.Errorf("vCenters\n got %+v\nwant %+v", got, want.vcs)
			}
		})
	}
	// The chart's ca-file spelling is the CA bundle (upstream ignores it).
	c, err := readConfig(strings.NewReader(must(os.ReadFile("testdata/upstream/chart-ca-file.yaml"))))
	if err != nil || c.vcenters()[0].CAFile != "testdata/upstream/ca.pem" {
		t.Errorf("chart ca-file: %v %+v", err, c)
	}
}

func must(b []byte, err error) string {
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Typos in upstream-shaped files fail with their line.
func TestUpstreamCorpusRefused(t *testing.T) {
	isolate(t)
	for f, want := range map[string][]string{
		"typos/global.conf":        {"line 4: [Global] servr: unknown key"},
		"typos/loadbalancer.conf":  {"line 7: [LoadBalancer] ip-pool-nam: unknown key"},
		"typos/nsxt.conf":          {"line 8: [NSXT] vmc-acess-token: unknown key"},
		"typos/section.conf":       {"line 6: [Workspce] unknown section"},
		"typos/virtualcenter.conf": {`line 6: [VirtualCenter "vc.example.com"] secret-namespce: unknown key`},
		"typos/readme-quote.yaml":  {`line 9: password": unknown key`},
		"typos/chart.yaml":         {"line 9: datacenter: unknown key"},
	} {
		err := provider.CheckConfig(ProviderName, filepath.Join("testdata/upstream", f))
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("check-config %s: got %v, want %q", f, err, w)
			}
		}
	}
	files, _ := filepath.Glob("testdata/upstream/typos/*")
	if len(files) != 7 {
		t.Errorf("%d files in typos/, 7 cases", len(files))
	}
}

// The VSPHERE_* environment, as upstream applies it.
func TestUpstreamEnvironment(t *testing.T) {
	const file = "[Global]\nuser = u\npassword = p\nserver = vc.example.com\n[VirtualCenter \"west\"]\nserver = 10.0.0.9\n"
	type want struct {
		vcs     map[string]string // name -> server/user/password/port/secret
		notices []string
		err     string
	}
	for _, tc := range []struct {
		name string
		env  []string
		want want
	}{
		{"global variables change none of the file's vCenters",
			[]string{"VSPHERE_USER=eu", "VSPHERE_PASSWORD=ep", "VSPHERE_VCENTER_PORT=444", "VSPHERE_VCENTER=other.example.com", "VSPHERE_INSECURE=true"},
			want{vcs: map[string]string{"": "vc.example.com/u/p/443", "west": "10.0.0.9/u/p/443"},
				notices: []string{"environment VSPHERE_VCENTER: read by the upstream CCM, not used by ccm", "environment VSPHERE_INSECURE: read by the upstream CCM, not used by ccm",
					"environment VSPHERE_PASSWORD: has no effect", "environment VSPHERE_USER: has no effect", "environment VSPHERE_VCENTER_PORT: has no effect"}}},
		{"a vCenter from the environment takes the global variables as defaults",
			[]string{"VSPHERE_USER=eu", "VSPHERE_PASSWORD=ep", "VSPHERE_VCENTER_PORT=444", "VSPHERE_VCENTER_A=a.example.com", "VCENTER_A_PASSWORD=ap=x"},
			want{vcs: map[string]string{"": "vc.example.com/u/p/443", "west": "10.0.0.9/u/p/443", "a.example.com": "a.example.com/eu/ap=x/444"}}},
		{"a vCenter from the environment replaces the section of that name; its server names the host",
			[]string{"VSPHERE_VCENTER_W=west", "VCENTER_W_SERVER=10.0.0.10", "VCENTER_W_SECRET_NAME=s", "VCENTER_W_SECRET_NAMESPACE=ns", "VCENTER_W_INSECURE=true"},
			want{vcs: map[string]string{"": "vc.example.com/u/p/443", "west": "10.0.0.10/u/p/443/ns/s"},
				notices: []string{"environment VCENTER_W_INSECURE: read by the upstream CCM, not used by ccm", `[VirtualCenter "west"]: replaced by environment VSPHERE_VCENTER_W`}}},
		{"secret, labels and nodes override the file",
			[]string{"VSPHERE_SECRET_NAME=s", "VSPHERE_SECRET_NAMESPACE=ns", "VSPHERE_LABEL_ZONE=z", "VSPHERE_NODES_INTERNAL_NETWORK_SUBNET_CIDR=10.0.0.0/8"},
			want{vcs: map[string]string{"": "vc.example.com/u/p/443/ns/s", "west": "10.0.0.9/u/p/443/ns/s"}}},
		{"a secrets directory that does not exist is not used, as upstream", []string{"VSPHERE_SECRETS_DIRECTORY=/nonexistent/secrets"},
			want{vcs: map[string]string{"": "vc.example.com/u/p/443", "west": "10.0.0.9/u/p/443"},
				notices: []string{"[Global] secrets-directory: is not a directory here, so it is not used"}}},
		{"bad port of an environment vCenter", []string{"VSPHERE_VCENTER_B=b", "VCENTER_B_PORT=x"},
			want{err: "environment VCENTER_B_PORT (or VSPHERE_VCENTER_PORT, or [Global] port): not a TCP port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t, tc.env...)
			c, err := readConfig(strings.NewReader(file))
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("got %v, want %q", err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, v := range c.vcenters() {
				got[v.Name] = strings.Join([]string{v.Server, v.User, v.Password, v.Port, v.SecretNamespace, v.SecretName}, "/")
				if v.Insecure {
					t.Errorf("%s is insecure", v.Server)
				}
			}
			for k, v := range got {
				got[k] = strings.TrimSuffix(v, "//")
			}
			if !reflect.DeepEqual(got, tc.want.vcs) {
				t.Errorf("vCenters\n got %q\nwant %q", got, tc.want.vcs)
			}
			n := c.Notices()
			if len(n) != len(tc.want.notices) {
				t.Errorf("reports %q, want %d", n, len(tc.want.notices))
			}
			for _, w := range tc.want.notices {
				found := false
				for _, s := range n {
					found = found || strings.HasPrefix(s, w)
				}
				if !found {
					t.Errorf("no report begins with %q: %q", w, n)
				}
			}
			for _, s := range n {
				if strings.Contains(s, "ap=x") || strings.Contains(s, "ep") && strings.Contains(s, "=ep") {
					t.Errorf("a report shows a password: %s", s)
				}
			}
			if len(tc.env) == 4 && (c.Labels.Zone != "z" || c.Nodes.InternalNetworkSubnetCIDR != "10.0.0.0/8") {
				t.Errorf("labels/nodes not overridden: %+v %+v", c.Labels, c.Nodes)
			}
		})
	}
	// The default secrets directory is used when it exists, as upstream.
	isolate(t)
	defaultSecretsDirectory = "testdata/upstream/secrets"
	c, err := readConfig(strings.NewReader(file))
	if err != nil || c.vcenters()[0].SecretsDirectory != "testdata/upstream/secrets" || len(c.Notices()) != 1 {
		t.Errorf("default secrets directory: %v %q", err, c.Notices())
	}
}

// Both credential forms upstream reads from a Secret or a secrets directory; the shared
// session manager's keys are named in the error.
func TestCredentialForms(t *testing.T) {
	for _, tc := range []struct{ host, user, pass, err string }{
		{"vc.example.com", "admin@vsphere.local", "s3cret", ""},
		{"10.0.0.5", "east-user", "east-pass", ""},
		{"other", "", "", "has no files other.username and other.password"},
	} {
		u, p, err := lookupDir("testdata/upstream/secrets", tc.host)
		if u != tc.user || p != tc.pass || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q %q %v", tc.host, u, p, err)
		}
	}
	// The same forms in a Secret.
	sc := newSecretCreds(func(string) {})
	sc.wait["kube-system/creds"] = make(chan struct{})
	close(sc.wait["kube-system/creds"])
	sc.apply(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "kube-system"}, Data: map[string][]byte{
		"server_a": []byte("10.0.0.7"), "username_a": []byte("ua"), "password_a": []byte("pa"),
		"sm.vc-session-manager-url": []byte("https://sm"), "sm.vc-session-manager-token": []byte("t")}})
	if u, p, err := sc.lookup("10.0.0.7", "kube-system", "creds"); u != "ua" || p != "pa" || err != nil {
		t.Errorf("server_<id> form: %q %q %v", u, p, err)
	}
	if _, _, err := sc.lookup("sm", "kube-system", "creds"); err == nil || !strings.Contains(err.Error(), "shared session manager") {
		t.Errorf("session manager keys in a Secret: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vc.vc-session-manager-url"), []byte("https://sm"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lookupDir(dir, "vc"); err == nil || !strings.Contains(err.Error(), "shared session manager") {
		t.Errorf("session manager keys: %v", err)
	}
}

// Against vcsim: the file's credentials are tried first and, refused, the secrets
// directory's (upstream's order); [Global] thumbprint is inherited by a [VirtualCenter]
// section (before: not inherited, so the login failed with "certificate not trusted").
func TestUpstreamCredentialsAndThumbprintAtTheWire(t *testing.T) {
	isolate(t)
	s := startSim(t)
	dir := t.TempDir()
	for k, v := range map[string]string{s.Host() + ".username": testUser, s.Host() + ".password": testPassword} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tp := soap.ThumbprintSHA1(s.Server.Certificate())
	// With a secrets directory, [Global] user and password are not inherited (upstream), so
	// the section has its own.
	conf := fmt.Sprintf("[Global]\nthumbprint = %s\nsecrets-directory = %s\n[VirtualCenter %q]\nport = %s\nuser = %q\npassword = \"wrong\"\n", tp, dir, s.Host(), s.Port(), testUser)
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.conns[0].get(t.Context()); err != nil {
		t.Fatalf("login: %v", err)
	}
	if !c.conns[0].usingFallback() {
		t.Errorf("logged in without the secrets directory")
	}
	// Without a fallback the wrong password is refused.
	conf = fmt.Sprintf("[Global]\nuser = %q\npassword = \"wrong\"\nthumbprint = %s\n[VirtualCenter %q]\nport = %s\n", testUser, tp, s.Host(), s.Port())
	c, err = New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.conns[0].get(t.Context()); err == nil || !strings.Contains(err.Error(), "login refused") {
		t.Fatalf("wrong password: %v", err)
	}
}

const docsPath = "../../docs/providers/vsphere.md"

// The docs carry both tables as the code has them. UPDATE_DOCS=1 rewrites them.
func TestUpstreamKeysDocumented(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, tbl := range []struct{ name, want string }{{"upstream-keys", upstreamKeysMarkdown()}, {"upstream-env", upstreamEnvMarkdown()}} {
		begin := "<!-- " + tbl.name + ":begin (generated from providers/vsphere: UPDATE_DOCS=1 go test -run TestUpstreamKeysDocumented .) -->\n"
		end := "<!-- " + tbl.name + ":end -->\n"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %s markers", docsPath, tbl.name)
		}
		if got := doc[i+len(begin) : j]; got != tbl.want {
			if os.Getenv("UPDATE_DOCS") == "" {
				t.Errorf("the %s table in %s is out of date; run UPDATE_DOCS=1 go test -run TestUpstreamKeysDocumented .", tbl.name, docsPath)
				continue
			}
			doc = doc[:i+len(begin)] + tbl.want + doc[j:]
		}
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
