package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// What kube-vip's services mode announces a Service from is its kube-vip.io/loadbalancerIPs
// annotation (or spec.loadBalancerIP), not the status. With --write-kube-vip-annotation the
// pool providers write the annotation with the addresses of the status, so a kube-vip speaker
// announces what ccm hands out; the next sync reads it back as the Service's request and writes
// nothing more.
func TestKubeVIPAnnotationForTheSpeaker(t *testing.T) {
	conf := "[Global]\nregion = lab\n\n[Instance \"it-kv-node\"]\ninternal-ip = 10.2.0.19\n\n[Pool \"p\"]\nrange = 192.0.2.70-192.0.2.71\n"
	startCCM(t, "ccm-kubevip", conf, "--controllers=cloud-node,service", "--write-kube-vip-annotation")
	newNode(t, "it-kv-node")
	ns := namespace(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "web", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip, ann, rv string
	eventually(t, 30*time.Second, "web has an address and kube-vip's annotation", func() (bool, error) {
		s, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(s.Status.LoadBalancer.Ingress) > 0 {
			ip = s.Status.LoadBalancer.Ingress[0].IP
		}
		ann, rv = s.Annotations["kube-vip.io/loadbalancerIPs"], s.ResourceVersion
		return ip != "" && ann != "", nil
	})
	if ann != ip {
		t.Errorf("kube-vip.io/loadbalancerIPs = %q, status %q: the speaker would announce another address", ann, ip)
	}
	time.Sleep(2 * time.Second) // the sync the annotation's write triggers
	s, err := svcs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ResourceVersion != rv || s.Status.LoadBalancer.Ingress[0].IP != ip {
		t.Errorf("after the annotation the Service changed again: %v, resourceVersion %s -> %s", s.Status.LoadBalancer.Ingress, rv, s.ResourceVersion)
	}
}
