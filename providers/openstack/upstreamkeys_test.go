package openstack

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/provider"
)

const upstreamBase = "[Global]\nauth-url = https://k:5000/v3\nusername = u\npassword = p\ntenant-name = t\napplication-credential-secret = \"s\"\n"

// withKey returns a config of upstreamBase plus key = value in section (class "c" for
// [LoadBalancerClass]) and the line the key is on.
func withKey(section, key, value string) (string, int) {
	conf := upstreamBase
	switch section {
	case secGlobal:
	case secLBClass:
		conf += "[LoadBalancerClass \"c\"]\n"
	default:
		conf += "[" + section + "]\n"
	}
	if section == secGlobal {
		conf += companions[key]
	}
	conf += key + " = " + value + "\n"
	return conf, strings.Count(conf, "\n")
}

// companions are the keys an upstream key is read with (a client certificate and its key, a
// trustee and its trust): written before it, so the key stays on the last line.
var companions = map[string]string{
	"cert-file":        "key-file = testdata/upstream/client.key\n",
	"key-file":         "cert-file = testdata/upstream/client.crt\n",
	"trustee-id":       "trust-id = tid\ntrustee-password = x\n",
	"trustee-password": "trust-id = tid\ntrustee-id = tuid\n",
	"use-clouds":       "clouds-file = testdata/upstream/clouds.yaml\ncloud = openstack\n",
}

// captureNotices replaces logNotice for the test and returns what it was called with.
func captureNotices(t *testing.T) *[]string {
	t.Helper()
	var got []string
	old := logNotice
	logNotice = func(msg string) { got = append(got, msg) }
	t.Cleanup(func() { logNotice = old })
	return &got
}

func sectionOf(cfg *Config, section string) reflect.Value {
	v := reflect.ValueOf(cfg).Elem()
	if section == secLBClass {
		if c := cfg.LoadBalancerClass["c"]; c != nil {
			return reflect.ValueOf(c).Elem()
		}
		return reflect.ValueOf(&LBClass{}).Elem()
	}
	return v.FieldByName(section)
}

// Every row of the table: the key has a field, parses, and does what its status says.
func TestUpstreamKeyTable(t *testing.T) {
	base, err := New(strings.NewReader(upstreamBase))
	if err != nil {
		t.Fatalf("base config: %v", err)
	}
	seen := map[string]bool{}
	for _, k := range upstreamKeys {
		id := k.Section + "/" + k.Key
		t.Run(id, func(t *testing.T) {
			if seen[id] {
				t.Fatalf("%s is in the table twice", id)
			}
			seen[id] = true
			if _, ok := config.FieldByKey(sectionOf(&base.cfg, k.Section), k.Key); !ok {
				t.Fatalf("no config field reads [%s] %s", k.Section, k.Key)
			}
			if k.Status != config.Implemented && (k.Why == "" || k.Instead == "") {
				t.Fatalf("row needs a reason and advice")
			}
			logged := captureNotices(t)
			conf, line := withKey(k.Section, k.Key, k.Example)
			c, err := New(strings.NewReader(conf))
			switch k.Status {
			case config.Implemented:
				if err != nil {
					t.Fatalf("config with %s = %s: %v", k.Key, k.Example, err)
				}
				if n := c.cfg.Notices(); len(n) != 0 || len(*logged) != 0 {
					t.Errorf("implemented key reported: %q %q", n, *logged)
				}
				got, _ := config.FieldByKey(sectionOf(&c.cfg, k.Section), k.Key)
				was, _ := config.FieldByKey(sectionOf(&base.cfg, k.Section), k.Key)
				if reflect.DeepEqual(got.Interface(), was.Interface()) {
					t.Errorf("%s = %s did not take effect (still %v)", k.Key, k.Example, got.Interface())
				}
			case config.Unused:
				if err != nil {
					t.Fatalf("config with %s = %s: %v", k.Key, k.Example, err)
				}
				n := c.cfg.Notices()
				if len(n) != 1 || len(*logged) != 1 || n[0] != (*logged)[0] {
					t.Fatalf("want exactly one report, got notices %q, logged %q", n, *logged)
				}
				sec := "[" + k.Section + "] "
				if k.Section == secLBClass {
					sec = `[LoadBalancerClass "c"] `
				}
				for _, w := range []string{sec + k.Key + ": read by the upstream CCM, not used by ccm: ", k.Why, k.Instead} {
					if !strings.Contains(n[0], w) {
						t.Errorf("report %q lacks %q", n[0], w)
					}
				}
			case config.Unsupported:
				if err == nil {
					t.Fatalf("%s = %s accepted; want an error", k.Key, k.Example)
				}
				if len(*logged) != 0 {
					t.Errorf("a refused config logged notices: %q", *logged)
				}
				sec := "[" + k.Section + "] "
				if k.Section == secLBClass {
					sec = `[LoadBalancerClass "c"] `
				}
				want := fmt.Sprintf("line %d: %s%s: read by the upstream CCM, not supported by ccm yet: %s; %s", line, sec, k.Key, k.Why, k.Instead)
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\nlacks %q", err, want)
				}
				if v := strings.Trim(k.Example, `"`); len(v) > 3 && !strings.Contains(k.Why+k.Instead, v) && strings.Contains(err.Error(), v) {
					t.Errorf("error echoes the value %q: %v", v, err)
				}
			}
		})
	}
}

