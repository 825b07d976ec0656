// Package nlbplan is the difference between the NLB a Service asks for and the one the cloud
// holds, as steps: its target groups (made, health check, attributes, deleted), listeners
// (made, changed, deleted), targets (registered, deregistered), the NLB's attributes and its
// tags. It is pure: the caller reads the cloud into Observed, and writes the Plan in the order
// its fields are declared. Each step carries the words the drift Event says about it. Which
// security groups the NLB has is decided apart, before the plan (PlanSecurityGroups).
package nlbplan

import (
	"fmt"
	"maps"
	"slices"
)

// Health is a target group's health check.
type Health struct {
	Protocol, Port, Path                  string
	Healthy, Unhealthy, Timeout, Interval int32
}

// Same says whether h checks as want does (the path only matters beyond TCP).
func (h Health) Same(want Health) bool {
	return h.Protocol == want.Protocol && h.Port == want.Port && (want.Protocol == "TCP" || h.Path == want.Path) &&
		h.Healthy == want.Healthy && h.Unhealthy == want.Unhealthy && h.Timeout == want.Timeout && h.Interval == want.Interval
}

func (h Health) String() string {
	return fmt.Sprintf("%s:%s:%s %d/%d/%ds/%ds", h.Protocol, h.Port, h.Path, h.Healthy, h.Unhealthy, h.Timeout, h.Interval)
}

// Port is one Service port: its listener and the target group it forwards to.
type Port struct {
	Protocol  string // the listener's
	Port      int32
	Cert      string
	SSLPolicy string // "": ELB's default, left as it is
	Group     string // the target group's name
	Backend   string // the target group's protocol
	NodePort  int32
}

// Desired is what the Service asks of its NLB.
type Desired struct {
	Ports  []Port
	Health Health
	// GroupAttributes are compared on every target group, only for the keys named.
	GroupAttributes map[string]string
	// Attributes are the NLB's (key, value) in the order they are written; compared only when
	// Observed.Attributes was read.
	Attributes [][2]string
	Members    []string
	Tags       map[string]string
}

// Group is a target group as read.
type Group struct {
	ARN, Name  string
	Health     Health
	Attributes map[string]string // nil: not read (no attribute asked)
	Targets    []string
	Healthy    bool // a target passes its health check
	// Untagged: the upstream CCM's, proven the Service's by its tags, without ccm's yet: they
	// are added before anything else is written.
	Untagged bool
}

// Listener is a listener as read. Forward is the target group it forwards to when it has one
// action, else "".
type Listener struct {
	ARN, Protocol   string
	Port            int32
	Forward         string
	Cert, SSLPolicy string
}

// Observed is what the cloud holds for one NLB.
type Observed struct {
	Attached []Group // the target groups its listeners forward to
	// Found are wanted target groups no listener forwards to yet, by the wanted name: made by
	// an earlier, interrupted reconcile, or (attached) the upstream CCM's taken over for a port.
	Found     map[string]Group
	Listeners []Listener
	// Attributes are the NLB's; nil when not read (a new NLB holds AWS's defaults).
	Attributes map[string]string
	Tags       map[string]string // nil: a new NLB
}

// Ref names a target group: ARN "" is one this plan makes (known by its name).
type Ref struct{ ARN, Name string }

// CreateGroup makes a target group for Port, then registers the members in it and writes the
// asked attributes it turns out to have (its keys are known only once it exists).
type CreateGroup struct {
	Port     Port
	Health   Health
	Register []string
}

// SetAttributes writes target group attributes (key, value).
type SetAttributes struct {
	Group  Ref
	Values [][2]string
}

// ModifyListener changes a listener in place, so its port keeps serving. PolicyOnly: only its
// SSL policy differs. AwaitHealthy: the target group it switches to is made by this plan,
// so it switches only once a target there passes its health check (read at apply); until
// then it keeps forwarding to From and the plan is pending.
type ModifyListener struct {
	Listener     Listener
	Port         Port
	To, From     Ref
	PolicyOnly   bool
	AwaitHealthy bool
	Repair       string
}

// DeleteGroup deletes a target group no listener forwards to any more (when the cluster owns
// it). KeptBy are listener ports whose AwaitHealthy switch away from it, if it waits, keeps it.
type DeleteGroup struct {
	Group  Ref
	KeptBy []int32
}

// Targets are instance IDs to register in or deregister from a target group.
type Targets struct {
	Group Ref
	IDs   []string
}

// Plan is the difference, in the order it is written. Its zero value is nothing to do.
type Plan struct {
	TagGroups       []Ref // upstream's target groups taken over: ccm's ownership tags added
	CreateGroups    []CreateGroup
	ModifyHealth    []Ref
	GroupAttributes []SetAttributes
	DeleteListeners []Listener
	ModifyListeners []ModifyListener
	CreateListeners []Port
	DeleteGroups    []DeleteGroup
	Attributes      [][2]string // the NLB's
	Register        []Targets
	Deregister      []Targets
	Tags            map[string]string // nil: held
	// Pending: a listener waits for a healthy target in its new target group (the tags then
	// stay as they are, so the next reconcile goes on with it).
	Pending bool
	// Unknown are asked target group attributes a group does not have (not written).
	Unknown []string
	// Repairs say what each step repairs, for the drift Event (conditional steps say it at
	// apply, when they are written).
	Repairs []string
}

