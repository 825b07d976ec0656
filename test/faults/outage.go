package main

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// outage: all cloud calls fail for a while, with three NotReady Nodes of which two machines are
// gone: 0 Nodes and 0 load balancers deleted during it; afterwards the two gone machines'
// Nodes are removed, the third stays, and every Service keeps its load balancer.
func outage(h *harness) result {
	const ns = "outage"
	if len(h.nodes) < 3 {
		return fail("needs at least 3 Nodes, have %d", len(h.nodes))
	}
	if err := h.ensureNamespace(ns); err != nil {
		return fail("namespace: %v", err)
	}
	if _, err := h.startCCM(); err != nil {
		return fail("starting the ccm: %v", err)
	}
	if _, err := h.waitFor(90*time.Second, h.nodesInitialised); err != nil {
		return fail("Nodes not initialised: %v", err)
	}
	for i := range h.sz.services {
		if _, err := h.env.Client.CoreV1().Services(ns).Create(h.ctx, testenv.LoadBalancerService(ns, fmt.Sprintf("o-%d", i), 80), createOpts); err != nil {
			return fail("creating Service: %v", err)
		}
	}
	if _, err := h.waitFor(3*time.Minute, func() (bool, error) {
		p, _, err := h.withoutIP(ns)
		return err == nil && len(p) == 0, err
	}); err != nil {
		return fail("Services got no load balancers before the outage: %v", err)
	}
	lbsBefore, _, err := h.loadBalancers()
	if err != nil {
		return fail("listing the cloud's load balancers: %v", err)
	}
	nodesBefore, err := h.env.Client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return fail("listing Nodes: %v", err)
	}
	gone := h.nodes[len(h.nodes)-2:]
	alive := h.nodes[0]
	callsBefore, _ := h.cloud.Calls(h.ctx)

	if err := h.cloud.SetOutage(h.ctx, true); err != nil {
		return fail("starting the outage: %v", err)
	}
	outageOn := true
	defer func() {
		if outageOn {
			h.cloud.SetOutage(h.ctx, false) //nolint:errcheck // best effort on a failed run
		}
	}()
	for _, n := range append([]string{alive}, gone...) {
		if err := testenv.SetNodeReady(h.ctx, h.env.Client, n, v1.ConditionFalse); err != nil {
			return fail("marking %s NotReady: %v", n, err)
		}
	}
	for _, n := range gone {
		if err := h.cloud.Terminate(h.ctx, n); err != nil {
			return fail("terminating %s: %v", n, err)
		}
	}
	// Hold the outage, checking every second that nothing is deleted.
	minNodes, minLBs := len(nodesBefore.Items), len(lbsBefore)
	for end := time.Now().Add(h.sz.outage); time.Now().Before(end); time.Sleep(time.Second) {
		nodes, err := h.env.Client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
		if err == nil {
			minNodes = min(minNodes, len(nodes.Items))
		}
		// The cloud's inventory is read through the control endpoint, not the failing API.
		if lbs, _, err := h.loadBalancers(); err == nil {
			minLBs = min(minLBs, len(lbs))
		}
	}
	callsDuring, _ := h.cloud.Calls(h.ctx)
	if err := h.cloud.SetOutage(h.ctx, false); err != nil {
		return fail("ending the outage: %v", err)
	}
	outageOn = false
	figs := map[string]string{
		"outage":                  h.sz.outage.String(),
		"deletion confirmation":   deletionWindow.String(),
		"nodes deleted in outage": fmt.Sprint(len(nodesBefore.Items) - minNodes),
		"LBs deleted in outage":   fmt.Sprint(len(lbsBefore) - minLBs),
		"failed calls in outage":  fmt.Sprint(callsDuring.Failed - callsBefore.Failed),
	}
	if minNodes < len(nodesBefore.Items) || minLBs < len(lbsBefore) {
		return withFigures(fail("the outage deleted %d Node(s) and %d load balancer(s)", len(nodesBefore.Items)-minNodes, len(lbsBefore)-minLBs), figs)
	}
	took, err := h.waitFor(2*time.Minute, func() (bool, error) {
		for _, n := range gone {
			if _, err := h.env.Client.CoreV1().Nodes().Get(h.ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return withFigures(fail("the gone machines' Nodes were not removed after the outage: %v", err), figs)
	}
	figs["gone Nodes removed after recovery"] = took.Round(100 * time.Millisecond).String()
	// Give the deletion path twice its window more: the NotReady Node with a machine stays.
	time.Sleep(2 * deletionWindow)
	if _, err := h.env.Client.CoreV1().Nodes().Get(h.ctx, alive, metav1.GetOptions{}); err != nil {
		return withFigures(fail("Node %s (NotReady, machine running) was removed: %v", alive, err), figs)
	}
	if err := testenv.SetNodeReady(h.ctx, h.env.Client, alive, v1.ConditionTrue); err != nil {
		return fail("marking %s Ready: %v", alive, err)
	}
	h.nodes = h.nodes[:len(h.nodes)-2]
	lbsAfter, _, err := h.loadBalancers()
	if err != nil {
		return withFigures(fail("listing the cloud's load balancers: %v", err), figs)
	}
	for _, k := range sortedKeys(lbsBefore) {
		if lbsAfter[k] == 0 {
			return withFigures(fail("the load balancer of %s is gone after the outage", k), figs)
		}
	}
	if p, _, err := h.withoutIP(ns); err != nil || len(p) > 0 {
		return withFigures(fail("Services without a load balancer after the outage: %v %v", p, err), figs)
	}
	return pass(fmt.Sprintf("%v outage: 0 Nodes and 0 load balancers deleted; the 2 gone machines' Nodes removed %v after recovery, the running one kept",
		h.sz.outage, took.Round(100*time.Millisecond)), figs)
}
