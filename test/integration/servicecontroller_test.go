package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ccm-project/ccm/common/testenv"
)

const scConfig = `
[Instance "it-sc-n1"]
internal-ip = 10.7.0.1

[Instance "it-sc-n2"]
internal-ip = 10.7.0.2

[Pool "sc"]
range = 198.51.100.10-198.51.100.19
`

// scOutcome is what a service controller leaves in the API for one run of the scenario.
type scOutcome struct {
	services map[string]string   // name -> finalizers and status
	events   map[string][]string // Service name -> "type reason message", one per occurrence, sorted
	restart  map[string][]string // the Events the restart added
}

// The same scenario through the library's controller and ours (--service-controller): create,
// a Node added, a Node excluded by label, a port change, a type change away from LoadBalancer,
// a Service of another class, a restart, a deletion. Both must leave the same finalizers,
// status and Events, except that our restart (nothing changed) writes nothing at all.
func TestServiceControllerMatchesTheLibrary(t *testing.T) {
	lib := runServiceScenario(t, "library")
	own := runServiceScenario(t, "ccm")
	if fmt.Sprint(lib.services) != fmt.Sprint(own.services) {
		t.Errorf("Services differ:\nlibrary %v\nccm     %v", lib.services, own.services)
	}
	// The library's restart records Events for Services it left unchanged; ours none.
	if len(lib.restart) == 0 {
		t.Error("the library's restart recorded no Event: the comparison cannot show the difference")
	}
	if len(own.restart) != 0 {
		t.Errorf("our restart recorded Events although nothing changed: %v", own.restart)
	}
	for name, evs := range lib.events {
		want := without(evs, lib.restart[name])
		if got := own.events[name]; !slices.Equal(got, want) {
			t.Errorf("Events of %s differ:\nlibrary (restart excluded) %q\nccm                        %q", name, want, got)
		}
	}
	for name := range own.events {
		if _, ok := lib.events[name]; !ok {
			t.Errorf("ccm recorded Events for %s, the library none: %q", name, own.events[name])
		}
	}
}

func without(all, some []string) []string {
	out := slices.Clone(all)
	for _, s := range some {
		if i := slices.Index(out, s); i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
	}
	return out
}

