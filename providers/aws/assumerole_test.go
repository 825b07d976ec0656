package aws

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const testRole = "arn:aws:iam::123456789012:role/ccm"

// syncBuffer is a log sink safe for klog's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captureLogs sends klog's output to a buffer for the rest of the test.
func captureLogs(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() { klog.Flush(); klog.LogToStderr(true) })
	return buf
}

// With RoleARN the base credentials sign one AssumeRole; EC2 and ELB calls are signed with
// the role's temporary key and carry its session token; expired credentials are fetched again
// (the fake refuses an expired key); neither the secret nor the token is logged.
func TestAssumeRole(t *testing.T) {
	logs := captureLogs(t)
	h := newHarness(t, "role")
	h.fake.SetSessionLifetime(2 * time.Second)
	cfg := strings.Replace(h.cfg, "[Global]\n", "[Global]\nRoleARN = "+testRole+"\n", 1) +
		"\n[ServiceOverride \"3\"]\nService = sts\nURL = " + h.fake.URL() + "\n"
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(nil, nil)
	ctx := context.Background()
	id, md := h.machine("role-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "role-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	inst, _ := c.InstancesV2()
	lb, _ := c.LoadBalancer()
	if ok, err := inst.InstanceExists(ctx, node); err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v", ok, err)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, []*v1.Node{node}); err != nil {
		t.Fatal(err)
	}

	assumed := func() (roleCalls int, keys map[string]bool) {
		keys = map[string]bool{}
		for sig, n := range h.fake.Signatures() {
			if sig.Op == "sts:AssumeRole" {
				if sig.AccessKey != "AKIDTEST" || sig.SessionToken {
					t.Errorf("AssumeRole signed by %+v, want the base key AKIDTEST without a token", sig)
				}
				roleCalls += n
				continue
			}
			if !strings.HasPrefix(sig.AccessKey, "ASIA") || !sig.SessionToken {
				t.Errorf("%d× %s signed by %q (token %v), want an assumed ASIA… key with its session token", n, sig.Op, sig.AccessKey, sig.SessionToken)
			}
			keys[sig.AccessKey] = true
		}
		return roleCalls, keys
	}
	if n, keys := assumed(); n != 1 || len(keys) != 1 {
		t.Fatalf("%d AssumeRole calls, %d signing keys; want one of each", n, len(keys))
	}
	if ops := h.fake.Calls(); ops["elb:CreateLoadBalancer"] != 1 {
		t.Fatalf("calls %v: the ELB was not made", ops)
	}

	time.Sleep(3100 * time.Millisecond) // past the session's expiry (the fake rounds it up to whole seconds)
	c.inst.Invalidate(id)
	if ok, err := inst.InstanceExists(ctx, node); err != nil || !ok {
		t.Fatalf("after expiry: InstanceExists = %v, %v", ok, err)
	}
	if n, keys := assumed(); n != 2 || len(keys) != 2 {
		t.Errorf("after expiry: %d AssumeRole calls, %d signing keys; want the credentials fetched again", n, len(keys))
	}

	klog.Flush()
	secrets := h.fake.Control(testSecret).Secrets()
	if len(secrets) != 5 {
		t.Fatalf("secrets %d, want the base secret and two secret/token pairs", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("a credential (%.6s…) appears in the log", s)
		}
	}
}

// A [ServiceOverride] with SigningName and SigningRegion changes the credential scope the
// requests of that client are signed for, each client its own.
func TestSigningOverride(t *testing.T) {
	h := newHarness(t, "scope")
	ctx := context.Background()
	cfg := strings.Replace(h.cfg, "SigningRegion = us-east-1\n\n[ServiceOverride \"2\"]",
		"SigningRegion = eu-west-3\nSigningName = compute\n\n[ServiceOverride \"2\"]", 1)
	cfg = strings.Replace(cfg, "URL = "+h.fake.URL()+"\nSigningRegion = us-east-1\n", "URL = "+h.fake.URL()+"\nSigningRegion = ap-south-1\nSigningName = lb\n", 1)
	if strings.Count(cfg, "SigningName") != 2 {
		t.Fatal("the harness's config changed shape; the overrides were not rewritten")
	}
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(nil, nil)
	_, md := h.machine("scope-a")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "scope-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	inst, _ := c.InstancesV2()
	if _, err := inst.InstanceMetadata(ctx, node); err != nil {
		t.Fatal(err)
	}
	lb, _ := c.LoadBalancer()
	if _, _, err := lb.GetLoadBalancer(ctx, "x", &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "none"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]fakeaws.Signature{
		"ec2": {Region: "eu-west-3", Service: "compute"},
		"elb": {Region: "ap-south-1", Service: "lb"},
	}
	seen := map[string]bool{}
	for sig := range h.fake.Signatures() {
		svc, _, _ := strings.Cut(sig.Op, ":")
		w, ok := want[svc]
		if !ok {
			continue
		}
		seen[svc] = true
		if sig.Region != w.Region || sig.Service != w.Service {
			t.Errorf("%s signed for %s/%s, want %s/%s", sig.Op, sig.Region, sig.Service, w.Region, w.Service)
		}
	}
	if !seen["ec2"] || !seen["elb"] {
		t.Errorf("saw %v; want EC2 and ELB calls", seen)
	}
}
