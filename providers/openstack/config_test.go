package openstack

import (
	"os"
	"strings"
	"testing"
)

func TestConfigProblems(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       []string // substrings of the error; none means valid
	}{
		{"password", "[Global]\nauth-url = https://k:5000/v3\nusername = u\npassword = \"p;w\"\ntenant-name = t\n", nil},
		{"app credential", "[Global]\nauth-url = https://k:5000/v3\napplication-credential-id = id\napplication-credential-secret = s3cr3t\n", nil},
		{"missing auth", "[Global]\nregion = r\n", []string{"auth-url: is required", "username or user-id is required", "tenant-id or tenant-name"}},
		{"no password", "[Global]\nauth-url = https://k/v3\nusername = u\ntenant-id = t\n", []string{"[Global] password: is required"}},
		{"secret without id", "[Global]\nauth-url = https://k/v3\napplication-credential-name = n\napplication-credential-secret = s\n", []string{"needs username or user-id"}},
		{"typo", "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nfloating-network = x\n", []string{"line 7: [LoadBalancer] floating-network: unknown key"}},
		{"lb values", "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nlb-method = RANDOM\nmonitor-delay = 2s\nmonitor-timeout = 5s\nmanage-security-groups = true\n",
			[]string{"lb-method: must be", "monitor-timeout: must not exceed"}},
		{"http auth-url", "[Global]\nauth-url = http://keystone.example.com:5000/v3\nusername = u\npassword = p\ntenant-id = t\n", []string{"line 2: [Global] auth-url: is http://", "clear text"}},
		{"http on loopback", "[Global]\nauth-url = http://127.0.0.1:5000/v3\nusername = u\npassword = p\ntenant-id = t\n", nil},
		{"http on ::1", "[Global]\nauth-url = http://[::1]:5000/v3\nusername = u\npassword = p\ntenant-id = t\n", nil},
		{"http on localhost", "[Global]\nauth-url = http://localhost:5000/v3\nusername = u\npassword = p\ntenant-id = t\n", nil},
		{"allow everything", "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancer]\nallowed-resource-namespaces = *\n", []string{"line 7: [LoadBalancer] allowed-resource-namespaces"}},
		{"bad url", "[Global]\nauth-url = keystone\nusername = u\npassword = p\ntenant-id = t\n", []string{"auth-url: must be an http(s) URL"}},
		{"class", "[Global]\nauth-url = https://k/v3\nusername = u\npassword = p\ntenant-id = t\n[LoadBalancerClass \"ext\"]\nfloating-network-id = n\nbogus = 1\n", []string{"[LoadBalancerClass \"ext\"] bogus: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(strings.NewReader(tc.conf))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A password gcfg cannot parse must not be echoed in the error.
func TestConfigErrorsHideSecrets(t *testing.T) {
	_, err := New(strings.NewReader("[Global]\nauth-url = https://k/v3\nusername = u\npassword = \"hunter2-topsecret\ntenant-id = t\n"))
	if err == nil {
		t.Fatal("unterminated quote accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error echoes the password: %v", err)
	}
}

func TestProviderID(t *testing.T) {
	for in, want := range map[string]string{"openstack:///abc": "abc", "openstack://RegionOne/abc": "abc"} {
		if got, err := serverID(in); err != nil || got != want {
			t.Errorf("serverID(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"aws:///i-1", "openstack:///", "openstack://r/a/b", "abc"} {
		if _, err := serverID(bad); err == nil {
			t.Errorf("serverID(%q) accepted", bad)
		}
	}
}

// The overlay's example cloud.conf is what `ccm check-config` is run on in CI; it must stay valid.
func TestDeployExampleConfig(t *testing.T) {
	f, err := os.Open("../../deploy/openstack/cloud.conf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := New(f)
	if err != nil {
		t.Fatalf("deploy/openstack/cloud.conf: %v", err)
	}
	if c.cfg.LoadBalancerClass["internal"] == nil || c.cfg.LoadBalancer.SubnetID == "" {
		t.Errorf("example lost its [LoadBalancer] or class: %+v", c.cfg.LoadBalancer)
	}
}
