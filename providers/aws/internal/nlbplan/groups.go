package nlbplan

// Which security groups an NLB is to have: NLBSecurityGroupMode and the security-groups
// annotation against the NLB as it is, decided as upstream HEAD does (ensureNLBSecurityGroup,
// since its "BYO security groups for NLB", not yet released). Package aws reads the NLB and
// its groups and applies the decision:
//
//   - without Managed mode the NLB's groups are left as they are and the annotation is ignored
//     (ccm says so in a Warning);
//   - an NLB that exists without groups keeps none (AWS cannot add any to it): the annotation is
//     ignored there too;
//   - with the annotation, the NLB has exactly the named groups ("bring your own"): they are the
//     user's, ccm writes no rule or tag into them, and makes no group of its own; the Service's
//     own group, if the NLB still has it (the Service switched to the annotation), is detached
//     and then deleted, as upstream deletes it;
//   - without it, the NLB has the Service's own group only (made if missing, so a Service
//     switching back from the annotation gets one; the named groups are detached, never deleted,
//     where upstream's removeOwnedSecurityGroups deletes those tagged cluster-owned).

import (
	"fmt"
	"slices"
)

// SecurityGroups is the decision.
type SecurityGroups struct {
	// Own: the Service's own group (found or made, its rules synced) is the NLB's only group.
	Own bool
	// Named: the annotation's groups are the NLB's groups; checked before use, never written.
	Named []string
	// DropOwn: the Service's own group, on the NLB now, is not wanted any more: deleted once
	// the NLB no longer uses it.
	DropOwn bool
	// Advice says why the annotation is not applied ("" when it is, or is not set).
	Advice string
}

// PlanSecurityGroups decides. ann: the security-groups annotation's name, which the advice
// names; managed: NLBSecurityGroupMode = Managed; named: the annotation's IDs; exists: the NLB
// exists (current: its groups); own: the ID of the Service's own group among current ("" if
// none).
func PlanSecurityGroups(ann string, managed bool, named []string, exists bool, current []string, own string) SecurityGroups {
	switch {
	case !managed:
		if len(named) > 0 {
			return SecurityGroups{Advice: fmt.Sprintf("%s is used for an NLB only with [Global] NLBSecurityGroupMode = Managed; ignored, as upstream ignores it", ann)}
		}
		return SecurityGroups{}
	case exists && len(current) == 0:
		if len(named) > 0 {
			return SecurityGroups{Advice: fmt.Sprintf("%s not applied: the NLB was created without security groups and AWS cannot add any to it (as upstream, it is left so); recreate the Service to apply it", ann)}
		}
		return SecurityGroups{}
	case len(named) > 0:
		return SecurityGroups{Named: named, DropOwn: own != "" && !slices.Contains(named, own)}
	}
	return SecurityGroups{Own: true}
}
