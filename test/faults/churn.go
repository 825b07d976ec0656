package main

import (
	"fmt"
	"math/rand"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// churn: Services are created, updated and deleted while the ccm is SIGKILLed at random points
// and restarted. Afterwards the cloud holds exactly one load balancer per existing LoadBalancer
// Service (none leaked, none doubled), no other resource of a Service that is gone, and no
// Service is stuck being deleted.
func churn(h *harness) result {
	const ns = "churn"
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	if err := h.ensureNamespace(ns); err != nil {
		return fail("namespace: %v", err)
	}
	if _, err := h.startCCM(); err != nil {
		return fail("starting the ccm: %v", err)
	}
	if _, err := h.waitFor(90*time.Second, h.nodesInitialised); err != nil {
		return fail("Nodes not initialised: %v", err)
	}
	svcs := h.env.Client.CoreV1().Services(ns)
	// The ops are spread over about 150ms each; the kills fall at random points in that span.
	span := time.Duration(h.sz.churnServices) * 150 * time.Millisecond * 2
	// killErr and kills are read after done is closed.
	var killErr error
	kills := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range h.sz.kills {
			time.Sleep(time.Duration(rng.Int63n(int64(span) / int64(h.sz.kills))))
			h.running[len(h.running)-1].Kill()
			time.Sleep(time.Duration(rng.Int63n(int64(2 * time.Second))))
			if _, err := h.startCCM(); err != nil {
				killErr = fmt.Errorf("restart %d: %w", i+1, err)
				return
			}
			kills++
		}
	}()

	created, updated, deleted := 0, 0, 0
	var live []string
	next := 0
	opRng := rand.New(rand.NewSource(seed + 1))
	for created < h.sz.churnServices || opRng.Intn(4) != 0 {
		time.Sleep(time.Duration(opRng.Intn(300)) * time.Millisecond)
		switch r := opRng.Intn(10); {
		case created < h.sz.churnServices && (r < 5 || len(live) == 0):
			name := fmt.Sprintf("c-%d", next)
			next++
			if _, err := svcs.Create(h.ctx, testenv.LoadBalancerService(ns, name, 80), createOpts); err != nil {
				return fail("creating %s: %v", name, err)
			}
			live = append(live, name)
			created++
		case len(live) > 0 && r < 8:
			name := live[opRng.Intn(len(live))]
			if err := changePort(h, ns, name, int32(1000+opRng.Intn(1000))); err != nil {
				return fail("updating %s: %v", name, err)
			}
			updated++
		case len(live) > 0:
			i := opRng.Intn(len(live))
			if err := svcs.Delete(h.ctx, live[i], metav1.DeleteOptions{}); err != nil {
				return fail("deleting %s: %v", live[i], err)
			}
			live = append(live[:i], live[i+1:]...)
			deleted++
		}
		if created >= h.sz.churnServices && len(live) == 0 {
			break
		}
	}
	<-done
	if killErr != nil {
		return fail("%v", killErr)
	}
	figs := map[string]string{
		"seed":     fmt.Sprint(seed),
		"ops":      fmt.Sprintf("%d created, %d updated, %d deleted", created, updated, deleted),
		"SIGKILLs": fmt.Sprint(kills),
	}
	settled := time.Now()
	var problem string
	_, err := h.waitFor(5*time.Minute, func() (bool, error) {
		p, err := h.converged(ns, live)
		problem = p
		return err == nil && p == "", err
	})
	if err != nil {
		return withFigures(fail("not converged: %s (%v)", problem, err), figs)
	}
	figs["converged after last op"] = time.Since(settled).Round(100 * time.Millisecond).String()
	figs["leaked / doubled"] = "0 / 0"
	return pass(fmt.Sprintf("%s with %d SIGKILLs: converged, 0 leaked, 0 stuck", figs["ops"], kills), figs)
}

// converged says what is still wrong ("" when nothing): Services without load balancers,
// deleted Services still present, and cloud resources that do not match the Services.
func (h *harness) converged(ns string, live []string) (string, error) {
	all, err := h.env.Client.CoreV1().Services("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	want := map[string]bool{}
	for _, s := range all.Items {
		if s.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		key := s.Namespace + "/" + s.Name
		if s.DeletionTimestamp != nil {
			return fmt.Sprintf("Service %s is still being deleted (finalizers %v)", key, s.Finalizers), nil
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Sprintf("Service %s has no load balancer", key), nil
		}
		want[key] = true
	}
	for _, name := range live {
		if !want[ns+"/"+name] {
			return fmt.Sprintf("Service %s/%s is missing", ns, name), nil
		}
	}
	lbs, res, err := h.loadBalancers()
	if err != nil {
		return "", err
	}
	for k, n := range lbs {
		switch {
		case !want[k]:
			return fmt.Sprintf("leaked: %d load balancer(s) of %q, which is not an existing LoadBalancer Service", n, k), nil
		case n > 1:
			return fmt.Sprintf("doubled: %d load balancers for %s", n, k), nil
		}
	}
	for k := range want {
		if lbs[k] == 0 {
			return fmt.Sprintf("Service %s has no load balancer in the cloud", k), nil
		}
	}
	for _, r := range res {
		if !want[r.Service] {
			return fmt.Sprintf("leaked: %s %s of %q", r.Kind, r.Name, r.Service), nil
		}
	}
	return "", nil
}

func changePort(h *harness, ns, name string, port int32) error {
	for {
		s, err := h.env.Client.CoreV1().Services(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports[0].Port = port
		s.Spec.Ports[0].Name = fmt.Sprintf("p%d", port)
		if _, err = h.env.Client.CoreV1().Services(ns).Update(h.ctx, s, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return err
		}
	}
}
