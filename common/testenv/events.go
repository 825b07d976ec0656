package testenv

import (
	"context"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// plannedRecheck matches the providers' api.RetryError messages: a load balancer still being
// provisioned (or a resource still in use) is a planned re-check, not a failure, but the
// library reports it with the same SyncLoadBalancerFailed Warning.
var plannedRecheck = regexp.MustCompile(`PENDING_|is provisioning|still in use|checking again in`)

// LBSyncWarnings counts the Warning events of failed load balancer syncs of the Services in
// namespace whose names start with prefix, and apart from them the planned re-checks; it
// returns up to three failures as examples.
func (e *Env) LBSyncWarnings(ctx context.Context, namespace, prefix string) (failed, rechecks int, examples []string, err error) {
	evs, err := e.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, nil, err
	}
	for _, ev := range evs.Items {
		if ev.Type != v1.EventTypeWarning || !strings.HasPrefix(ev.InvolvedObject.Name, prefix) ||
			(ev.Reason != "SyncLoadBalancerFailed" && ev.Reason != "UpdateLoadBalancerFailed") {
			continue
		}
		n := int(max(ev.Count, 1))
		if plannedRecheck.MatchString(ev.Message) {
			rechecks += n
			continue
		}
		failed += n
		if len(examples) < 3 {
			examples = append(examples, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	return failed, rechecks, examples, nil
}
