package openstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// use-clouds fills the keys the file leaves empty from the clouds.yaml entry, as upstream's
// ReadClouds: the file's own keys win; the entry is cloud, else OS_CLOUD, else the only one.
func TestUseCloudsFillsEmptyKeys(t *testing.T) {
	const file = "testdata/upstream/clouds.yaml"
	for _, tc := range []struct {
		name, conf, env string
		want            map[string]string // field -> value after reading
		err             string
	}{
		{name: "named entry", conf: "cloud = openstack\n", want: map[string]string{
			"auth-url": "https://keystone.example.com:5000/v3", "username": "ccm", "password": "from-clouds-yaml", "tenant-name": "k8s",
			"user-domain-name": "Default", "tenant-domain-name": "Default", "region": "RegionOne", "os-endpoint-type": "internal"}},
		{name: "the file's own keys win", conf: "cloud = openstack\nregion = RegionThree\nusername = someone\n", want: map[string]string{
			"region": "RegionThree", "username": "someone", "password": "from-clouds-yaml"}},
		{name: "OS_CLOUD names the entry", env: "other", want: map[string]string{
			"auth-url": "https://keystone.other.example.com:5000/v3", "application-credential-id": "appcred-other", "region": "RegionTwo"}},
		{name: "no entry named", err: "[Global] use-clouds: reading " + file},
		{name: "unknown entry", conf: "cloud = nowhere\n", err: "cloud nowhere does not exist in clouds.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OS_CLOUD", tc.env)
			c, err := New(strings.NewReader("[Global]\nuse-clouds = true\nclouds-file = " + file + "\n" + tc.conf))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "from-clouds-yaml") || strings.Contains(err.Error(), "other-secret") {
					t.Errorf("the error carries a secret of the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := c.cfg.Global
			got := map[string]string{"auth-url": g.AuthURL, "username": g.Username, "password": g.Password, "tenant-name": g.TenantName,
				"user-domain-name": g.UserDomainName, "tenant-domain-name": g.TenantDomainName, "region": g.Region, "os-endpoint-type": g.EndpointType,
				"application-credential-id": g.ApplicationCredentialID}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// A cloud.conf that defers everything to a clouds.yaml logs in to the cloud it names.
func TestUseCloudsLogsIn(t *testing.T) {
	f := newFake(t, fake.Options{})
	yaml := fmt.Sprintf("clouds:\n  fake:\n    auth:\n      auth_url: %s\n      username: %s\n      password: %q\n      project_name: %s\n      user_domain_name: %s\n      project_domain_name: %s\n    region_name: %s\n",
		f.AuthURL(), f.Username(), f.Password(), f.ProjectName(), f.DomainName(), f.DomainName(), f.Region())
	path := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := lookup(t, f, "[Global]\nuse-clouds = true\nclouds-file = "+path+"\n"); err != nil {
		t.Fatalf("login through clouds.yaml: %v", err)
	}
}
