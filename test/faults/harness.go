package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
)

// harness is one provider's run: control plane, cloud, Nodes, and every ccm it started.
type harness struct {
	ctx      context.Context
	env      *testenv.Env
	cloud    cloud
	provider string
	binary   string
	nodes    []string // registered, not yet removed
	sz       sizes
	seed     int64  // the churn's
	replay   string // the command that replays this provider's run

	running []*testenv.CCM // stopped after each scenario
	all     []*testenv.CCM // every ccm of the run, for the credentials scan
	started int
}

// result is one scenario's verdict and figures.
type result struct {
	Provider string            `json:"provider"`
	Scenario string            `json:"scenario"`
	Pass     bool              `json:"pass"`
	Detail   string            `json:"detail"`
	Figures  map[string]string `json:"figures,omitempty"`
	Took     string            `json:"took"`
}

func pass(detail string, figures map[string]string) result {
	return result{Pass: true, Detail: detail, Figures: figures}
}

func fail(format string, args ...any) result {
	return result{Pass: false, Detail: fmt.Sprintf(format, args...)}
}

// deletionWindow is the ccm's --node-deletion-confirmation here: short, so that a guard that
// let cloud errors count as "gone" would delete Nodes well within an outage.
const deletionWindow = 3 * time.Second

// startCCM starts a ccm replica with the harness's settings (lease 4s, see testenv).
func (h *harness) startCCM(extra ...string) (*testenv.CCM, error) {
	h.started++
	args := append([]string{"--v=" + strconv.Itoa(*verbosity), "--node-deletion-confirmation=" + deletionWindow.String(),
		"--concurrent-service-syncs=5"}, extra...)
	c, err := h.env.StartCCM(h.ctx, testenv.CCMOptions{
		Name: fmt.Sprintf("ccm-%s-%d", h.provider, h.started), Binary: h.binary, Provider: h.provider,
		CloudConfig: h.cloud.CloudConfig(), Args: args,
	})
	if err != nil {
		return nil, err
	}
	h.running = append(h.running, c)
	h.all = append(h.all, c)
	return c, nil
}

// stopAll stops the scenario's ccm replicas gracefully.
func (h *harness) stopAll() {
	for _, c := range h.running {
		c.Stop(10 * time.Second)
	}
	h.running = nil
}

func (h *harness) registerNodes() error {
	for _, n := range h.nodes {
		if err := testenv.RegisterNode(h.ctx, h.env.Client, n); err != nil {
			return fmt.Errorf("registering Node %s: %w", n, err)
		}
	}
	return nil
}

// waitFor polls cond every 250ms until it holds or timeout passes.
func (h *harness) waitFor(timeout time.Duration, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	var last error
	for {
		ok, err := cond()
		if ok {
			return time.Since(start), nil
		}
		last = err
		if time.Since(start) > timeout {
			if last != nil {
				return time.Since(start), fmt.Errorf("not after %v (last error: %v)", timeout, last)
			}
			return time.Since(start), fmt.Errorf("not after %v", timeout)
		}
		select {
		case <-h.ctx.Done():
			return time.Since(start), h.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// nodesInitialised is true when every registered Node has a providerID.
func (h *harness) nodesInitialised() (bool, error) {
	for _, n := range h.nodes {
		node, err := h.env.Client.CoreV1().Nodes().Get(h.ctx, n, metav1.GetOptions{})
		if err != nil || node.Spec.ProviderID == "" {
			return false, err
		}
	}
	return true, nil
}

func (h *harness) ensureNamespace(ns string) error {
	_, err := h.env.Client.CoreV1().Namespaces().Create(h.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// withoutIP lists the Services of ns (of type LoadBalancer) that have no ingress yet.
func (h *harness) withoutIP(ns string) ([]string, int, error) {
	list, err := h.env.Client.CoreV1().Services(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var pending []string
	n := 0
	for _, s := range list.Items {
		if s.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		n++
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			pending = append(pending, s.Name)
		}
	}
	return pending, n, nil
}

// loadBalancers are the cloud's load balancers by Service (namespace/name), with a count.
func (h *harness) loadBalancers() (map[string]int, []simcontrol.Resource, error) {
	res, err := h.cloud.Resources(h.ctx)
	if err != nil {
		return nil, nil, err
	}
	lbs := map[string]int{}
	for _, r := range res {
		if r.Kind == "loadbalancer" {
			lbs[r.Service]++
		}
	}
	return lbs, res, nil
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func pct(part, total int) string {
	if total == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(total))
}
