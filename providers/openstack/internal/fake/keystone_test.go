package fake_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func start(t *testing.T, o fake.Options) *fake.Cloud {
	t.Helper()
	f := fake.New(o)
	if _, err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// password is the fake's user by name in its domain, scoped to its project.
func password(f *fake.Cloud) gophercloud.AuthOptions {
	return gophercloud.AuthOptions{IdentityEndpoint: f.AuthURL(), Username: f.Username(), Password: f.Password(), DomainName: f.DomainName(),
		Scope: &gophercloud.AuthScope{ProjectName: f.ProjectName(), DomainName: f.DomainName()}}
}

func login(t *testing.T, o gophercloud.AuthOptions) (*gophercloud.ProviderClient, error) {
	t.Helper()
	return gopenstack.AuthenticatedClient(context.Background(), o)
}

// listNetworks is one project-scoped call (Neutron) with pc.
func listNetworks(t *testing.T, f *fake.Cloud, pc *gophercloud.ProviderClient) error {
	t.Helper()
	nc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		return err
	}
	_, err = networks.List(nc, networks.ListOpts{}).AllPages(context.Background())
	return err
}

func TestTokenScope(t *testing.T) {
	f := start(t, fake.Options{})
	for _, tc := range []struct {
		name       string
		scope      *gophercloud.AuthScope
		loginFails bool
		status     int // of a Neutron call with the token; 0: it works
	}{
		{"project by name in its domain", &gophercloud.AuthScope{ProjectName: f.ProjectName(), DomainName: f.DomainName()}, false, 0},
		{"project by ID", &gophercloud.AuthScope{ProjectID: "pid-" + f.ProjectName()}, false, 0},
		{"project by name in another domain", &gophercloud.AuthScope{ProjectName: f.ProjectName(), DomainName: "elsewhere"}, true, 0},
		{"a project that does not exist", &gophercloud.AuthScope{ProjectName: "nope", DomainName: f.DomainName()}, true, 0},
		{"another project of the user: acts on nothing of the first", &gophercloud.AuthScope{ProjectName: fake.OtherProjectName, DomainName: f.DomainName()}, false, http.StatusForbidden},
		{"another domain", &gophercloud.AuthScope{DomainName: "elsewhere"}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := password(f)
			o.Scope = tc.scope
			pc, err := login(t, o)
			if tc.loginFails {
				if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
					t.Fatalf("login: %v, want a 401", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			err = listNetworks(t, f, pc)
			switch {
			case tc.status == 0 && err != nil:
				t.Errorf("Neutron call: %v", err)
			case tc.status != 0 && !gophercloud.ResponseCodeIs(err, tc.status):
				t.Errorf("Neutron call: %v, want %d", err, tc.status)
			}
		})
	}
}

// A domain-scoped token has no catalog: it reaches no project's service.
func TestDomainScopedTokenHasNoCatalog(t *testing.T) {
	f := start(t, fake.Options{})
	o := password(f)
	o.Scope = &gophercloud.AuthScope{DomainName: f.DomainName()}
	pc, err := login(t, o)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if err := listNetworks(t, f, pc); err == nil {
		t.Error("a domain-scoped token reached Neutron")
	}
}

func TestWrongUserOrPassword(t *testing.T) {
	f := start(t, fake.Options{})
	for name, mod := range map[string]func(*gophercloud.AuthOptions){
		"wrong password":         func(o *gophercloud.AuthOptions) { o.Password = "nope" },
		"user in another domain": func(o *gophercloud.AuthOptions) { o.DomainName = "elsewhere" },
		"unknown user":           func(o *gophercloud.AuthOptions) { o.Username = "mallory" },
	} {
		o := password(f)
		mod(&o)
		if _, err := login(t, o); !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
			t.Errorf("%s: %v, want a 401", name, err)
		}
	}
}

