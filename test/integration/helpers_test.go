package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// startCCM runs a dummy ccm with the given cloud-config for the length of the test. On failure
// the end of its log is printed.
func startCCM(t *testing.T, name, cloudConfig string, args ...string) *testenv.CCM {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(cloudConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return runCCM(t, testenv.CCMOptions{Name: name, Provider: "dummy", CloudConfig: path, Args: args})
}

// runCCM runs ccm as o says for the length of the test. On failure the end of its log is
// printed.
func runCCM(t *testing.T, o testenv.CCMOptions) *testenv.CCM {
	t.Helper()
	c, err := env.StartCCM(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s log (last 40 lines):\n%s", o.Name, c.Tail(40))
		}
	})
	return c
}

var eventually = testenv.Eventually

// newNode registers a Ready Node as a kubelet with --cloud-provider=external would (with the
// uninitialized taint) and deletes it after the test.
func newNode(t *testing.T, name string) {
	t.Helper()
	if err := testenv.RegisterNode(context.Background(), env.Client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
}

func setReady(t *testing.T, name string, status v1.ConditionStatus) {
	t.Helper()
	if err := testenv.SetNodeReady(context.Background(), env.Client, name, status); err != nil {
		t.Fatal(err)
	}
}

func node(name string) (*v1.Node, error) {
	return env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

// namespace creates a namespace for the test and deletes it after.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), time.Now().UnixNano()%100000)
	_, err := env.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No namespace controller runs here, so deleting the namespace would not delete its
	// Services: delete them while the test's ccm still runs to release their load balancers.
	t.Cleanup(func() { deleteServices(t, name) })
	return name
}

func ingressIPs(s *v1.Service) []string {
	var out []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// deleteServices deletes every Service of ns and waits for the ccm to remove their finalizers;
// whatever is left after 20s loses its finalizer so the next test starts clean.
func deleteServices(t *testing.T, ns string) {
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	list, err := svcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing Services of %s: %v", ns, err)
		return
	}
	for _, s := range list.Items {
		if err := svcs.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Service %s/%s: %v", ns, s.Name, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, s := range list.Items {
				s.Finalizers = nil
				svcs.Update(ctx, &s, metav1.UpdateOptions{})
			}
			t.Errorf("%d Services of %s kept their finalizer for 20s", len(list.Items), ns)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}
