package sgrules

// Group is a security group as read: its ID and ingress rules. Upstream: a group the upstream
// CCM made for the Service, without ccm's tags yet (it is taken over in place).
type Group struct {
	ID       string
	Rules    []Rule
	Upstream bool
}

// Own is the writes to a group that is wholly one Service's (every rule in it is the
// Service's): made (ID "" until then), taken over (ccm's tags added), its rules added and
// revoked.
type Own struct {
	ID       string
	Create   bool
	TakeOver bool
	Add, Del []Rule
}

// Writes says whether there is anything to write.
func (o *Own) Writes() bool {
	return o != nil && (o.Create || o.TakeOver || len(o.Add)+len(o.Del) > 0)
}

// PlanOwn is the writes that give the Service's own group seen (nil: none, it is made) the
// rules want.
func PlanOwn(seen *Group, want []Rule) *Own {
	if seen == nil {
		return &Own{Create: true, Add: append([]Rule(nil), want...)}
	}
	add, del := Plan(seen.Rules, want, func(Rule) bool { return true })
	return &Own{ID: seen.ID, TakeOver: seen.Upstream, Add: add, Del: del}
}

// Change is one group's writes for a Service's rules there: rules given the Service's
// description in place (Notes say so), then rules added, then revoked.
type Change struct {
	Group      string
	Redescribe []Rule
	Add, Del   []Rule
	Notes      []string
}

// PlanGroups is the changes that give each group in want (by ID) its wanted rules, and take
// the Service's rules (mine) out of the other groups read.
func PlanGroups(groups []Group, want map[string][]Rule, mine func(Rule) bool) []Change {
	var out []Change
	for _, g := range groups {
		add, del := Plan(g.Rules, want[g.ID], mine)
		if len(add)+len(del) > 0 {
			out = append(out, Change{Group: g.ID, Add: add, Del: del})
		}
	}
	return out
}
