package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

const finalizer = "service.kubernetes.io/load-balancer-cleanup"

// A pool of exactly two addresses makes "released" observable: a third Service gets an
// address only once one of the first two is deleted.
const lbConfig = `
[Global]
region = lab

[Instance "it-lb-node"]
internal-ip = 10.2.0.1

[Pool "tiny"]
range = 192.0.2.50-192.0.2.51
`

func TestLoadBalancerLifecycle(t *testing.T) {
	startCCM(t, "ccm-lb", lbConfig, "--controllers=cloud-node,service") // upstream charts' aliases
	newNode(t, "it-lb-node")
	ns := namespace(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)

	get := func(name string) (*v1.Service, error) { return svcs.Get(ctx, name, metav1.GetOptions{}) }
	waitIP := func(name string) *v1.Service {
		var s *v1.Service
		eventually(t, 30*time.Second, name+" has an ingress IP", func() (bool, error) {
			var err error
			s, err = get(name)
			return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, err
		})
		return s
	}

	for _, name := range []string{"one", "two"} {
		if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, name, 80), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	one, two := waitIP("one"), waitIP("two")
	if !slices.Contains(one.Finalizers, finalizer) {
		t.Errorf("finalizer missing: %v", one.Finalizers)
	}
	ipOne, ipTwo := ingressIPs(one), ingressIPs(two)
	if len(ipOne) != 1 || len(ipTwo) != 1 || ipOne[0] == ipTwo[0] {
		t.Fatalf("want two distinct IPs, got %v and %v", ipOne, ipTwo)
	}
	for _, ip := range append(ipOne, ipTwo...) {
		if ip != "192.0.2.50" && ip != "192.0.2.51" {
			t.Errorf("IP %s is not from the pool", ip)
		}
	}
	if m := one.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != v1.LoadBalancerIPModeVIP {
		t.Errorf("ipMode = %v, want VIP", m)
	}

	// The pool is exhausted: a third Service waits, with a Warning event that says why.
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "three", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a Warning event about the exhausted pool", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=three"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && contains(e.Message, "pool exhausted") {
				return true, nil
			}
		}
		return false, nil
	})

	// Changing the Service (a new port) keeps its address.
	one.Spec.Ports = append(one.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
	if _, err := svcs.Update(ctx, one, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "update event for the changed Service", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=one"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range evs.Items {
			if e.Reason == "EnsuredLoadBalancer" {
				n += int(max(e.Count, 1))
			}
		}
		return n >= 2, nil
	})
	if s, _ := get("one"); !slices.Equal(ingressIPs(s), ipOne) {
		t.Errorf("address changed on update: %v -> %v", ipOne, ingressIPs(s))
	}

	// Deleting "one" removes its finalizer and releases its address to "three".
	if err := svcs.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "Service one gone (finalizer removed)", func() (bool, error) {
		_, err := get("one")
		return apierrors.IsNotFound(err), err
	})
	three := waitIP("three")
	if got := ingressIPs(three); !slices.Equal(got, ipOne) {
		t.Errorf("three got %v, want the released %v", got, ipOne)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
