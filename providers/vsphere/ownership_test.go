package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

func lbFor(t *testing.T, s *sim.Sim, cluster, extra string) cloudprovider.LoadBalancer {
	t.Helper()
	c, err := New(strings.NewReader(testConfig(s, extra)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.UseClusterName(cluster)
	lb, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("no LoadBalancer")
	}
	return lb
}

func lbService(ns, name, uid string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
}

var oneNode = []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}}

func ingressIP(t *testing.T, st *v1.LoadBalancerStatus) string {
	t.Helper()
	if st == nil || len(st.Ingress) == 0 {
		t.Fatalf("no address in %v", st)
	}
	return st.Ingress[0].IP
}

// A cloud reads the records once, at its first call. Another cluster's record made after that
// must still keep its address from being handed out (before: the second cluster gave its next
// Service the first cluster's address).
func TestTwoClustersNeverShareAnAddress(t *testing.T) {
	ctx := context.Background()
	s := startSim(t)
	a, b := lbFor(t, s, "alpha", ""), lbFor(t, s, "beta", "")
	// beta reads the (empty) category first.
	if _, err := b.EnsureLoadBalancer(ctx, "beta", lbService("x", "first", "uid-b1"), oneNode); err != nil {
		t.Fatal(err)
	}
	sa, err := a.EnsureLoadBalancer(ctx, "alpha", lbService("shop", "web", "uid-a"), oneNode)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.EnsureLoadBalancer(ctx, "beta", lbService("shop", "web", "uid-b"), oneNode)
	if err != nil {
		t.Fatal(err)
	}
	if ingressIP(t, sa) == ingressIP(t, sb) {
		t.Fatalf("both clusters' shop/web got %s", ingressIP(t, sa))
	}
	recs, _ := s.TagsInCategory(ctx, lbCategory)
	for _, c := range []string{"alpha", "beta"} {
		r := parseRecord(recs[names.Name(c, "shop", "web")])
		if r.unreadable || r.Cluster != c || r.UID != "uid-"+c[:1] {
			t.Errorf("record of %s: %+v", c, r)
		}
	}
	// beta's tenant asks for alpha's address: refused without naming alpha or its Service.
	svc := lbService("tenant", "grab", "uid-g")
	svc.Spec.LoadBalancerIP = ingressIP(t, sa)
	_, err = b.EnsureLoadBalancer(ctx, "beta", svc, oneNode)
	if err == nil || !strings.Contains(err.Error(), "spec.loadBalancerIP") || !strings.Contains(err.Error(), "already in use by another Service") {
		t.Fatalf("loadBalancerIP of another cluster: %v", err)
	}
	for _, leak := range []string{"alpha", "shop", "web"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the refusal names %q: %v", leak, err)
		}
	}
	// beta deletes its shop/web: alpha's record stays.
	if err := b.EnsureLoadBalancerDeleted(ctx, "beta", lbService("shop", "web", "uid-b")); err != nil {
		t.Fatal(err)
	}
	recs, _ = s.TagsInCategory(ctx, lbCategory)
	if _, ok := recs[names.Name("alpha", "shop", "web")]; !ok {
		t.Errorf("alpha's record is gone after beta deleted its Service of the same name")
	}
}

// Records that are not this Service's, at its own record name.
func TestRecordsOfOthersAreNeverTouched(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		desc   func(name string) string
		reason string // "" = the Service's own (adopted)
		uid    string // the UID the record has after the Service's ensure
	}{
		{"earlier Service of the same name", func(string) string {
			return `{"c":"prod","s":"shop/web","u":"uid-old","ips":["192.0.2.40"]}`
		}, "UID differs", "uid-old"},
		{"made by hand", func(string) string { return "reserved by hand" }, "no ownership mark", ""},
		{"another cluster's claim", func(string) string {
			return `{"c":"other","s":"shop/web","u":"uid-new","ips":["192.0.2.41"]}`
		}, "no ownership mark", "uid-new"},
		{"another Service's claim", func(string) string {
			return `{"c":"prod","s":"shop/api","ips":["192.0.2.42"]}`
		}, "another Service", ""},
		{"written before UIDs: adopted, gets the UID", func(string) string {
			return `{"c":"prod","s":"shop/web","ips":["192.0.2.43"],"fp":"x"}`
		}, "", "uid-new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startSim(t)
			name := names.Name("prod", "shop", "web")
			if _, err := s.PutTag(ctx, lbCategory, name, c.desc(name)); err != nil {
				t.Fatal(err)
			}
			before, _ := s.TagsInCategory(ctx, lbCategory)
			lb := lbFor(t, s, "prod", "")
			svc := lbService("shop", "web", "uid-new")
			st, err := lb.EnsureLoadBalancer(ctx, "prod", svc, oneNode)
			_, exists, gerr := lb.GetLoadBalancer(ctx, "prod", svc)
			if gerr != nil {
				t.Fatal(gerr)
			}
			after, _ := s.TagsInCategory(ctx, lbCategory)
			if c.reason == "" {
				if err != nil || !exists || ingressIP(t, st) != "192.0.2.43" {
					t.Fatalf("own legacy record: %v %v exists=%v", st, err, exists)
				}
				if r := parseRecord(after[name]); r.UID != c.uid {
					t.Errorf("the legacy record did not get the UID: %+v", r)
				}
				return
			}
			if err == nil || !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("ensure: %v, want a refusal saying %q", err, c.reason)
			}
			if exists {
				t.Errorf("GetLoadBalancer reports a record the Service does not own")
			}
			if err := lb.UpdateLoadBalancer(ctx, "prod", svc, oneNode); err == nil || !errors.Is(err, ownership.ErrNotOwned) {
				t.Errorf("update: %v, want a refusal", err)
			}
			if err := lb.EnsureLoadBalancerDeleted(ctx, "prod", svc); err != nil {
				t.Errorf("delete of a Service that owns nothing: %v", err)
			}
			if after, _ = s.TagsInCategory(ctx, lbCategory); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the record changed:\n%v\n%v", before, after)
			}
		})
	}
}

