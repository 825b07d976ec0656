package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// --user-agent (upstream's flag, repeatable) reaches every call's User-Agent header, after
// ccm's own name and before gophercloud's, as the fake sees it.
func TestUserAgent(t *testing.T) {
	provider.SetUserAgent([]string{"cluster-api-provider-openstack/v0.12", "site/eu-1"})
	t.Cleanup(func() { provider.SetUserAgent(nil) })
	f := newFake(t, fake.Options{})
	lb, _ := migrationCloud(t, f, "")
	if _, _, err := lb.GetLoadBalancer(context.Background(), cluster, lbService("ua", nil)); err != nil {
		t.Fatal(err)
	}
	agents := f.UserAgents()
	if len(agents) != 1 {
		t.Fatalf("User-Agent headers %v, want one for every call", agents)
	}
	for ua := range agents {
		i, j, k := strings.Index(ua, "ccm/"), strings.Index(ua, "cluster-api-provider-openstack/v0.12 site/eu-1"), strings.Index(ua, "gophercloud/")
		if i != 0 || j < i || k < j {
			t.Errorf("User-Agent %q: want ccm/VERSION, then the --user-agent parts in order, then gophercloud's", ua)
		}
	}
}
