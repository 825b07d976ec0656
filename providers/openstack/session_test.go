package openstack

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestOperationNamesHaveNoIDs(t *testing.T) {
	for path, want := range map[string]string{
		"/compute/v2.1/servers/9f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b":                   "GET compute/servers",
		"/compute/v2.1/servers/detail":                                                 "GET compute/servers/detail",
		"/load-balancer/v2.0/lbaas/pools/3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8/members": "GET lbaas/pools/members",
		"/network/v2.0/floatingips":                                                    "GET network/floatingips",
	} {
		if got := operation(httptest.NewRequest("GET", "http://h"+path, nil)); got != want {
			t.Errorf("operation(%s) = %q, want %q", path, got, want)
		}
	}
}

// A wrong password is tried once, not on every call: Keystone locks accounts after a number
// of failed logins. Calls in between fail at once saying when the next attempt is; after the
// wait one attempt is made (and the wait doubles); a success resets it. Counted at the fake.
func TestWrongPasswordBacksOff(t *testing.T) {
	first, maxWait := loginBackoffFirst, loginBackoffMax
	t.Cleanup(func() { loginBackoffFirst, loginBackoffMax = first, maxWait })
	loginBackoffFirst, loginBackoffMax = 200*time.Millisecond, time.Second

	f := newFake(t, fake.Options{})
	conf := strings.Replace(f.CloudConfig(), fmt.Sprintf("password = %q", f.Password()), `password = "wrong-password"`, 1)
	c, err := New(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	n := node("node-a", "")
	tokenCalls := func() int { return f.Calls()["keystone.CreateToken"] }
	for i := 0; i < 10; i++ {
		_, err := inst.InstanceExists(context.Background(), n)
		if err == nil {
			t.Fatal("a wrong password logged in")
		}
		if i > 0 && !strings.Contains(err.Error(), "not trying again before") {
			t.Errorf("call %d: %v, want a fast failure saying when the next login is", i, err)
		}
		if strings.Contains(err.Error(), "wrong-password") {
			t.Errorf("the error carries the password: %v", err)
		}
	}
	if got := tokenCalls(); got != 1 {
		t.Errorf("%d token requests for 10 calls with a wrong password, want 1", got)
	}
	time.Sleep(250 * time.Millisecond)
	_, _ = inst.InstanceExists(context.Background(), n)
	_, err = inst.InstanceExists(context.Background(), n)
	if got := tokenCalls(); got != 2 {
		t.Errorf("%d token requests after the first wait, want 2", got)
	}
	if err == nil || !strings.Contains(err.Error(), "2 time(s) in a row") {
		t.Errorf("second refusal: %v", err)
	}
	// The wait doubled: 250ms later it is still closed.
	time.Sleep(250 * time.Millisecond)
	_, _ = inst.InstanceExists(context.Background(), n)
	if got := tokenCalls(); got != 2 {
		t.Errorf("%d token requests within the doubled wait, want 2", got)
	}
	// The operator fixes the password: after the wait, one login, and the gate is open again.
	c.cfg.Global.Password = f.Password()
	time.Sleep(250 * time.Millisecond)
	if _, err := inst.InstanceExists(context.Background(), n); err != nil {
		t.Fatalf("after the fix: %v", err)
	}
	if g := &c.sess.login; g.refusals != 0 || !g.next.IsZero() {
		t.Errorf("a successful login did not reset the backoff: %d refusals, next %v", g.refusals, g.next)
	}
}

// An outage (503 from Keystone) says nothing about the password: no backoff.
func TestLoginOutageDoesNotBackOff(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	inst, _ := c.InstancesV2()
	f.SetOutage(true)
	for i := 0; i < 3; i++ {
		_, _ = inst.InstanceExists(context.Background(), node("node-a", ""))
	}
	f.SetOutage(false)
	if _, err := inst.InstanceExists(context.Background(), node("node-a", "")); err != nil {
		t.Errorf("after the outage: %v", err)
	}
}

// A cloud error reaches the Service's Events with its operation, status and a short fault
// message: never the whole body, the project ID, the user name or a token.
func TestCloudErrorsAreSanitised(t *testing.T) {
	f := newFake(t, fake.Options{})
	const projectID = "0123456789abcdef0123456789abcdef"
	body := `{"faultcode": "Server", "faultstring": "Policy does not allow project ` + projectID + ` (user ` + f.Username() +
		`, token gAAAAABlsecrettoken) to create this", "debuginfo": "Traceback: db password=hunter2 in /etc/octavia/octavia.conf"}`
	f.SetFault("octavia.CreateLoadBalancer", fake.Fault{Status: 403, Body: body})
	lb := lbOf(t, newTestCloud(t, f, ""))
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, lbService("web", nil), lbNodes("10.0.0.5"))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, leak := range []string{projectID, "hunter2", "Traceback", "gAAAA", "user " + f.Username(), "Expected HTTP response code"} {
		if strings.Contains(msg, leak) {
			t.Errorf("the error carries %q: %s", leak, msg)
		}
	}
	for _, want := range []string{"POST load-balancer/lbaas/loadbalancers", "HTTP 403", "Policy does not allow project"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if !gophercloud.ResponseCodeIs(err, 403) {
		t.Errorf("the sanitised error no longer unwraps to the HTTP error")
	}
}

// Redaction hides secrets wherever they appear and the cloud identities where they stand
// alone, not inside the names of the Service's objects: with tenant-name = kubernetes and a
// cluster of that name, a load balancer's name stays readable in an Event.
func TestRedactionKeepsNames(t *testing.T) {
	cfg := Config{}
	cfg.Global.TenantName, cfg.Global.Username, cfg.Global.Password = "kubernetes", "k8s-ccm", "s3cret-pw"
	for in, want := range map[string]string{
		"creating load balancer kube_service_kubernetes_default_web: HTTP 409": "creating load balancer kube_service_kubernetes_default_web: HTTP 409",
		"listener ccm:kubernetes default/web uid-1 abc":                        "listener ccm:kubernetes default/web uid-1 abc",
		"project kubernetes (user k8s-ccm) may not":                            "project <redacted> (user <redacted>) may not",
		"kubernetes kubernetes":                                                "<redacted> <redacted>",
		"password=s3cret-pw; pws3cret-pwx":                                     "password=<redacted>; pw<redacted>x",
		"user k8s-ccm-other and kube-k8s-ccm":                                  "user k8s-ccm-other and kube-k8s-ccm",
	} {
		if got := cfg.redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
