package nlbplan

// The frame of an NLB is what its parts (Compute) hang on: the NLB itself, made or made again
// for a scheme change, its security groups (its own group, made, taken over from upstream, its
// rules; the groups it has; its own group dropped once detached) and the rules its clients
// need in the node groups, with the shared path-MTU rules those bring. PlanFrame decides all of
// it from what was read, before anything is written, so the caller checks the NLB's owner once
// and then writes the frame in the order of Frame's fields.

import (
	"fmt"
	"slices"

	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

// NodeRules is what the Service wants in the node groups.
type NodeRules struct {
	// Want are the rules wanted in each group of In; in the other groups read, the Service's
	// rules go.
	Want []sgrules.Rule
	In   []string
	// Mine says whether a rule is the Service's (its description, or upstream's for its NLB,
	// which it takes over). Upstream says which of those upstream added: a wanted one is given
	// ccm's description in place, so the traffic it admits never stops.
	Mine, Upstream func(sgrules.Rule) bool
	// Cluster scopes the shared path-MTU rules.
	Cluster string
}

// FrameDesired is what the Service asks of its NLB's frame.
type FrameDesired struct {
	Scheme string
	Groups SecurityGroups // PlanSecurityGroups' decision
	// OwnRules are the rules of the NLB's own group (every rule in it is the Service's).
	OwnRules []sgrules.Rule
	Nodes    NodeRules
}

// FrameObserved is the frame as read.
type FrameObserved struct {
	Exists bool
	Scheme string
	Groups []string // the NLB's security groups
	// Own is the Service's own group (nil: none, it is made when wanted).
	Own *sgrules.Group
	// Detached is the Service's own group, not wanted any more, found off the NLB or on it.
	Detached string
	Nodes    []sgrules.Group // the node groups read: wanted now, and those of an earlier reconcile
}

// Frame is the frame's writes, in the order they are made.
type Frame struct {
	// Recreate deletes the NLB first (its scheme changes; AWS cannot do it in place).
	Recreate bool
	// Own: the NLB's own group's writes; nil when the NLB is not to have one.
	Own *sgrules.Own
	// Create makes the NLB (with the groups Groups says).
	Create bool
	// SetGroups gives the existing NLB its groups: Named, or its own group.
	SetGroups bool
	Named     []string
	// Drop deletes the Service's own group once the NLB no longer uses it ("": none).
	Drop string
	// Nodes are the node groups' client and health rules; MTU the groups whose shared
	// path-MTU rules are then settled (under each group's lock, from a fresh read), with the
	// Service's wanted client rules there.
	Nodes []sgrules.Change
	MTU   map[string][]sgrules.Rule
}

// Writes says whether the frame writes anything (MTU rules are looked at only where the
// client rules changed or look out of step, so a listed group there is a write too).
func (f Frame) Writes() bool {
	return f.Recreate || f.Create || f.SetGroups || f.Drop != "" || len(f.Nodes) > 0 || len(f.MTU) > 0 ||
		f.Own.Writes()
}

// PlanFrame is the frame that makes have what want says.
func PlanFrame(want FrameDesired, have FrameObserved) Frame {
	var f Frame
	f.Recreate = have.Exists && have.Scheme != want.Scheme
	f.Create = !have.Exists || f.Recreate
	if want.Groups.Own {
		f.Own = sgrules.PlanOwn(have.Own, want.OwnRules)
	}
	if !f.Create && (want.Groups.Own || len(want.Groups.Named) > 0) {
		if want.Groups.Own {
			f.SetGroups = f.Own.ID == "" || !sameSet([]string{f.Own.ID}, have.Groups)
		} else {
			f.SetGroups = !sameSet(want.Groups.Named, have.Groups)
		}
	}
	f.Named = want.Groups.Named
	if have.Detached != "" && !slices.Contains(want.Groups.Named, have.Detached) {
		f.Drop = have.Detached
	}
	f.Nodes, f.MTU = PlanNodeRules(want.Nodes, have.Nodes)
	return f
}

// PlanNodeRules is each node group's writes and the groups whose shared MTU rules are to be
// settled after them: those whose client rules change, or whose MTU rules look out of step.
// A group appears in groups once, however often it is read.
func PlanNodeRules(want NodeRules, groups []sgrules.Group) ([]sgrules.Change, map[string][]sgrules.Rule) {
	var changes []sgrules.Change
	mtu := map[string][]sgrules.Rule{}
	seen := map[string]bool{}
	for _, g := range groups {
		if seen[g.ID] {
			continue
		}
		seen[g.ID] = true
		var rs []sgrules.Rule
		if slices.Contains(want.In, g.ID) {
			rs = want.Want
		}
		have, c := redescribe(g, rs, want.Upstream)
		c.Add, c.Del = sgrules.Plan(have, rs, want.Mine)
		if len(c.Redescribe)+len(c.Add)+len(c.Del) > 0 {
			changes = append(changes, c)
		}
		if len(c.Redescribe)+len(c.Add)+len(c.Del) > 0 || sgrules.MTUOutOfStep(want.Cluster, sgrules.After(have, rs, want.Mine), rs) {
			mtu[g.ID] = rs
		}
	}
	if len(mtu) == 0 {
		mtu = nil
	}
	return changes, mtu
}

// redescribe gives the rules of g that are wanted and upstream's (same rule, upstream's
// description) the wanted description. It returns g's rules as they are then.
func redescribe(g sgrules.Group, want []sgrules.Rule, upstream func(sgrules.Rule) bool) ([]sgrules.Rule, sgrules.Change) {
	c := sgrules.Change{Group: g.ID}
	if upstream == nil {
		return g.Rules, c
	}
	out := slices.Clone(g.Rules)
	for i, h := range out {
		if !upstream(h) {
			continue
		}
		if j := slices.IndexFunc(want, func(r sgrules.Rule) bool { return r.Key() == h.Key() }); j >= 0 {
			out[i].Desc = want[j].Desc
			c.Redescribe = append(c.Redescribe, out[i])
			c.Notes = append(c.Notes, fmt.Sprintf("ingress rule %s of security group %s taken over from the upstream CCM", out[i].Text(), g.ID))
		}
	}
	if len(c.Redescribe) == 0 {
		return g.Rules, c
	}
	return out, c
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}
