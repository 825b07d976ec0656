package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ccm-project/ccm/common/testenv"
)

// Services are created, changed and deleted while the ccm is SIGKILLed at random points and
// restarted. Afterwards the dummy cloud holds exactly the load balancers of the Services that
// exist (none leaked), no Service is stuck with its finalizer, and no address is used twice.
func TestChurnWithKills(t *testing.T) {
	const ops, kills = 90, 3
	ctx := context.Background()
	cfg := "[Instance \"it-churn-node\"]\ninternal-ip = 10.6.0.1\n\n[Pool \"churn\"]\ncidr = 100.65.0.0/24\n"
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	ccm := startCCM(t, "ccm-churn-0", cfg)
	ccms := []*testenv.CCM{ccm}
	newNode(t, "it-churn-node")
	ns := namespace(t)
	svcs := env.Client.CoreV1().Services(ns)

	live := map[string]bool{}
	var history []string // what the test did, for the failure report
	did := func(format string, a ...any) {
		history = append(history, time.Now().Format("15:04:05.000000")+" "+fmt.Sprintf(format, a...))
	}
	killAt := map[int]bool{}
	for len(killAt) < kills {
		killAt[10+rng.IntN(ops-20)] = true
	}
	restarts := 0
	for i := range ops {
		if killAt[i] {
			ccm.Kill()
			did("killed ccm-churn-%d", restarts)
			restarts++
			ccm = startCCM(t, fmt.Sprintf("ccm-churn-%d", restarts), cfg)
			ccms = append(ccms, ccm)
			// Go on only once it leads, so that every kill hits a working leader.
			eventually(t, 30*time.Second, "the restarted ccm leads", func() (bool, error) {
				return strings.Contains(ccm.Log(), acquired), nil
			})
		}
		names := keys(live)
		switch r := rng.IntN(10); {
		case r < 5 || len(names) == 0:
			name := fmt.Sprintf("churn-%03d", i)
			if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, name, 80), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			live[name] = true
			did("created %s", name)
		case r < 7:
			name := names[rng.IntN(len(names))]
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the ccm writes it too
				s, err := svcs.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				s.Spec.Ports[0].Port = int32(1000 + i)
				_, err = svcs.Update(ctx, s, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			did("changed the port of %s", name)
		default:
			name := names[rng.IntN(len(names))]
			if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			delete(live, name)
			did("deleted %s", name)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
	}
	t.Logf("%d operations, %d SIGKILLs, %d Services left", ops, kills, len(live))

	// On failure, what every ccm logged about the Services whose records outlived them or
	// are missing (the log tails printed by startCCM rarely reach back to them).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		stored, want := storeKeys(t, ns), keys(live)
		odd := append(difference(stored, want), difference(want, stored)...)
		for _, h := range history {
			for _, name := range odd {
				if strings.HasSuffix(h, " "+name) || strings.HasPrefix(h[16:], "killed") {
					t.Logf("test: %s", h)
					break
				}
			}
		}
		for i, c := range ccms {
			for _, line := range strings.Split(c.Log(), "\n") {
				for _, name := range odd {
					if strings.Contains(line, "/"+name+"\"") || strings.Contains(line, "/"+name+" ") || strings.HasSuffix(line, "/"+name) || strings.Contains(line, "_"+name) {
						t.Logf("ccm-churn-%d about %s: %s", i, name, line)
						break
					}
				}
			}
		}
	})

	// Converged: exactly the live Services exist, each with one address of its own, and the
	// store holds exactly their records.
	eventually(t, 90*time.Second, "convergence after the churn", func() (bool, error) {
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) != len(live) {
			return false, fmt.Errorf("%d Services exist, %d expected (finalizers stuck?)", len(list.Items), len(live))
		}
		ips := map[string]string{}
		for _, s := range list.Items {
			got := ingressIPs(&s)
			if len(got) != 1 || s.Status.LoadBalancer.Ingress[0].Ports[0].Port != s.Spec.Ports[0].Port {
				return false, fmt.Errorf("%s: status %v not yet current", s.Name, s.Status.LoadBalancer.Ingress)
			}
			if other, dup := ips[got[0]]; dup {
				return false, fmt.Errorf("%s used by %s and %s", got[0], other, s.Name)
			}
			ips[got[0]] = s.Name
		}
		stored := storeKeys(t, ns)
		if want := keys(live); strings.Join(stored, ",") != strings.Join(want, ",") {
			return false, fmt.Errorf("store holds %v, want %v", stored, want)
		}
		return true, nil
	})
	// Clean up while the last ccm runs (the namespace clean-up runs after it stops).
	deleteServices(t, ns)
	if left := storeKeys(t, ns); len(left) != 0 {
		t.Errorf("records left after deleting every Service: %v", left)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// storeKeys lists the Service names of ns that the dummy cloud holds records for.
func storeKeys(t *testing.T, ns string) []string {
	t.Helper()
	list, err := env.Client.CoreV1().ConfigMaps("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ccm-dummy"})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, cm := range list.Items {
		for k := range cm.Data {
			if name, ok := strings.CutPrefix(k, ns+"_"); ok {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// difference is what a holds and b does not.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
