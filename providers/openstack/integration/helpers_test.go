package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

var eventually = testenv.Eventually

// machine creates a server in the fake and registers its Node as kubelet would; both go
// away after the test.
func machine(t *testing.T, name, ip, fip string) string {
	t.Helper()
	id := cloud.AddServer(fake.ServerSpec{Name: name, AZ: "az-1", Flavor: "m1.medium", IPs: []string{ip}, FloatingIP: fip})
	if err := testenv.RegisterNode(context.Background(), env.Client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cloud.DeleteServer(id)
		err := env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	return id
}

func getNode(name string) (*v1.Node, error) {
	return env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

// waitInitialised waits until the cloud node controller has finished with the Node.
func waitInitialised(t *testing.T, name string) *v1.Node {
	t.Helper()
	var n *v1.Node
	eventually(t, 30*time.Second, name+" initialised", func() (bool, error) {
		var err error
		n, err = getNode(name)
		return err == nil && testenv.Initialised(n), err
	})
	return n
}

func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano()%100000)
	if _, err := env.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func ingressIP(ns, name string) (string, error) {
	s, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
		return "", err
	}
	return s.Status.LoadBalancer.Ingress[0].IP, nil
}

func lbByName(name string) (fake.LoadBalancer, bool) {
	for _, lb := range cloud.LoadBalancers() {
		if lb.Name == name {
			return lb, true
		}
	}
	return fake.LoadBalancer{}, false
}

func lbName(ns, svc string) string { return "kube_service_testcluster_" + ns + "_" + svc }

func fipExists(addr string) (port string, ok bool) {
	for _, f := range cloud.FloatingIPs() {
		if f.Address == addr {
			return f.PortID, true
		}
	}
	return "", false
}

// deleteService deletes a Service and waits for the ccm to remove its finalizer.
func deleteService(t *testing.T, ns, name string) {
	t.Helper()
	svcs := env.Client.CoreV1().Services(ns)
	if err := svcs.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Service "+name+" gone", func() (bool, error) {
		_, err := svcs.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