// An address two records claim is nobody else's, and the Service whose record holds it keeps
// it.
func TestAddressClaimedTwice(t *testing.T) {
	ctx := context.Background()
	s := startSim(t)
	lb := lbFor(t, s, "prod", "")
	st, err := lb.EnsureLoadBalancer(ctx, "prod", lbService("shop", "web", "u1"), oneNode)
	if err != nil {
		t.Fatal(err)
	}
	ip := ingressIP(t, st)
	if _, err := s.PutTag(ctx, lbCategory, "copy", fmt.Sprintf(`{"c":"prod","s":"shop/copy","ips":[%q]}`, ip)); err != nil {
		t.Fatal(err)
	}
	lb = lbFor(t, s, "prod", "") // a restart reads both
	svc := lbService("shop", "web", "u1")
	svc.Status.LoadBalancer = *st
	if again, err := lb.EnsureLoadBalancer(ctx, "prod", svc, oneNode); err != nil || ingressIP(t, again) != ip {
		t.Errorf("the holder lost its address: %v %v", again, err)
	}
	other := lbService("shop", "other", "u2")
	other.Spec.LoadBalancerIP = ip
	if _, err := lb.EnsureLoadBalancer(ctx, "prod", other, oneNode); err == nil {
		t.Errorf("an address two records claim was handed to a third Service")
	}
}

// Errors of the LoadBalancer methods become Events that the Service's tenants read: a refused
// login must not show the vCenter user (before: "login refused for user \"ccm@vsphere.local\"").
func TestLoadBalancerErrorsHideVCenterCredentials(t *testing.T) {
	ctx := context.Background()
	s := startSim(t)
	cfg := strings.Replace(testConfig(s, ""), fmt.Sprintf("password = %q", testPassword), `password = "wrong-Pa55word"`, 1)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.UseClusterName("prod")
	lb, _ := c.LoadBalancer()
	svc := lbService("shop", "web", "u1")
	_, eerr := lb.EnsureLoadBalancer(ctx, "prod", svc, oneNode)
	uerr := lb.UpdateLoadBalancer(ctx, "prod", svc, oneNode)
	derr := lb.EnsureLoadBalancerDeleted(ctx, "prod", svc)
	_, _, gerr := lb.GetLoadBalancer(ctx, "prod", svc)
	for i, err := range []error{eerr, uerr, derr, gerr} {
		if err == nil {
			t.Fatalf("call %d with a wrong password succeeded", i)
		}
		for _, leak := range []string{testUser, "ccm@", "wrong-Pa55word", testPassword, "vsphere.local"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("call %d: the error names %q: %v", i, leak, err)
			}
		}
		if !strings.Contains(err.Error(), "cannot log in to vCenter") {
			t.Errorf("call %d: the error does not say what failed: %v", i, err)
		}
	}
}

func TestParseRecord(t *testing.T) {
	cases := []struct {
		desc       string
		unreadable bool
		ips        []string
		owner      string // "" = no owner
	}{
		{`{"c":"prod","s":"shop/web","u":"1","ips":["192.0.2.1"],"fp":"x"}`, false, []string{"192.0.2.1"}, "shop/web"},
		{`{"c":"prod","s":"shop/web","ips":["2001:db8::1"]}`, false, []string{"2001:db8::1"}, "shop/web"},
		{`{"ips":["192.0.2.7"]}`, true, []string{"192.0.2.7"}, ""},
		{`{"c":"prod","ips":["192.0.2.8"]}`, true, []string{"192.0.2.8"}, ""},
		{"VIP 192.0.2.9, and 2001:db8::9.", true, []string{"192.0.2.9", "2001:db8::9"}, ""},
		{"", true, nil, ""},
		{`{"c":"prod","s":"web"}`, false, nil, ""}, // a Service without a namespace names nobody
	}
	for _, c := range cases {
		r := parseRecord(c.desc)
		if r.unreadable != c.unreadable || fmt.Sprint(r.IPs) != fmt.Sprint(c.ips) {
			t.Errorf("parseRecord(%q) = %+v", c.desc, r)
		}
		owner, ok := ownership.Owner("prod", r.tags())
		if (c.owner != "") != ok || ok && owner.Service() != c.owner {
			t.Errorf("parseRecord(%q): owner %+v %v, want %q", c.desc, owner, ok, c.owner)
		}
	}
}
