package reach

import (
	"fmt"

	"github.com/ccm-project/ccm/common/ownership"
)

// ErrQuota is wrapped by a refusal for a namespace's share of a shared cloud quota.
var ErrQuota = fmt.Errorf("%w: the namespace's share of a shared quota", ErrRefused)

// NamespaceShare checks the share of a shared cloud quota (rules in a node security group,
// listeners on a shared load balancer, floating IPs of a project) that one namespace may take:
// among the objects described (each object's ownership description, ownership.Description),
// those of id's cluster and namespace but of other Services, plus want of id's own, must stay
// within limit (0: no limit). One tenant must not use up what every tenant's next load balancer
// needs. The refusal names the limit's config key; it names no other Service.
func NamespaceShare(id ownership.Identity, descriptions []string, want, limit int, what, key string) error {
	if limit <= 0 || want == 0 {
		return nil
	}
	others := 0
	for _, d := range descriptions {
		owner, _, ok := ownership.ParseDescription(d)
		if ok && owner.Cluster == id.Cluster && owner.Namespace == id.Namespace && owner.Name != id.Name {
			others++
		}
	}
	if others+want <= limit {
		return nil
	}
	return fmt.Errorf("namespace %q would hold %d %s (%d of this Service's, %d of its others), more than the %d a namespace may (%s): %w",
		id.Namespace, others+want, what, want, others, limit, key, ErrQuota)
}