// Values of refused keys that mean what ccm does anyway, and empty values, are fine.
func TestUpstreamHarmlessValues(t *testing.T) {
	for _, kv := range [][2]string{
		{"os-endpoint-type", "public"}, {"os-endpoint-type", "publicURL"}, {"use-clouds", "false"},
		{"cert-file", `""`}, {"key-file", `""`}, {"trust-id", `""`}, {"os-endpoint-type", `""`},
	} {
		logged := captureNotices(t)
		c, err := New(strings.NewReader(upstreamBase + kv[0] + " = " + kv[1] + "\n"))
		if err != nil {
			t.Errorf("%s = %s: %v", kv[0], kv[1], err)
			continue
		}
		if len(c.cfg.Notices()) != 0 || len(*logged) != 0 {
			t.Errorf("%s = %s reported: %q", kv[0], kv[1], c.cfg.Notices())
		}
	}
	// use-clouds = true reads a clouds.yaml: one that cannot be read is an error naming the key.
	conf := upstreamBase + "use-clouds = true\nclouds-file = testdata/upstream/nonexistent.yaml\n"
	if _, err := New(strings.NewReader(conf)); err == nil || !strings.Contains(err.Error(), "[Global] use-clouds: reading testdata/upstream/nonexistent.yaml") {
		t.Errorf("use-clouds with a missing clouds-file: got %v", err)
	}
}

// A name neither upstream nor ccm knows still fails, with its line.
func TestUpstreamTyposStillFail(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{upstreamBase + "os-endpoint-typ = public\n", "line 7: [Global] os-endpoint-typ: unknown key"},
		{upstreamBase + "[Metadata]\nsearch-ordr = configDrive\n", "line 8: [Metadata] search-ordr: unknown key"},
		{upstreamBase + "[Route]\nrouter = r\n", "line 8: [Route] router: unknown key"},
		{upstreamBase + "[BlockStorage]\nrescan-on-resise = true\n", "line 8: [BlockStorage] rescan-on-resise: unknown key"},
		{upstreamBase + "[Networking]\npublic-network = x\n", "line 8: [Networking] public-network: unknown key"},
		{upstreamBase + "[LoadBalancer]\nflavour-id = f\n", "line 8: [LoadBalancer] flavour-id: unknown key"},
		{upstreamBase + "[LoadBalancerClass \"c\"]\nfloating-subnet-tag = t\n", `line 8: [LoadBalancerClass "c"] floating-subnet-tag: unknown key`},
		{upstreamBase + "[BlockStorag]\n", "line 7: [BlockStorag] unknown section"},
		// Values upstream could not parse either.
		{upstreamBase + "[LoadBalancer]\nmax-shared-lb = many\n", "line 8: [LoadBalancer] max-shared-lb: "},
		{upstreamBase + "[Metadata]\nrequest-timeout = 10\n", "line 8: [Metadata] request-timeout: "},
		{upstreamBase + "[BlockStorage]\nrescan-on-resize = maybe\n", "line 8: [BlockStorage] rescan-on-resize: "},
	} {
		_, err := New(strings.NewReader(tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// Files shaped like the upstream chart's rendered cloud.conf (every section present, several
// empty) pass `ccm check-config`, i.e. the provider's CheckConfig path.
func TestUpstreamChartConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/upstream/*.conf")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/upstream/*.conf: %v", err)
	}
	for _, f := range files {
		captureNotices(t)
		if err := provider.CheckConfig(ProviderName, f); err != nil {
			t.Errorf("check-config %s: %v", f, err)
		}
	}
	// A Magnum-style config (its trust is implemented, magnum-trust.conf) with floating-subnet
	// and floating-subnet-tags, in [LoadBalancer] and a class: accepted (they were the last
	// refused upstream keys, so there is no refused corpus any more) and read.
	data, err := os.ReadFile("testdata/upstream/floating-subnet.conf")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := New(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if lb, cls := fs.cfg.LoadBalancer, fs.cfg.LoadBalancerClass["dmz"]; lb.FloatingSubnet != "public-*" || lb.FloatingSubnetTags != "!&reserved,internal" ||
		cls == nil || cls.FloatingSubnet != "~^dmz-[0-9]+$" || cls.FloatingSubnetTags != "dmz" {
		t.Errorf("floating-subnet keys not read: %+v %+v", lb, cls)
	}
	logged := captureNotices(t)
	data, err = os.ReadFile("testdata/upstream/chart-typical.conf")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// lb-version, use-octavia, cascade-delete, ignore-volume-az, rescan-on-resize,
	// search-order (public/internal-network-name and monitor-max-retries-down are implemented).
	if n := c.cfg.Notices(); len(n) != 6 || len(*logged) != 6 {
		t.Errorf("want 6 reports, got %d (logged %d):\n%s", len(n), len(*logged), strings.Join(n, "\n"))
	}
	if !c.cfg.LoadBalancer.CreateMonitor || c.cfg.LoadBalancer.SubnetID == "" || c.cfg.Global.Password != "change;me" {
		t.Errorf("implemented keys lost: %+v", c.cfg.LoadBalancer)
	}
}

const docsPath = "../../docs/providers/openstack.md"
const docsBegin = "<!-- upstream-keys:begin (generated from providers/openstack/upstreamkeys.go: UPDATE_DOCS=1 go test -run TestUpstreamKeysDocumented .) -->\n"
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