func TestApplicationCredentials(t *testing.T) {
	f := start(t, fake.Options{})
	id, name, secret := f.AppCredential()
	base := gophercloud.AuthOptions{IdentityEndpoint: f.AuthURL()}
	for _, tc := range []struct {
		name string
		mod  func(*gophercloud.AuthOptions)
		ok   bool
	}{
		{"ID and secret", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialID, o.ApplicationCredentialSecret = id, secret
		}, true},
		{"name, user and secret", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialName, o.ApplicationCredentialSecret, o.Username, o.DomainName = name, secret, f.Username(), f.DomainName()
		}, true},
		{"name and user ID", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialName, o.ApplicationCredentialSecret, o.UserID = name, secret, "uid-"+f.Username()
		}, true},
		{"ID and a wrong secret", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialID, o.ApplicationCredentialSecret = id, "nope"
		}, false},
		{"another ID with the right secret", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialID, o.ApplicationCredentialSecret = "appcred-other", secret
		}, false},
		{"name of another user", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialName, o.ApplicationCredentialSecret, o.Username, o.DomainName = name, secret, "mallory", f.DomainName()
		}, false},
		{"the user's password as the secret", func(o *gophercloud.AuthOptions) {
			o.ApplicationCredentialID, o.ApplicationCredentialSecret = id, f.Password()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.mod(&o)
			pc, err := login(t, o)
			if !tc.ok {
				if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
					t.Errorf("login: %v, want a 401", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("login: %v", err)
			}
			if err := listNetworks(t, f, pc); err != nil {
				t.Errorf("the credential's token does not reach its project: %v", err)
			}
		})
	}
	// The secret alone names no credential: gophercloud refuses to send it, and the fake
	// refuses it sent by hand.
	req := `{"auth":{"identity":{"methods":["application_credential"],"application_credential":{"secret":"` + secret + `"}}}}`
	resp, err := http.Post(f.AuthURL()+"/auth/tokens", "application/json", stringsReader(req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a secret without an ID or name: %d, want 401", resp.StatusCode)
	}
}

// An expired token gets a 401; gophercloud logs in again (AllowReauth) and the call succeeds.
func TestExpiredTokenReauthenticates(t *testing.T) {
	f := start(t, fake.Options{TokenTTL: 300 * time.Millisecond})
	o := password(f)
	o.AllowReauth = true
	pc, err := login(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := listNetworks(t, f, pc); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := listNetworks(t, f, pc); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if got := f.TokensIssued(); got != 2 {
		t.Errorf("%d tokens issued, want 2 (the first, then one after it expired)", got)
	}
	// Without re-authentication the expired token is refused.
	o.AllowReauth = false
	pc, err = login(t, o)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := listNetworks(t, f, pc); !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Errorf("an expired token: %v, want a 401", err)
	}
}

// `"port_id": null` disassociates a floating IP; an update without port_id keeps it.
func TestFloatingIPNullPortDisassociates(t *testing.T) {
	f := start(t, fake.Options{})
	lbID := f.AddLoadBalancer("lb")
	fipID := f.AddFloatingIP("172.24.4.50")
	f.AssociateFloatingIP(fipID, lbID)
	pc, err := login(t, password(f))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := gopenstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		t.Fatal(err)
	}
	portOf := func() string {
		for _, fip := range f.FloatingIPs() {
			if fip.ID == fipID {
				return fip.PortID
			}
		}
		t.Fatal("the floating IP is gone")
		return ""
	}
	if portOf() == "" {
		t.Fatal("not associated to begin with")
	}
	desc := "renamed"
	if _, err := floatingips.Update(context.Background(), nc, fipID, floatingips.UpdateOpts{Description: &desc}).Extract(); err != nil {
		t.Fatal(err)
	}
	if portOf() == "" {
		t.Error("an update without port_id disassociated the floating IP")
	}
	empty := "" // gophercloud sends "port_id": null
	got, err := floatingips.Update(context.Background(), nc, fipID, floatingips.UpdateOpts{PortID: &empty}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if portOf() != "" || got.PortID != "" {
		t.Errorf("port_id null left the floating IP on port %q (answer %q)", portOf(), got.PortID)
	}
	// A load balancer call with the same token works: one project, one token.
	lc, err := gopenstack.NewLoadBalancerV2(pc, gophercloud.EndpointOpts{Region: f.Region()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.Get(context.Background(), lc, lbID).Extract(); err != nil {
		t.Error(err)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
