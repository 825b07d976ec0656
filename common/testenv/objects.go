package testenv

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// UninitializedTaint is the taint kubelet --cloud-provider=external puts on a new Node.
const UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// HasTaint tells whether n carries a taint with key.
func HasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}

// Initialised tells whether the cloud node controller has finished with n: providerID set,
// the uninitialized taint gone and the addresses there. It writes the Node and its status in
// two updates, so the taint alone can be gone while the addresses are not there yet.
func Initialised(n *v1.Node) bool {
	return n.Spec.ProviderID != "" && len(n.Status.Addresses) > 0 && !HasTaint(n, UninitializedTaint)
}

// RegisterNode creates a Node as kubelet --cloud-provider=external does (with the
// uninitialized taint) and marks it Ready.
func RegisterNode(ctx context.Context, client kubernetes.Interface, name string) error {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: UninitializedTaint, Value: "true", Effect: v1.TaintEffectNoSchedule}}},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return err
	}
	return SetNodeReady(ctx, client, name, v1.ConditionTrue)
}

// SetNodeReady sets the Node's Ready condition, retrying on conflicts with the ccm's writes.
func SetNodeReady(ctx context.Context, client kubernetes.Interface, name string, status v1.ConditionStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// LoadBalancerService returns a Service of type LoadBalancer with one TCP port.
func LoadBalancerService(namespace, name string, port int32) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Ports:    []v1.ServicePort{{Name: fmt.Sprintf("p%d", port), Port: port, Protocol: v1.ProtocolTCP}},
			Selector: map[string]string{"app": name},
		},
	}
}
