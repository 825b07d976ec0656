package main

import (
	"fmt"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
)

// throttle: a token bucket in front of the cloud API while a burst of Services arrives: every
// Service gets its load balancer with no failed reconcile; the throttled share is reported.
func throttle(h *harness) result {
	const ns = "throttle"
	ok, err := h.cloud.SetThrottle(h.ctx, h.sz.burst, h.sz.rate)
	if err != nil {
		return fail("turning throttling on: %v", err)
	}
	if !ok {
		return pass("not applicable: this provider calls no cloud API (nothing to throttle)", nil)
	}
	defer h.cloud.SetThrottle(h.ctx, 0, 0) //nolint:errcheck // best effort; the next scenario notices
	if err := h.ensureNamespace(ns); err != nil {
		return fail("namespace: %v", err)
	}
	if _, err := h.startCCM(); err != nil {
		return fail("starting the ccm: %v", err)
	}
	if _, err := h.waitFor(120*time.Second, h.nodesInitialised); err != nil {
		return fail("Nodes not initialised under throttling: %v", err)
	}
	before, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err)
	}
	for i := range h.sz.throttleServices {
		if _, err := h.env.Client.CoreV1().Services(ns).Create(h.ctx, testenv.LoadBalancerService(ns, fmt.Sprintf("t-%d", i), 80), createOpts); err != nil {
			return fail("creating Service: %v", err)
		}
	}
	// Stops early at the first failed reconcile: that is the verdict already.
	took, err := h.waitFor(8*time.Minute, func() (bool, error) {
		if w, err := h.lbWarnings(ns); err == nil && w.Failed > 0 {
			return true, nil
		}
		pending, _, err := h.withoutIP(ns)
		return err == nil && len(pending) == 0, err
	})
	after, cerr := h.cloud.Calls(h.ctx)
	if cerr != nil {
		return fail("reading the cloud's calls: %v", cerr)
	}
	total, throttled := after.Total-before.Total, after.Throttled-before.Throttled
	w, ferr := h.lbWarnings(ns)
	failed := w.Failed
	figs := map[string]string{
		"services":               fmt.Sprint(h.sz.throttleServices),
		"bucket":                 fmt.Sprintf("%d burst, %g/s", h.sz.burst, h.sz.rate),
		"calls":                  fmt.Sprint(total),
		"throttled":              fmt.Sprintf("%d (%s)", throttled, pct(throttled, total)),
		"all ready after":        took.Round(100 * time.Millisecond).String(),
		"failed reconciles":      fmt.Sprint(failed),
		"provisioning re-checks": fmt.Sprint(w.Rechecks),
	}
	switch {
	case err != nil:
		return withFigures(fail("not every Service got a load balancer under throttling: %v", err), figs)
	case ferr != nil:
		return withFigures(fail("reading events: %v", ferr), figs)
	case failed > 0:
		return withFigures(fail("%d failed reconcile(s) under throttling (planned re-checks, %d, are counted apart), e.g. %v", failed, w.Rechecks, w.Examples), figs)
	case throttled == 0:
		return withFigures(fail("the cloud throttled no call: the burst did not exceed the bucket, so this proved nothing"), figs)
	}
	return pass(fmt.Sprintf("%d Services ready in %v, %s of %d calls throttled, 0 failed reconciles",
		h.sz.throttleServices, took.Round(100*time.Millisecond), pct(throttled, total), total), figs)
}
