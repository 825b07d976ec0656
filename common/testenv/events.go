package testenv

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LBSyncWarnings classifies the failed load balancer syncs of the Services in namespace whose
// names start with prefix as failures or provider's planned re-checks (see IsRecheck).
func (e *Env) LBSyncWarnings(ctx context.Context, provider, namespace, prefix string) (LBWarnings, error) {
	evs, err := e.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return LBWarnings{}, err
	}
	items := evs.Items[:0]
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.InvolvedObject.Name, prefix) {
			items = append(items, ev)
		}
	}
	return ClassifyLBWarnings(provider, items), nil
}
