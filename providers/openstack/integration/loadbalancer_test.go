package integration

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// Three Services created at once with one service worker all get their address in about one
// provisioning delay: pending load balancers do not hold the worker. A new node is added to
// every pool with one batch call each; deleting releases the floating IPs we allocated and
// keeps the one the user brought.
// userFIP is a floating IP allocated by hand, allowed in the cloud config (main_test.go).
const userFIP = "172.24.4.77"

func TestLoadBalancerLifecycle(t *testing.T) {
	machine(t, "os-lb-a", "10.0.2.11", "")
	machine(t, "os-lb-b", "10.0.2.12", "")
	waitInitialised(t, "os-lb-a")
	waitInitialised(t, "os-lb-b")
	ns := namespace(t)
	cloud.AddFloatingIP(userFIP)
	names := []string{"web-0", "web-1", "web-2"}
	before := cloud.Calls()
	start := time.Now()
	for i, n := range names {
		svc := testenv.LoadBalancerService(ns, n, 80)
		if i == 2 {
			svc.Spec.LoadBalancerIP = userFIP
		}
		if _, err := env.Client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	eventually(t, 45*time.Second, "3 Services with an address", func() (bool, error) {
		for _, n := range names {
			ip, err := ingressIP(ns, n)
			if err != nil || ip == "" {
				return false, err
			}
			ips[n] = ip
		}
		return true, nil
	})
	took := time.Since(start)
	t.Logf("3 load balancers (provisioning delay %v each, 1 service worker) served in %v", provisionDelay, took.Round(100*time.Millisecond))
	if took >= 3*provisionDelay {
		t.Errorf("took %v: provisioning was serialised (3 × %v)", took, provisionDelay)
	}
	if ips["web-2"] != userFIP {
		t.Errorf("web-2 got %s, want its spec.loadBalancerIP %s", ips["web-2"], userFIP)
	}
	after := cloud.Calls()
	if n := after["octavia.CreateLoadBalancer"] - before["octavia.CreateLoadBalancer"]; n != 3 {
		t.Errorf("load balancer creates = %d, want 3", n)
	}
	for _, n := range names {
		lb, ok := lbByName(lbName(ns, n))
		if !ok || len(lb.Listeners) != 1 || !slices.Equal(lb.Listeners[0].Members, []string{"10.0.2.11:" + nodePort(t, ns, n), "10.0.2.12:" + nodePort(t, ns, n)}) {
			t.Errorf("%s: load balancer %+v", n, lb)
		}
		// upstream's two annotations, written by ccm onto the Service as upstream writes them
		want := map[string]string{"loadbalancer.openstack.org/load-balancer-id": lb.ID, "loadbalancer.openstack.org/load-balancer-address": ips[n]}
		eventually(t, 10*time.Second, n+": load-balancer-id and load-balancer-address", func() (bool, error) {
			s, err := env.Client.CoreV1().Services(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for k, v := range want {
				if s.Annotations[k] != v {
					return false, nil
				}
			}
			return true, nil
		})
	}

	batches := cloud.Calls()["octavia.BatchUpdateMembers"]
	machine(t, "os-lb-c", "10.0.2.13", "")
	eventually(t, 30*time.Second, "the new node in every pool", func() (bool, error) {
		for _, n := range names {
			lb, ok := lbByName(lbName(ns, n))
			if !ok || len(lb.Listeners) != 1 || len(lb.Listeners[0].Members) != 3 {
				return false, nil
			}
		}
		return true, nil
	})
	if n := cloud.Calls()["octavia.BatchUpdateMembers"] - batches; n != 3 {
		t.Errorf("member batch calls for one new node = %d, want 3 (one per load balancer)", n)
	}

	for _, n := range names {
		deleteService(t, ns, n)
	}
	for _, n := range names {
		if _, ok := lbByName(lbName(ns, n)); ok {
			t.Errorf("%s: load balancer left after delete", n)
		}
	}
	for _, n := range names[:2] {
		if _, ok := fipExists(ips[n]); ok {
			t.Errorf("%s: floating IP %s we allocated was not released", n, ips[n])
		}
	}
	if port, ok := fipExists(userFIP); !ok || port != "" {
		t.Errorf("user floating IP %s: exists %v, port %q; want kept and disassociated", userFIP, ok, port)
	}
}

func nodePort(t *testing.T, ns, name string) string {
	t.Helper()
	s, err := env.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(int(s.Spec.Ports[0].NodePort))
}

// A load balancer that ends in ERROR is deleted and created again, with a Warning event; a bad
// annotation value is a Warning event naming it.
func TestErrorLoadBalancerRecreated(t *testing.T) {
	machine(t, "os-err-a", "10.0.3.11", "")
	waitInitialised(t, "os-err-a")
	ns := namespace(t)
	cloud.ErrorNextCreates(1)
	creates := cloud.Calls()["octavia.CreateLoadBalancer"]
	svc := testenv.LoadBalancerService(ns, "flaky", 80)
	svc.Annotations = map[string]string{"loadbalancer.openstack.org/lb-method": "FASTEST"}
	if _, err := env.Client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 45*time.Second, "an address after the recreate", func() (bool, error) {
		ip, err := ingressIP(ns, "flaky")
		return ip != "", err
	})
	if n := cloud.Calls()["octavia.CreateLoadBalancer"] - creates; n != 2 {
		t.Errorf("creates = %d, want 2 (the failed one and its replacement)", n)
	}
	for reason, want := range map[string]string{"LoadBalancerError": "ERROR", "UnsupportedAnnotation": "loadbalancer.openstack.org/lb-method"} {
		eventually(t, 10*time.Second, reason+" event", func() (bool, error) {
			evs, err := env.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=flaky,reason=" + reason})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Type == "Warning" && strings.Contains(e.Message, want) {
					return true, nil
				}
			}
			return false, nil
		})
	}
	deleteService(t, ns, "flaky")
}

// An expired Keystone token costs exactly one new token, however many calls hit the 401.
func TestTokenExpiryOneReauth(t *testing.T) {
	before := cloud.TokensIssued()
	cloud.ExpireTokens()
	machine(t, "os-tok-a", "10.0.4.11", "")
	machine(t, "os-tok-b", "10.0.4.12", "")
	waitInitialised(t, "os-tok-a")
	waitInitialised(t, "os-tok-b")
	if n := cloud.TokensIssued() - before; n != 1 {
		t.Errorf("tokens issued after one expiry = %d, want 1", n)
	}
}