func runServiceScenario(t *testing.T, impl string) scOutcome {
	var out scOutcome
	t.Run(impl, func(t *testing.T) {
		ctx := context.Background()
		args := []string{"--service-controller=" + impl, "--cluster-name=it-sc-" + impl}
		c := startCCM(t, "ccm-sc-"+impl, scConfig, args...)
		initialisedNode(t, "it-sc-n1")
		ns := namespace(t)
		svcs := env.Client.CoreV1().Services(ns)
		waitIP := func(name string) {
			eventually(t, 30*time.Second, name+" has an address", func() (bool, error) {
				s, err := svcs.Get(ctx, name, metav1.GetOptions{})
				return err == nil && len(s.Status.LoadBalancer.Ingress) == 1, err
			})
		}
		// One at a time, so each run hands out the same addresses.
		for _, name := range []string{"alpha", "beta", "gamma"} {
			if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, name, 80), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitIP(name)
		}
		other := testenv.LoadBalancerService(ns, "other-class", 80)
		other.Spec.LoadBalancerClass = ptr.To("example.com/not-ours")
		if _, err := svcs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		settle := func(what string, cond func(map[string][]string) bool) {
			eventually(t, 30*time.Second, what, func() (bool, error) {
				evs, err := serviceEvents(ctx, ns)
				return err == nil && cond(evs), fmt.Errorf("%v %v", evs, err)
			})
			time.Sleep(1500 * time.Millisecond) // let late Events arrive, so both runs are compared at rest
		}
		count := func(evs []string, reason string) int {
			n := 0
			for _, e := range evs {
				if strings.Contains(e, " "+reason+" ") {
					n++
				}
			}
			return n
		}
		settle("Ensured Events", func(evs map[string][]string) bool {
			return count(evs["alpha"], "EnsuredLoadBalancer") == 1 && count(evs["gamma"], "EnsuredLoadBalancer") == 1
		})

		initialisedNode(t, "it-sc-n2") // every load balancer gets the new member
		settle("UpdatedLoadBalancer after a Node joined", func(evs map[string][]string) bool {
			return count(evs["alpha"], "UpdatedLoadBalancer") == 1 && count(evs["beta"], "UpdatedLoadBalancer") == 1 &&
				count(evs["gamma"], "UpdatedLoadBalancer") == 1
		})
		n2, err := node("it-sc-n2")
		if err != nil {
			t.Fatal(err)
		}
		n2.Labels[v1.LabelNodeExcludeBalancers] = "true"
		if _, err := env.Client.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		settle("UpdatedLoadBalancer after a Node was excluded", func(evs map[string][]string) bool {
			return count(evs["alpha"], "UpdatedLoadBalancer") == 2 && count(evs["beta"], "UpdatedLoadBalancer") == 2 &&
				count(evs["gamma"], "UpdatedLoadBalancer") == 2
		})

		alpha, err := svcs.Get(ctx, "alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alpha.Spec.Ports[0].Port = 8080
		if _, err := svcs.Update(ctx, alpha, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		beta, err := svcs.Get(ctx, "beta", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beta.Spec.Type = v1.ServiceTypeClusterIP
		beta.Spec.Ports[0].NodePort = 0
		if _, err := svcs.Update(ctx, beta, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		settle("alpha ensured again, beta's load balancer deleted", func(evs map[string][]string) bool {
			return count(evs["alpha"], "EnsuredLoadBalancer") == 2 && count(evs["beta"], "DeletedLoadBalancer") == 1
		})

		before, err := serviceEvents(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		versions := serviceVersions(t, ns)
		c.Stop(10 * time.Second)
		c2 := startCCM(t, "ccm-sc-"+impl+"-2", scConfig, args...)
		eventually(t, 60*time.Second, "the restarted ccm ensured alpha and gamma", func() (bool, error) {
			n, err := metricValue(t, c2, `ccm_reconcile_total{kind="loadbalancer",operation="ensure",provider="dummy",result="ok"}`)
			return n >= 2, fmt.Errorf("%v ensures, %v", n, err)
		})
		time.Sleep(3 * time.Second) // Events are sent asynchronously
		after, err := serviceEvents(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		out.restart = map[string][]string{}
		for name, evs := range after {
			if added := without(evs, before[name]); len(added) > 0 {
				out.restart[name] = added
			}
		}
		if impl == "ccm" {
			if got := serviceVersions(t, ns); fmt.Sprint(got) != fmt.Sprint(versions) {
				t.Errorf("the restart wrote to Services: %v -> %v", versions, got)
			}
		}

		if err := svcs.Delete(ctx, "gamma", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "gamma gone", func() (bool, error) {
			_, err := svcs.Get(ctx, "gamma", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
		settle("gamma's deletion recorded", func(evs map[string][]string) bool {
			return count(evs["gamma"], "DeletedLoadBalancer") == 1
		})
		out.events, err = serviceEvents(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		out.services = map[string]string{}
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			out.services[s.Name] = fmt.Sprintf("finalizers=%v ingress=%v", s.Finalizers, ingressIPs(&s))
		}
		// While the restarted ccm runs (the namespace clean-up would come after it stopped).
		deleteServices(t, ns)
		if len(out.events["other-class"]) != 0 || !strings.Contains(out.services["other-class"], "finalizers=[] ingress=[]") {
			t.Errorf("%s touched a Service of another class: %v %v", impl, out.services["other-class"], out.events["other-class"])
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// initialisedNode creates a Ready Node that the node controller has nothing to do for (providerID
// set, no uninitialized taint), so that joining is one Node event, not two (created, then
// initialised): the scenario then has the same Events whatever the timing.
func initialisedNode(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: v1.NodeSpec{ProviderID: "dummy:///" + name}}
	if _, err := env.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	setReady(t, name, v1.ConditionTrue)
}

// serviceEvents returns the Events of ns by Service, one entry per occurrence (an aggregated
// Event counts as many), sorted.
func serviceEvents(ctx context.Context, ns string) (map[string][]string, error) {
	evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "Service" {
			continue
		}
		for range max(e.Count, 1) {
			out[e.InvolvedObject.Name] = append(out[e.InvolvedObject.Name], e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out, nil
}

func serviceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := env.Client.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.ResourceVersion
	}
	return out
}

// Two ccm processes in one cluster, each with its own class, cluster name, address pool and
// leader election Lease: each serves only the Services of its class, and the Services without
// a class go to the one configured to serve them.
func TestTwoControllersSplitServicesByClass(t *testing.T) {
	ctx := context.Background()
	const lease = "ccm-class-b"
	grantLease(t, lease)
	cfgA := "[Instance \"it-cls-n1\"]\ninternal-ip = 10.8.0.1\n\n[Pool \"a\"]\nrange = 198.51.100.100-198.51.100.109\n"
	cfgB := "[Instance \"it-cls-n1\"]\ninternal-ip = 10.8.0.1\n\n[Pool \"b\"]\nrange = 198.51.100.200-198.51.100.209\n"
	startCCM(t, "ccm-class-a", cfgA, "--service-controller=ccm", "--cluster-name=it-class-a",
		"--load-balancer-class=example.com/a", "--serve-unclassed-services=false")
	startCCM(t, "ccm-class-b", cfgB, "--service-controller=ccm", "--cluster-name=it-class-b",
		"--load-balancer-class=example.com/b", "--leader-elect-resource-name="+lease)
	newNode(t, "it-cls-n1")
	ns := namespace(t)
	svcs := env.Client.CoreV1().Services(ns)
	want := map[string]string{ // Service -> the first three octets of the pool that must serve it
		"of-a": "198.51.100.10", "of-b": "198.51.100.20", "unclassed": "198.51.100.20", "of-c": "",
	}
	classes := map[string]string{"of-a": "example.com/a", "of-b": "example.com/b", "of-c": "example.com/c"}
	for name := range want {
		s := testenv.LoadBalancerService(ns, name, 80)
		if c, ok := classes[name]; ok {
			s.Spec.LoadBalancerClass = ptr.To(c)
		}
		if _, err := svcs.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "each Service served by its own ccm", func() (bool, error) {
		for name, prefix := range want {
			s, err := svcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ips := ingressIPs(s)
			if prefix == "" {
				continue
			}
			if len(ips) != 1 {
				return false, fmt.Errorf("%s: %v", name, ips)
			}
			if !strings.HasPrefix(ips[0], prefix) {
				t.Fatalf("%s got %s, want an address from the pool %s*", name, ips[0], prefix)
			}
		}
		return true, nil
	})
	for _, lease := range []string{"cloud-controller-manager", lease} {
		l, err := env.Client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			t.Errorf("lease %s not held: %v", lease, err)
		}
	}
	time.Sleep(2 * time.Second) // give a wrong controller time to act on of-c
	s, err := svcs.Get(ctx, "of-c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := serviceEvents(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Finalizers) != 0 || len(s.Status.LoadBalancer.Ingress) != 0 || len(evs["of-c"]) != 0 {
		t.Errorf("a Service of a class no ccm serves was touched: finalizers %v, status %v, Events %v",
			s.Finalizers, s.Status.LoadBalancer, evs["of-c"])
	}
	// Deleting a Service of class a: a's ccm deletes it, b's leaves the finalizer alone.
	if err := svcs.Delete(ctx, "of-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "of-a gone", func() (bool, error) {
		_, err := svcs.Get(ctx, "of-a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	// of-c keeps no finalizer, so the namespace clean-up can delete it.
}

// grantLease lets the ccm ServiceAccount hold a second leader election Lease in kube-system, as
// an operator running a second ccm would.
func grantLease(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "it-" + name, Namespace: "kube-system"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{name}, Verbs: []string{"get", "update"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "it-" + name, Namespace: "kube-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "cloud-controller-manager", Namespace: "kube-system"}},
	}
	rbac := env.Client.RbacV1()
	if _, err := rbac.Roles("kube-system").Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("kube-system").Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.RoleBindings("kube-system").Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = rbac.Roles("kube-system").Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
}
