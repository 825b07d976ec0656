package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The fault harness drives openstack-sim over simcontrol's HTTP protocol; this drives the
// same adapter the same way, with the provider (real gophercloud) on the other side.
func TestSimControl(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}})
	url, stop, err := simcontrol.Serve(fake.Control(f), "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	sc := simcontrol.Client{URL: url}

	// Resources: what the provider made for a Service, each with the Service's key.
	lb := lbOf(t, newTestCloud(t, f, "manage-security-groups = true\n"))
	st := ensureUntilReady(t, lb, lbService("web", nil), lbNodes("10.0.0.5"))
	res, err := sc.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, r := range res {
		kinds[r.Kind] = r.Service
		if r.Kind == "floatingip" && r.Name != st.Ingress[0].IP {
			t.Errorf("floating IP %s, want the ingress %s", r.Name, st.Ingress[0].IP)
		}
	}
	for _, k := range []string{"loadbalancer", "floatingip", "securitygroup"} {
		if kinds[k] != "default/web" {
			t.Errorf("%s of Service %q, want default/web (resources %+v)", k, kinds[k], res)
		}
	}

	// Outage: a fresh provider cannot even get a token, a logged-in one cannot read.
	node := node("node-a", "openstack:///"+id)
	warm, _ := newTestCloud(t, f, "").InstancesV2()
	if ok, err := warm.InstanceExists(ctx, node); err != nil || !ok {
		t.Fatalf("before the outage: exists=%v err=%v", ok, err)
	}
	if err := sc.SetOutage(ctx, true); err != nil {
		t.Fatal(err)
	}
	cold, _ := newTestCloud(t, f, "").InstancesV2()
	if _, err := cold.InstanceExists(ctx, node); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("during the outage, a new session: err = %v, want a 503", err)
	}
	if _, err := warm.InstanceExists(ctx, node); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("during the outage, a logged-in session: err = %v, want a 503", err)
	}
	if err := sc.SetOutage(ctx, false); err != nil {
		t.Fatal(err)
	}

	// Terminate: the server is gone; an unknown node is an error.
	if err := sc.Terminate(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := warm.InstanceExists(ctx, node); err != nil || ok {
		t.Errorf("after Terminate: exists=%v err=%v, want false", ok, err)
	}
	if err := sc.Terminate(ctx, "node-z"); err == nil || !strings.Contains(err.Error(), "no server named node-z") {
		t.Errorf("Terminate of an unknown node: %v", err)
	}

	calls, err := sc.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Failed < 2 || calls.Writes == 0 || calls.Total < calls.Writes || calls.PerOp["octavia.CreateLoadBalancer"] != 1 {
		t.Errorf("calls = %+v", calls)
	}
	secrets, err := sc.Secrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, appSecret := f.AppCredential()
	if !slices.Contains(secrets, f.Password()) || !slices.Contains(secrets, appSecret) || len(secrets) < 4 || !strings.HasPrefix(secrets[1], "gAAAA") {
		t.Errorf("secrets = %d values, want the password, every token issued and the application credential's secret", len(secrets))
	}
}
