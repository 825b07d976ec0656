package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// goldenFile pins what ccm writes into the cloud and finds its objects by after a restart or an
// upgrade: load balancer, target group and security group names, group and rule descriptions,
// ownership and fingerprint tags. A change that moved one would make every running ccm lose
// (and make again, or leak) its load balancers; a deliberate one rewrites the file with
// UPDATE_GOLDEN=1 and says so in its commit and in the upgrade notes.
const goldenFile = "testdata/golden/objects.txt"

func TestGoldenNamesAndFingerprints(t *testing.T) {
	h := newHarness(t, "golden")
	lb, _ := h.cloud(t, "").LoadBalancer()
	var nodes []*v1.Node
	for _, n := range []string{"golden-a", "golden-b"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	web := lbService("web", nil)
	web.Spec.Ports = web.Spec.Ports[:1]
	ranged := lbService("ranged", map[string]string{annotations.Prefix + annotations.Internal: "true"})
	ranged.Spec.Ports = ranged.Spec.Ports[:1]
	ranged.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24", "2001:db8::/64"}
	api2 := lbService("api", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	local := lbService("local", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	local.Spec.ExternalTrafficPolicy, local.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	var names []string
	for i, svc := range []*v1.Service{web, ranged, api2, local} {
		svc.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1))
		ensureSettled(t, lb, svc, nodes)
		names = append(names, lb.GetLoadBalancerName(context.Background(), "golden", svc))
	}
	got := goldenLines(h, names)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(goldenFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Clean(goldenFile))
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the objects ccm writes differ from %s; a running ccm would no longer find its own. "+
			"If that is meant, UPDATE_GOLDEN=1 go test -run TestGoldenNamesAndFingerprints . and say so in the upgrade notes.\n%s",
			goldenFile, lineDiff(string(want), got))
	}
}

// ensureSettled ensures svc until the cloud has finished provisioning it.
func ensureSettled(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := lb.EnsureLoadBalancer(context.Background(), "golden", svc, nodes)
		var retry *api.RetryError
		if err == nil {
			return
		}
		if !errors.As(err, &retry) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", svc.Name, err)
		}
	}
}

// goldenLines reads back the objects of the load balancers named, and every security group,
// as sorted lines without the cloud's generated IDs.
func goldenLines(h *harness, names []string) string {
	var out []string
	tags := func(m map[string]string) string {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kv = append(kv, k+"="+m[k])
		}
		return strings.Join(kv, " ")
	}
	for _, n := range names {
		if elb, ok := h.fake.ClassicLB(n); ok {
			out = append(out, fmt.Sprintf("elb %s scheme=%s tags: %s", elb.Name, elb.Scheme, tags(elb.Tags)))
			continue
		}
		if nlb, _, tgs, ok := h.fake.NLBByName(n); ok {
			out = append(out, fmt.Sprintf("nlb %s scheme=%s tags: %s", nlb.Name, nlb.Scheme, tags(nlb.Tags)))
			for _, tg := range tgs {
				out = append(out, fmt.Sprintf("tg %s %s:%d health=%s:%s%s tags: %s", tg.Name, tg.Protocol, tg.Port, tg.HealthProtocol, tg.HealthPort, tg.HealthPath, tags(tg.Tags)))
			}
		}
	}
	for _, g := range h.fake.SecurityGroups() {
		out = append(out, fmt.Sprintf("sg %s %q tags: %s", g.Name, g.Description, tags(g.Tags)))
		for _, r := range g.Rules {
			from := r.CIDR
			if r.SourceSG != "" {
				from = "group " + groupNameOf(h, r.SourceSG)
			}
			out = append(out, fmt.Sprintf("sg %s rule %s %d-%d from %s %q", g.Name, r.Protocol, r.From, r.To, from, r.Description))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n") + "\n"
}

func groupNameOf(h *harness, id string) string {
	if g, ok := h.fake.Group(id); ok {
		return g.Name
	}
	return "?"
}

// lineDiff lists the lines only in want (-) or only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