func (p *Plan) note(format string, args ...any) {
	p.Repairs = append(p.Repairs, fmt.Sprintf(format, args...))
}

// ChangesGroups says whether the plan changes which target groups the NLB's listeners forward
// to or how one is described (what a listing of target groups by NLB holds).
func (p *Plan) ChangesGroups() bool {
	return len(p.CreateGroups)+len(p.ModifyHealth)+len(p.DeleteListeners)+len(p.ModifyListeners)+len(p.CreateListeners)+len(p.DeleteGroups) > 0
}

// Writes says whether the plan writes anything (nil: a plan not made yet, which will).
func (p *Plan) Writes() bool {
	return p == nil || p.ChangesGroups() || len(p.TagGroups)+len(p.GroupAttributes)+len(p.Attributes)+len(p.Register)+len(p.Deregister) > 0 || p.Tags != nil
}

// Compute is the plan that makes have what want says.
func Compute(want Desired, have Observed) Plan {
	var p Plan
	groups, made := p.planGroups(want, have)
	inUse, waiting := p.planListeners(want, have, groups, made)
	p.planStale(have, groups, inUse, waiting)
	p.planAttributes(want, have)
	p.planTargets(want, have, groups, made, inUse, waiting)
	if have.Tags == nil || !holds(have.Tags, want.Tags) {
		p.Tags = want.Tags
	}
	return p
}

// planGroups finds or makes each port's target group, repairing its health check and
// attributes. It returns them by port, and which ones this plan makes.
func (p *Plan) planGroups(want Desired, have Observed) ([]Ref, map[string]bool) {
	refs := make([]Ref, len(want.Ports))
	made := map[string]bool{}
	for i, port := range want.Ports {
		g, ok := groupNamed(have.Attached, port.Group)
		if !ok {
			g, ok = have.Found[port.Group]
			if ok && g.Untagged && !slices.ContainsFunc(p.TagGroups, func(r Ref) bool { return r.ARN == g.ARN }) {
				p.TagGroups = append(p.TagGroups, Ref{ARN: g.ARN, Name: g.Name})
			}
		}
		if !ok {
			if !made[port.Group] {
				p.CreateGroups = append(p.CreateGroups, CreateGroup{Port: port, Health: want.Health, Register: want.Members})
				p.note("target group %s was missing", port.Group)
			}
			refs[i], made[port.Group] = Ref{Name: port.Group}, true
			continue
		}
		refs[i] = Ref{ARN: g.ARN, Name: g.Name}
		if !g.Health.Same(want.Health) {
			p.ModifyHealth = append(p.ModifyHealth, refs[i])
			p.note("health check of target group %s was %s", port.Group, g.Health)
		}
		if len(want.GroupAttributes) > 0 && g.Attributes != nil {
			change, unknown := GroupAttributes(g.Attributes, want.GroupAttributes)
			if len(change) > 0 {
				p.GroupAttributes = append(p.GroupAttributes, SetAttributes{Group: refs[i], Values: change})
			}
			for _, kv := range change {
				p.note("target group %s attribute %s was %q", g.Name, kv[0], g.Attributes[kv[0]])
			}
			p.Unknown = appendNew(p.Unknown, unknown...)
		}
	}
	return refs, made
}

// GroupAttributes are the asked attributes a target group holding have must be given, and the
// asked keys it does not have (not sent, as upstream).
func GroupAttributes(have, want map[string]string) (change [][2]string, unknown []string) {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, known := have[k]
		switch {
		case !known:
			unknown = append(unknown, k)
		case v != want[k]:
			change = append(change, [2]string{k, want[k]})
		}
	}
	return change, unknown
}

