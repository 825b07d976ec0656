package main

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
)

const (
	acquired = `"Successfully acquired lease"`
	lease    = 4 * time.Second // testenv's --leader-elect-lease-duration
)

// failover: the leader SIGKILLed → the standby leads within the lease time and reconciles; the
// new leader stopped gracefully (SIGTERM) → the other leads within ~2s (the Lease is released).
func failover(h *harness) result {
	const ns = "failover"
	if err := h.ensureNamespace(ns); err != nil {
		return fail("namespace: %v", err)
	}
	a, err := h.startCCM()
	if err != nil {
		return fail("starting replica a: %v", err)
	}
	if _, err := h.waitFor(60*time.Second, func() (bool, error) { return strings.Contains(a.Log(), acquired), nil }); err != nil {
		return fail("replica a never led: %v\n%s", err, a.Tail(10))
	}
	if _, err := h.waitFor(90*time.Second, h.nodesInitialised); err != nil {
		return fail("Nodes not initialised: %v\n%s", err, a.Tail(10))
	}
	b, err := h.startCCM()
	if err != nil {
		return fail("starting replica b: %v", err)
	}
	if _, err := h.waitFor(30*time.Second, func() (bool, error) {
		return strings.Contains(b.Log(), "Attempting to acquire leader lease"), nil
	}); err != nil {
		return fail("replica b never tried to lead: %v", err)
	}
	if r, ok := h.serviceGetsIP(ns, "before", 90*time.Second); !ok {
		return r
	}

	a.Kill()
	killed := time.Now()
	if _, err := h.waitFor(30*time.Second, func() (bool, error) { return strings.Contains(b.Log(), acquired), nil }); err != nil {
		return fail("the standby did not take over after the leader was killed: %v\n%s", err, b.Tail(10))
	}
	takeover := time.Since(killed)
	if r, ok := h.serviceGetsIP(ns, "after-kill", 90*time.Second); !ok {
		return r
	}
	reconciled := time.Since(killed)

	c, err := h.startCCM()
	if err != nil {
		return fail("starting replica c: %v", err)
	}
	if _, err := h.waitFor(30*time.Second, func() (bool, error) {
		return strings.Contains(c.Log(), "Attempting to acquire leader lease"), nil
	}); err != nil {
		return fail("replica c never tried to lead: %v", err)
	}
	if err := b.Signal(syscall.SIGTERM); err != nil {
		return fail("SIGTERM to the leader: %v", err)
	}
	stopped := time.Now()
	if _, err := h.waitFor(30*time.Second, func() (bool, error) { return strings.Contains(c.Log(), acquired), nil }); err != nil {
		return fail("no handover after a graceful stop: %v\n%s", err, c.Tail(10))
	}
	handover := time.Since(stopped)
	if r, ok := h.serviceGetsIP(ns, "after-stop", 90*time.Second); !ok {
		return r
	}
	figs := map[string]string{
		"takeover after SIGKILL":    takeover.Round(100 * time.Millisecond).String(),
		"reconciled after SIGKILL":  reconciled.Round(100 * time.Millisecond).String(),
		"handover after SIGTERM":    handover.Round(100 * time.Millisecond).String(),
		"lease duration / retry":    "4s / 500ms",
		"leader exit after SIGTERM": exitTime(b),
	}
	// The standby polls every retry period; a lease not released would keep it out until expiry.
	if takeover > lease+2*time.Second {
		return withFigures(fail("the standby took %v to lead after a SIGKILL (lease %v)", takeover, lease), figs)
	}
	if handover > 3*time.Second {
		return withFigures(fail("graceful handover took %v (want about 2s: the Lease is released on stop)", handover), figs)
	}
	return pass(fmt.Sprintf("takeover %v after SIGKILL, handover %v after SIGTERM", takeover.Round(100*time.Millisecond), handover.Round(100*time.Millisecond)), figs)
}

func exitTime(p *testenv.CCM) string {
	select {
	case <-p.Done():
		return "exited"
	case <-time.After(15 * time.Second):
		return "still running 15s after SIGTERM"
	}
}

func withFigures(r result, f map[string]string) result { r.Figures = f; return r }

// serviceGetsIP creates a LoadBalancer Service and waits for its ingress.
func (h *harness) serviceGetsIP(ns, name string, timeout time.Duration) (result, bool) {
	if _, err := h.env.Client.CoreV1().Services(ns).Create(h.ctx, testenv.LoadBalancerService(ns, name, 80), createOpts); err != nil {
		return fail("creating Service %s/%s: %v", ns, name, err), false
	}
	if _, err := h.waitFor(timeout, func() (bool, error) {
		pending, _, err := h.withoutIP(ns)
		return err == nil && !contains(pending, name), err
	}); err != nil {
		return fail("Service %s/%s got no load balancer: %v", ns, name, err), false
	}
	return result{}, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
