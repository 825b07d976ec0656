package app

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/provider"
)

// scopedCloud marks what it owns with --cluster-name, as openstack, vsphere and dummy do.
type scopedCloud struct {
	fakecloud.Cloud
	ownership.ClusterScope
}

func (s *scopedCloud) HasClusterID() bool { return s.ClusterScope.HasClusterID() }

func init() {
	provider.MustRegister(provider.Provider{Name: "apptest-scoped", Factory: func(io.Reader) (cloudprovider.Interface, error) {
		return &scopedCloud{}, nil
	}})
}

func TestApplyClusterName(t *testing.T) {
	for _, tt := range []struct {
		name         string
		scoped       bool
		cluster      string
		allowDefault bool
		err          string // "" for accepted
	}{
		{"scoped, unique name", true, "prod-eu-1", false, ""},
		{"scoped, library default", true, "kubernetes", false, "--allow-default-cluster-name"},
		{"scoped, default allowed", true, "kubernetes", true, ""},
		{"scoped, placeholder", true, "CHANGE-ME", true, "placeholder"},
		{"scoped, bad characters", true, "a/b", false, "letters, digits"},
		{"unscoped, default", false, "kubernetes", false, ""},
		{"unscoped, placeholder", false, "CHANGE-ME", false, "placeholder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c cloudprovider.Interface = &fakecloud.Cloud{}
			sc := &scopedCloud{}
			if tt.scoped {
				c = sc
			}
			err := applyClusterName(c, tt.cluster, tt.allowDefault)
			if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("applyClusterName = %v, want error containing %q", err, tt.err)
			}
			if tt.scoped && (err == nil) != sc.HasClusterID() {
				t.Errorf("HasClusterID = %v after applyClusterName returned %v", sc.HasClusterID(), err)
			}
			if tt.scoped && err == nil && sc.ClusterName() != tt.cluster {
				t.Errorf("the provider got cluster name %q, want %q", sc.ClusterName(), tt.cluster)
			}
		})
	}
}

func TestCheckConfigClusterName(t *testing.T) {
	for _, tt := range []struct {
		cluster      string
		allowDefault bool
		code         int
		out, errOut  string
	}{
		{"", false, 0, "OK", ""},
		{"prod", false, 0, `cluster name "prod": this provider marks`, ""},
		{"kubernetes", false, 1, "", "two clusters that both keep the default"},
		{"kubernetes", true, 0, "OK", ""},
		{"CHANGE-ME", false, 1, "", "placeholder"},
	} {
		var out, errOut bytes.Buffer
		code := checkConfig(&out, &errOut, "apptest-scoped", "", tt.cluster, tt.allowDefault)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
			t.Errorf("cluster %q: code %d out %q err %q", tt.cluster, code, out.String(), errOut.String())
		}
	}
}

// The ccm itself refuses to start with the default name for a scoped provider, before anything runs.
func TestCommandRefusesDefaultClusterName(t *testing.T) {
	cmd := NewCommand(make(chan struct{}))
	cmd.SetArgs([]string{"--cloud-provider=apptest-scoped"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--cluster-name is the default") {
		t.Fatalf("Execute = %v, want the default cluster name refused", err)
	}
}

// cidrScoped records the cluster CIDRs ccm hands over.
type cidrScoped struct {
	scopedCloud
	cidrs []netip.Prefix
}

func (c *cidrScoped) UseClusterCIDRs(cidrs []netip.Prefix) { c.cidrs = cidrs }

func TestClusterCIDRsHandedOver(t *testing.T) {
	c := &cidrScoped{}
	if err := applyClusterCIDRs(c, "10.244.0.0/16,fd10::/56"); err != nil || fmt.Sprint(c.cidrs) != "[10.244.0.0/16 fd10::/56]" {
		t.Errorf("applyClusterCIDRs = %v, CIDRs %v", err, c.cidrs)
	}
	if err := applyClusterCIDRs(&cidrScoped{}, "10.244.0.0/16,x"); err == nil || !strings.Contains(err.Error(), "--cluster-cidr") {
		t.Errorf("a bad --cluster-cidr: %v", err)
	}
}

func TestRouteControllerOn(t *testing.T) {
	for list, want := range map[string]bool{
		"*": true, "*,-route": false, "cloud-node,service": false, "cloud-node,route": true,
		"node-route-controller": true, "*,-node-route-controller": false, "": false,
	} {
		if got := routeControllerOn(strings.Split(list, ",")); got != want {
			t.Errorf("routeControllerOn(%q) = %v, want %v", list, got, want)
		}
	}
}
