package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// lbWarnings are the failed load balancer syncs of a namespace, told apart (see
// testenv.IsRecheck for the rule).
type lbWarnings = testenv.LBWarnings

// lbWarnings reads the namespace's Events and classifies them for the harness's provider.
func (h *harness) lbWarnings(ns string) (lbWarnings, error) {
	evs, err := h.env.Client.CoreV1().Events(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return lbWarnings{}, fmt.Errorf("listing the Events of %s: %w", ns, err)
	}
	return testenv.ClassifyLBWarnings(h.provider, evs.Items), nil
}

// serviceWarnings are the last n Warning Events (any reason) of Service ns/name, oldest first,
// for a leak report.
func (h *harness) serviceWarnings(ctx context.Context, ns, name string, n int) []string {
	evs, err := h.env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"(Events unreadable: " + err.Error() + ")"}
	}
	items := evs.Items
	sort.SliceStable(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
	var out []string
	for _, ev := range items {
		if ev.InvolvedObject.Kind != "Service" || ev.InvolvedObject.Name != name || ev.Type != v1.EventTypeWarning {
			continue
		}
		verdict := "failure"
		if testenv.IsRecheck(h.provider, ev.Message) {
			verdict = "re-check"
		}
		out = append(out, fmt.Sprintf("%s ×%d (%s): %s", ev.Reason, max(ev.Count, 1), verdict, shorten(ev.Message, 300)))
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
