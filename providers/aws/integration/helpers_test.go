package integration

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

var ctx = context.Background()

var eventually = testenv.Eventually

func node(name string) (*v1.Node, error) {
	return env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// machine adds a running instance named (private DNS) name with one private IP.
func machine(name, ip, zone string) string {
	return fake.AddInstance(fakeaws.Instance{Type: "t3.medium", Zone: zone, PrivateDNS: name,
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{ip}}}})
}

// newNode registers a Node as kubelet does, optionally with a providerID already set.
func newNode(t *testing.T, name, providerID string) {
	t.Helper()
	if err := testenv.RegisterNode(ctx, env.Client, name); err != nil {
		t.Fatal(err)
	}
	if providerID == "" {
		return
	}
	n, err := node(name)
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.ProviderID = providerID
	if _, err := env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// initialised waits until the cloud node controller has finished with the Node.
func initialised(t *testing.T, name string) *v1.Node {
	t.Helper()
	var n *v1.Node
	eventually(t, 40*time.Second, name+" initialised", func() (bool, error) {
		var err error
		n, err = node(name)
		return err == nil && testenv.Initialised(n), err
	})
	return n
}
