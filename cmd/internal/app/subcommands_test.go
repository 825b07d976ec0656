package app

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/provider"
)

type strictConf struct {
	Global struct{ Region string }
}

func init() {
	provider.MustRegister(provider.Provider{Name: "apptest", Factory: func(r io.Reader) (cloudprovider.Interface, error) {
		var c strictConf
		if err := config.ReadINI(r, &c); err != nil {
			return nil, err
		}
		return &fakecloud.Cloud{}, nil
	}})
}

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	typo := filepath.Join(dir, "typo.conf")
	os.WriteFile(good, []byte("[Global]\nregion = r\n"), 0o600)
	os.WriteFile(typo, []byte("[Global]\nregion = r\nregoin = x\n"), 0o600)
	for _, tt := range []struct {
		name, provider, path string
		code                 int
		out, errOut          string
	}{
		{"ok", "apptest", good, 0, "OK", ""},
		{"typo names key and line", "apptest", typo, 1, "", "line 3: [Global] regoin: unknown key"},
		{"missing file names path", "apptest", filepath.Join(dir, "nope.conf"), 1, "", "nope.conf"},
		{"unknown provider lists compiled-in", "nope", good, 1, "", "compiled-in providers: apptest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := checkConfig(&out, &errOut, tt.provider, tt.path, "", false)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
				t.Errorf("code %d out %q err %q", code, out.String(), errOut.String())
			}
		})
	}
}

func TestCommandRejectsUnknownProvider(t *testing.T) {
	cmd := NewCommand(make(chan struct{}))
	cmd.SetArgs([]string{"--cloud-provider=nope"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "apptest") || !strings.Contains(err.Error(), "-tags nope") {
		t.Fatalf("err = %v", err)
	}
}

// --user-agent reaches the providers before any is built (the OpenStack one reads it).
func TestUserAgentFlagReachesProviders(t *testing.T) {
	t.Cleanup(func() { provider.SetUserAgent(nil) })
	cmd := NewCommand(make(chan struct{}))
	cmd.SetArgs([]string{"--cloud-provider=nope", "--user-agent=capo/v0.12", "--user-agent=site eu-1"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	_ = cmd.Execute() // the provider does not exist; the flag is handed over first
	if got := provider.UserAgent(); !slices.Equal(got, []string{"capo/v0.12", "site eu-1"}) {
		t.Errorf("provider.UserAgent() = %q", got)
	}
}

// apptest (the library's fake cloud) offers routes: without --cluster-cidr the command must
// stop before starting with a message naming both flags.
func TestRoutesNeedClusterCIDR(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "c.conf")
	os.WriteFile(conf, []byte("[Global]\nregion = r\n"), 0o600)
	cmd := NewCommand(make(chan struct{}))
	cmd.SetArgs([]string{"--cloud-provider=apptest", "--cloud-config=" + conf})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--cluster-cidr") || !strings.Contains(err.Error(), "--configure-cloud-routes=false") {
		t.Fatalf("err = %v", err)
	}
}

func TestHelpNamesProviders(t *testing.T) {
	cmd := NewCommand(make(chan struct{}))
	if !strings.Contains(cmd.Long, "apptest") {
		t.Errorf("--help does not list compiled-in providers: %s", cmd.Long)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"providers"})
	if err := cmd.Execute(); err != nil || strings.TrimSpace(out.String()) != "apptest\napptest-scoped" {
		t.Errorf("providers: %q %v", out.String(), err)
	}
	for _, f := range []struct {
		name, want string
	}{{"kube-api-qps", "200"}, {"concurrent-service-syncs", "10"}, {"concurrent-node-syncs", "10"}} {
		if fl := cmd.Flags().Lookup(f.name); fl == nil || fl.DefValue != f.want {
			t.Errorf("--%s default: %+v, want %s", f.name, fl, f.want)
		}
	}
}

// Each subcommand's --help shows its own flags only, not the controller-manager's sections.
func TestSubcommandHelpIsItsOwn(t *testing.T) {
	for _, c := range []struct {
		sub   string
		wants []string
	}{
		{"gc", []string{"--delete", "--dry-run", "--cluster-name", "--kubeconfig", "Nothing is deleted unless --delete"}},
		{"check-config", []string{"--cloud-provider", "--cloud-config", "--allow-default-cluster-name"}},
		{"providers", []string{"List the providers compiled into this binary"}},
	} {
		cmd := NewCommand(make(chan struct{}))
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{c.sub, "--help"})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s --help: %v", c.sub, err)
		}
		help := out.String()
		for _, want := range c.wants {
			if !strings.Contains(help, want) {
				t.Errorf("%s --help lacks %q:\n%s", c.sub, want, help)
			}
		}
		for _, root := range []string{"--kube-api-qps", "--leader-elect", "Generic flags:", "--concurrent-service-syncs"} {
			if strings.Contains(help, root) {
				t.Errorf("%s --help shows the controller-manager's %q", c.sub, root)
			}
		}
		if n := strings.Count(help, "\n"); n > 40 {
			t.Errorf("%s --help is %d lines", c.sub, n)
		}
	}
}

// gc lists unless --delete; --dry-run wins over --delete.
func TestGCDeletesOnlyWithDelete(t *testing.T) {
	for _, c := range []struct {
		args []string
		dry  bool
	}{{nil, true}, {[]string{"--dry-run"}, true}, {[]string{"--delete"}, false}, {[]string{"--delete", "--dry-run"}, true}} {
		o := &gcOptions{}
		if err := newGCCommandWith(o).ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if got := o.listOnly(); got != c.dry {
			t.Errorf("gc %v: list only %v, want %v", c.args, got, c.dry)
		}
	}
}