// planListeners makes one listener per port forward to its group. A listener that differs is
// changed in place; one switching to another group with members to serve waits until a
// target there is healthy. It returns the groups some listener forwards to after the plan,
// and the groups kept only while an AwaitHealthy switch waits (by the port waiting).
func (p *Plan) planListeners(want Desired, have Observed, groups []Ref, made map[string]bool) (map[string]bool, map[string][]int32) {
	inUse, waiting := map[string]bool{}, map[string][]int32{}
	seen := map[int32]bool{}
	for _, ls := range have.Listeners {
		i := slices.IndexFunc(want.Ports, func(q Port) bool { return q.Port == ls.Port })
		if i < 0 {
			p.DeleteListeners = append(p.DeleteListeners, ls)
			p.note("listener %s/%d was not wanted", ls.Protocol, ls.Port)
			continue
		}
		port, to := want.Ports[i], groups[i]
		seen[port.Port] = true
		if ls.Protocol == port.Protocol && to.ARN != "" && ls.Forward == to.ARN && ls.Cert == port.Cert {
			inUse[to.Name] = true
			if port.SSLPolicy != "" && ls.SSLPolicy != port.SSLPolicy {
				p.ModifyListeners = append(p.ModifyListeners, ModifyListener{Listener: ls, Port: port, To: to, PolicyOnly: true})
				p.note("listener TLS/%d had SSL policy %s", port.Port, ls.SSLPolicy)
			}
			continue
		}
		m := ModifyListener{Listener: ls, Port: port, To: to, Repair: fmt.Sprintf("listener %s/%d differed", ls.Protocol, ls.Port)}
		from, switching := fromGroup(have, ls.Forward), ls.Forward != to.ARN && len(want.Members) > 0
		if switching && !made[to.Name] && !observedHealthy(have, want.Ports[i].Group) {
			inUse[from.Name], p.Pending = true, true // not yet: its new group has no healthy target
			continue
		}
		inUse[to.Name] = true
		if switching && made[to.Name] {
			m.AwaitHealthy, m.From = true, from
			waiting[from.Name] = append(waiting[from.Name], port.Port)
		} else {
			p.Repairs = append(p.Repairs, m.Repair)
		}
		p.ModifyListeners = append(p.ModifyListeners, m)
	}
	for i, port := range want.Ports {
		if !seen[port.Port] {
			p.CreateListeners = append(p.CreateListeners, port)
			inUse[groups[i].Name] = true
			p.note("listener %s/%d was missing", port.Protocol, port.Port)
		}
	}
	return inUse, waiting
}

// planStale deletes the attached groups no listener forwards to after the plan (a port,
// nodePort or protocol changed), unless only a waiting switch would keep them.
func (p *Plan) planStale(have Observed, groups []Ref, inUse map[string]bool, waiting map[string][]int32) {
	for _, g := range have.Attached {
		if slices.ContainsFunc(groups, func(r Ref) bool { return r.ARN == g.ARN }) || inUse[g.Name] {
			continue
		}
		p.DeleteGroups = append(p.DeleteGroups, DeleteGroup{Group: Ref{ARN: g.ARN, Name: g.Name}, KeptBy: waiting[g.Name]})
	}
}

// planAttributes writes the NLB's attributes that differ (only when they were read).
func (p *Plan) planAttributes(want Desired, have Observed) {
	if have.Attributes == nil {
		return
	}
	for _, kv := range want.Attributes {
		if have.Attributes[kv[0]] != kv[1] {
			p.Attributes = append(p.Attributes, kv)
			p.note("attribute %s was %q", kv[0], have.Attributes[kv[0]])
		}
	}
}

// planTargets makes every group in use (and each one kept while a switch waits) hold exactly
// the members; a group this plan makes is given them at its creation.
func (p *Plan) planTargets(want Desired, have Observed, groups []Ref, made, inUse map[string]bool, waiting map[string][]int32) {
	var serving []Group
	for i, port := range want.Ports {
		if made[groups[i].Name] {
			continue
		}
		if g, ok := groupNamed(have.Attached, port.Group); ok {
			serving = appendGroup(serving, g)
		} else {
			serving = appendGroup(serving, have.Found[port.Group])
		}
	}
	for _, g := range have.Attached {
		if inUse[g.Name] || len(waiting[g.Name]) > 0 {
			serving = appendGroup(serving, g)
		}
	}
	for _, g := range serving {
		add, del := diff(g.Targets, want.Members)
		ref := Ref{ARN: g.ARN, Name: g.Name}
		if len(add) > 0 {
			p.Register = append(p.Register, Targets{Group: ref, IDs: add})
		}
		if len(del) > 0 {
			p.Deregister = append(p.Deregister, Targets{Group: ref, IDs: del})
		}
		for _, id := range add {
			p.note("target %s was not registered in target group %s", id, g.Name)
		}
		for _, id := range del {
			p.note("target %s was registered in target group %s but is no member", id, g.Name)
		}
	}
}

func groupNamed(gs []Group, name string) (Group, bool) {
	i := slices.IndexFunc(gs, func(g Group) bool { return g.Name == name })
	if i < 0 {
		return Group{}, false
	}
	return gs[i], true
}

func fromGroup(have Observed, arn string) Ref {
	for _, g := range have.Attached {
		if g.ARN == arn {
			return Ref{ARN: g.ARN, Name: g.Name}
		}
	}
	return Ref{ARN: arn}
}

func observedHealthy(have Observed, name string) bool {
	if g, ok := groupNamed(have.Attached, name); ok {
		return g.Healthy
	}
	return have.Found[name].Healthy
}

func appendGroup(gs []Group, g Group) []Group {
	if g.ARN == "" || slices.ContainsFunc(gs, func(h Group) bool { return h.ARN == g.ARN }) {
		return gs
	}
	return append(gs, g)
}

func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// diff is what to add to have and remove from it to make it want.
func diff(have, want []string) (add, del []string) {
	for _, id := range want {
		if !slices.Contains(have, id) {
			add = append(add, id)
		}
	}
	for _, id := range have {
		if !slices.Contains(want, id) {
			del = append(del, id)
		}
	}
	return add, del
}

func holds(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
