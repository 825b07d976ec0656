package routes

import (
	"fmt"
	"slices"
)

// Action is one write a route change takes.
type Action string

// The writes, in the order a plan lists them. The record is written before the route and
// removed after it: a process stopped between the two leaves a route that is still provably
// this cluster's, or a record the next delete finishes.
const (
	AddRecord    Action = "add record"
	AddRoute     Action = "add route"
	RemoveRoute  Action = "remove route"
	RemoveRecord Action = "remove record"
)

// Step is one write of a plan.
type Step struct {
	Action Action
	Route  Route
}

func (s Step) String() string { return string(s.Action) + " " + s.Route.String() }

// PlanCreate plans what makes want held and recorded as this cluster's. A destination outside
// the cluster CIDRs is refused: the route controller never asks for one, so a request for it
// is a bug or an attack. Another owner's route to the same destination stays: clusters with
// overlapping Pod CIDRs share a router.
func (s Scope) PlanCreate(held []Route, recorded func(Route) bool, want Route) ([]Step, error) {
	if !s.InCluster(want.Destination) {
		return nil, fmt.Errorf("route %s: the destination is outside the cluster CIDRs %v, so it is not this cluster's to route", want, s.ClusterCIDRs)
	}
	var steps []Step
	if !recorded(want) {
		steps = append(steps, Step{AddRecord, want})
	}
	if !slices.Contains(held, want) {
		steps = append(steps, Step{AddRoute, want})
	}
	return steps, nil
}

// PlanDelete plans the removal of r and its record. A route that is not this cluster's is
// refused, whatever asked for it; one that is gone already needs nothing.
func (s Scope) PlanDelete(held []Route, recorded func(Route) bool, r Route) ([]Step, error) {
	isHeld, rec := slices.Contains(held, r), recorded(r)
	if !isHeld && !rec {
		return nil, nil
	}
	if !s.Owned(r, rec) {
		return nil, fmt.Errorf("route %s is not this cluster's (outside the cluster CIDRs %v, or neither recorded by ccm nor through one of this cluster's Nodes): left as it is", r, s.ClusterCIDRs)
	}
	var steps []Step
	if isHeld {
		steps = append(steps, Step{RemoveRoute, r})
	}
	if rec {
		steps = append(steps, Step{RemoveRecord, r})
	}
	return steps, nil
}
