package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/ccm-project/ccm/common/fingerprint"
)

// A kept listener (its description's fingerprint matches the spec) is still compared with what
// Octavia holds on every sync: its allowed CIDRs, its pool's algorithm, its health monitor and
// its members. The fingerprint only says the spec did not change, so every other difference was
// made out of band: planPool names it as a repair and the apply writes only that difference.

// membersTagPrefix starts the tag each member carries: the fingerprint of the member set it was
// written with. A member set that differs while a member still carries the fingerprint of the
// wanted set was changed out of band (a member removed or added by hand); one that carries an
// older fingerprint is a Node change. The tag costs no write: it travels with the members.
const membersTagPrefix = "ccm-members:"

func membersTag(ms []memberKey) string {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, compareMembers)
	return membersTagPrefix + fingerprint.Of(ms)
}

func compareMembers(a, b memberKey) int {
	return strings.Compare(fmt.Sprintf("%s/%05d/%05d/%s", a.Address, a.Port, a.MonitorPort, a.Subnet),
		fmt.Sprintf("%s/%05d/%05d/%s", b.Address, b.Port, b.MonitorPort, b.Subnet))
}

// observedMonitor is a health monitor as Octavia holds it.
type observedMonitor struct {
	ID, Type, URLPath          string
	Delay, Timeout, MaxRetries int
	MaxRetriesDown             int
	// HTTPMethod, ExpectedCodes: HTTP and HTTPS monitors only (objectsettings.go).
	HTTPMethod, ExpectedCodes string
	Up                        bool // admin_state_up
}

// poolState is a listener with its pool, monitor and members: wanted (from the spec) or
// observed (read from Octavia).
type poolState struct {
	// Protocol is the listener's (wanted only): on an HTTP listener X-Forwarded-For is part of
	// what the fingerprint promised, so its absence is drift.
	Protocol  string
	InsertXFF bool   // insert_headers X-Forwarded-For=true
	TLSRef    string // default_tls_container_ref
	Method    string
	// Persistence: the pool's session_persistence type ("" none; observed with its cookie).
	Persistence string
	CIDRs       []string
	Monitor     *observedMonitor // nil: none
	Members     []memberKey
	Tags        []string // member tags seen (observed only)
	// Pending are the members and monitor Octavia holds PENDING_* (observed only; stuck.go).
	Pending []stuckChild
	// Limits: the listener's connection_limit and timeouts (Timeouts false: not compared).
	Limits listenerLimits
	// MonitorByAnnotation (wanted only): health-monitor-* annotations set the timings.
	MonitorByAnnotation bool
	// MemberSubnetAlts (wanted only): subnets an observed member may be on instead of the
	// wanted member subnet (lbSpec.memberSubnetAlts): it is then the same member.
	MemberSubnetAlts []string
	// ListenerUp, PoolUp: the admin_state_up of the listener and of its pool.
	ListenerUp, PoolUp bool
	// MemberSettings (wanted only): every member's weight, backup and admin_state_up.
	MemberSettings memberSettings
	// MemberStates (observed only): each member with those settings.
	MemberStates []memberState
}

type monitorAction int

const (
	monitorKeep monitorAction = iota
	monitorCreate
	monitorUpdate
	monitorReplace // the type cannot be updated in place
	monitorDelete
)

// poolPlan is the difference between a kept listener's wanted and observed state.
type poolPlan struct {
	SetCIDRs, SetMethod, SetMembers bool
	// SetPersistence: the pool's session_persistence is written (with SetMethod, in one
	// update). A repair only when the pool held a persistence ccm never writes.
	SetPersistence bool
	// SetHeaders, SetTLS: the listener's insert_headers, its default_tls_container_ref are
	// written (with SetCIDRs, in one update). Neither is a repair unless said so: both follow
	// annotations or config that the fingerprint does not cover.
	SetHeaders, SetTLS bool
	// SetLimits: the listener's connection_limit and timeouts are written (same update).
	SetLimits bool
	// ListenerUp, PoolUp: the admin_state_up written into the listener's, the pool's update
	// (nil: not written).
	ListenerUp, PoolUp *bool
	Monitor            monitorAction
	// MonitorChange: with monitorUpdate, the fields written (those that differ).
	MonitorChange monitorChange
	// MemberFixes: the members whose weight, backup or admin_state_up differ. Each is one
	// member update, or rides in the member update when SetMembers.
	MemberFixes []memberFix
	// Description, when set, is written into the listener (same update): a relabelled
	// listener's current mark and fingerprint.
	Description *string
	// Repairs name the out-of-band changes among the differences.
	Repairs []string
}

func (p poolPlan) writes() int {
	n := 0
	for _, b := range []bool{p.setsListener(), p.setsPool(), p.SetMembers} {
		if b {
			n++
		}
	}
	switch p.Monitor {
	case monitorCreate, monitorUpdate, monitorDelete:
		n++
	case monitorReplace:
		n += 2
	}
	if !p.SetMembers {
		n += len(p.MemberFixes)
	}
	return n
}

// setsListener: the plan writes the listener itself (one update).
func (p poolPlan) setsListener() bool {
	return p.SetCIDRs || p.SetHeaders || p.SetTLS || p.SetLimits || p.ListenerUp != nil || p.Description != nil
}

// setsPool: the plan writes the pool itself (one update).
func (p poolPlan) setsPool() bool {
	return p.SetMethod || p.SetPersistence || p.PoolUp != nil
}

// planPool compares the wanted and observed state of the kept listener key. Pure.
func planPool(key string, want, have poolState) poolPlan {
	var p poolPlan
	p.planListener(key, want, have)
	p.planPoolFields(key, want, have)
	p.planMonitor(key, want, have)
	p.planMembers(key, want, have)
	return p
}

// planListener compares the listener's own fields.
func (p *poolPlan) planListener(key string, want, have poolState) {
	if !sameSet(openToAll(want.CIDRs), openToAll(have.CIDRs)) {
		p.SetCIDRs = true
		p.Repairs = append(p.Repairs, fmt.Sprintf("listener %s allowed CIDRs were [%s]", key, strings.Join(have.CIDRs, ",")))
	}
	if want.InsertXFF != have.InsertXFF {
		p.SetHeaders = true
		if want.Protocol == "HTTP" {
			p.Repairs = append(p.Repairs, fmt.Sprintf("listener %s X-Forwarded-For header was off", key))
		}
	}
	p.SetTLS = want.TLSRef != have.TLSRef
	if !want.Limits.same(have.Limits) {
		p.SetLimits = true
		if !want.Limits.byAnnotation {
			p.Repairs = append(p.Repairs, fmt.Sprintf("listener %s connection limit and timeouts were %s", key, have.Limits))
		}
	}
	if want.ListenerUp != have.ListenerUp {
		p.ListenerUp = &want.ListenerUp
		p.Repairs = append(p.Repairs, upRepair("listener", key, have.ListenerUp))
	}
}

// planPoolFields compares the pool's own fields.
func (p *poolPlan) planPoolFields(key string, want, have poolState) {
	if want.Method != have.Method {
		p.SetMethod = true
		p.Repairs = append(p.Repairs, fmt.Sprintf("pool %s lb-method was %s", key, have.Method))
	}
	if want.Persistence != have.Persistence {
		p.SetPersistence = true
		if persistenceDrift(have.Persistence) {
			p.Repairs = append(p.Repairs, fmt.Sprintf("pool %s session persistence was %s", key, have.Persistence))
		}
	}
	if want.PoolUp != have.PoolUp {
		p.PoolUp = &want.PoolUp
		p.Repairs = append(p.Repairs, upRepair("pool", key, have.PoolUp))
	}
}

// planMonitor compares the pool's health monitor: created, deleted, replaced when its type
// differs (Octavia cannot change it), else updated in the fields that differ.
func (p *poolPlan) planMonitor(key string, want, have poolState) {
	w, h := want.Monitor, have.Monitor
	switch {
	case w == nil && h == nil:
	case h == nil:
		p.Monitor = monitorCreate
		p.Repairs = append(p.Repairs, fmt.Sprintf("health monitor of %s was deleted", key))
	case w == nil:
		p.Monitor = monitorDelete
		p.Repairs = append(p.Repairs, fmt.Sprintf("health monitor of %s was added", key))
	case w.Type != h.Type:
		p.Monitor = monitorReplace
		p.Repairs = append(p.Repairs, fmt.Sprintf("health monitor of %s was of type %s", key, h.Type))
	default:
		if c := diffMonitor(w, h); c.any() {
			p.Monitor, p.MonitorChange = monitorUpdate, c
			if r := c.repair(key, want.MonitorByAnnotation); r != "" {
				p.Repairs = append(p.Repairs, r)
			}
		}
	}
}

// planMembers compares the member set, then the settings of each member.
func (p *poolPlan) planMembers(key string, want, have poolState) {
	wm, hm := slices.Clone(want.Members), onWantedSubnet(have.Members, want.Members, want.MemberSubnetAlts)
	slices.SortFunc(wm, compareMembers)
	slices.SortFunc(hm, compareMembers)
	if !slices.Equal(wm, hm) {
		p.SetMembers = true
		if slices.Contains(have.Tags, membersTag(want.Members)) {
			p.Repairs = append(p.Repairs, fmt.Sprintf("members of %s were changed (%d, want %d)", key, len(hm), len(wm)))
		}
	}
	fixes, repairs := planMemberSettings(key, want.MemberSettings, want.Members, have.MemberStates)
	p.MemberFixes, p.Repairs = fixes, append(p.Repairs, repairs...)
}

// onWantedSubnet is have with each member that is on one of alts and otherwise a wanted
// member read as that wanted member (on the wanted subnet). Pure.
func onWantedSubnet(have, want []memberKey, alts []string) []memberKey {
	out := slices.Clone(have)
	for i, h := range out {
		if !slices.Contains(alts, h.Subnet) {
			continue
		}
		for _, w := range want {
			if w.Address == h.Address && w.Port == h.Port && w.MonitorPort == h.MonitorPort {
				out[i].Subnet = w.Subnet
				break
			}
		}
	}
	return out
}

// keptSubnets are the subnets of the observed members that are on one of alts (address ->
// subnet): a rewrite of the members leaves them there. Pure.
func keptSubnets(have []memberKey, alts []string) map[string]string {
	out := map[string]string{}
	for _, h := range have {
		if slices.Contains(alts, h.Subnet) {
			out[h.Address] = h.Subnet
		}
	}
	return out
}

// headerXFF is Octavia's insert_headers key for X-Forwarded-For.
const headerXFF = "X-Forwarded-For"

// withXFF is a listener's insert_headers with X-Forwarded-For set (on) or removed; the other
// headers (set by hand) are kept.
func withXFF(have map[string]string, on bool) map[string]string {
	out := map[string]string{}
	for k, v := range have {
		if k != headerXFF {
			out[k] = v
		}
	}
	if on {
		out[headerXFF] = "true"
	}
	return out
}

// openToAll reads the one range that lets every client of a family in (what the upstream CCM
// writes for a Service without source ranges) as no restriction, as Octavia does.
func openToAll(cidrs []string) []string {
	if len(cidrs) == 1 && (cidrs[0] == "0.0.0.0/0" || cidrs[0] == "::/0") {
		return nil
	}
	return cidrs
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// wantedMonitor is the spec's monitor in the observed shape (nil if none).
func wantedMonitor(m *monitorSpec) *observedMonitor {
	if m == nil {
		return nil
	}
	method, codes := monitorHTTP(m.Type)
	return &observedMonitor{Type: m.Type, URLPath: m.URLPath, Delay: m.Want.Delay, Timeout: m.Want.Timeout, MaxRetries: m.Want.MaxRetries, MaxRetriesDown: m.Want.MaxRetriesDown,
		HTTPMethod: method, ExpectedCodes: codes, Up: wantedUp}
}

// wantedMembers are the member keys of ls for ms.
func wantedMembers(spec *lbSpec, ls listenerSpec, ms []member) []memberKey {
	var out []memberKey
	for _, o := range ls.memberOpts(spec, ms, nil) {
		mp := 0
		if o.MonitorPort != nil {
			mp = *o.MonitorPort
		}
		out = append(out, memberKey{o.Address, o.SubnetID, o.ProtocolPort, mp})
	}
	return out
}

// observePool reads a kept listener's pool members and monitor (the pool itself comes from the
// load balancer's pool list).
func (l *loadBalancers) observePool(ctx context.Context, cl *clients, h listeners.Listener, p *pools.Pool, seen *snapshot) (poolState, error) {
	st := poolState{CIDRs: h.AllowedCIDRs, InsertXFF: h.InsertHeaders[headerXFF] == "true", TLSRef: h.DefaultTlsContainerRef, ListenerUp: h.AdminStateUp,
		Limits: listenerLimits{ConnLimit: h.ConnLimit, Timeouts: true, ClientData: h.TimeoutClientData, MemberConnect: h.TimeoutMemberConnect,
			MemberData: h.TimeoutMemberData, TCPInspect: h.TimeoutTCPInspect}}
	if p == nil {
		return st, fmt.Errorf("pool %s of listener %s is not in the load balancer's pool list", h.DefaultPoolID, h.ID)
	}
	st.Method, st.Persistence, st.PoolUp = p.LBMethod, observedPersistence(p.Persistence), p.AdminStateUp
	pages, err := pools.ListMembers(cl.lb, p.ID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return st, fmt.Errorf("listing members of pool %s: %w", p.ID, err)
	}
	have, err := pools.ExtractMembers(pages)
	if err != nil {
		return st, err
	}
	for _, m := range have {
		st.Members = append(st.Members, memberKey{m.Address, m.SubnetID, m.ProtocolPort, m.MonitorPort})
		st.MemberStates = append(st.MemberStates, memberState{m.ID, m.Address, m.ProtocolPort, memberSettings{m.Weight, m.Backup, m.AdminStateUp}})
		if pendingStatus(m.ProvisioningStatus) {
			st.Pending = append(st.Pending, stuckChild{"member", m.Address, m.ID, m.ProvisioningStatus})
		}
		for _, t := range m.Tags {
			if strings.HasPrefix(t, membersTagPrefix) && !slices.Contains(st.Tags, t) {
				st.Tags = append(st.Tags, t)
			}
		}
	}
	if p.MonitorID != "" {
		m := seen.monitor(p.MonitorID)
		if m == nil {
			if m, err = monitors.Get(ctx, cl.lb, p.MonitorID).Extract(); err != nil {
				return st, fmt.Errorf("getting health monitor %s: %w", p.MonitorID, err)
			}
		}
		if pendingStatus(m.ProvisioningStatus) {
			st.Pending = append(st.Pending, stuckChild{"health monitor", m.Name, m.ID, m.ProvisioningStatus})
		}
		st.Monitor = &observedMonitor{ID: m.ID, Type: m.Type, URLPath: m.URLPath, Delay: m.Delay, Timeout: m.Timeout, MaxRetries: m.MaxRetries, MaxRetriesDown: m.MaxRetriesDown,
			HTTPMethod: m.HTTPMethod, ExpectedCodes: m.ExpectedCodes, Up: m.AdminStateUp}
	}
	return st, nil
}

// applyPool writes plan for the kept listener h of ls, waiting for the load balancer between
// writes (Octavia refuses a write while it is PENDING_UPDATE).
func (s *listenerSync) applyPool(ctx context.Context, ls listenerSpec, h listeners.Listener, have poolState, plan poolPlan) error {
	l, cl, lbID, spec, ms := s.run.l, s.run.cl, s.lbID, s.spec, s.ms
	key := ls.key()
	step := func(what string, err error) error {
		if err != nil {
			return l.conflict(err, what+" of "+key)
		}
		return l.waitActive(ctx, cl, lbID)
	}
	if plan.setsListener() {
		_, err := listeners.Update(ctx, cl.lb, h.ID, listenerUpdate(ls, h, plan)).Extract()
		if err := step("updating the listener", err); err != nil {
			return err
		}
	}
	if plan.setsPool() {
		_, err := pools.Update(ctx, cl.lb, h.DefaultPoolID, poolUpdate(ls, plan)).Extract()
		if err := step("updating the pool (lb-method, session persistence, admin_state_up)", err); err != nil {
			return err
		}
	}
	if plan.Monitor == monitorDelete || plan.Monitor == monitorReplace {
		if err := step("deleting the health monitor", monitors.Delete(ctx, cl.lb, have.Monitor.ID).ExtractErr()); err != nil {
			return err
		}
	}
	if m := ls.Monitor; m != nil && (plan.Monitor == monitorCreate || plan.Monitor == monitorReplace) {
		opts := monitorCreateOpts(m)
		opts.PoolID = h.DefaultPoolID
		_, err := monitors.Create(ctx, cl.lb, opts).Extract()
		if err := step("creating the health monitor", err); err != nil {
			return err
		}
	}
	if plan.Monitor == monitorUpdate {
		_, err := monitors.Update(ctx, cl.lb, have.Monitor.ID, monitorUpdateOpts(plan.MonitorChange)).Extract()
		if err := step("updating the health monitor", err); err != nil {
			return err
		}
	}
	if plan.SetMembers {
		batch := memberBatch(ls.memberOpts(spec, ms, keptSubnets(have.Members, spec.memberSubnetAlts)), plan.MemberFixes)
		return step("updating the members", pools.BatchUpdateMembers(ctx, cl.lb, h.DefaultPoolID, batch).ExtractErr())
	}
	for _, f := range plan.MemberFixes {
		_, err := pools.UpdateMember(ctx, cl.lb, h.DefaultPoolID, f.ID, pools.UpdateMemberOpts{Weight: f.Weight, Backup: f.Backup, AdminStateUp: f.Up}).Extract()
		if err := step(fmt.Sprintf("updating member %s:%d", f.Address, f.Port), err); err != nil {
			return err
		}
	}
	return nil
}

// listenerUpdate is the listener update of plan: only the fields it changes. Pure.
func listenerUpdate(ls listenerSpec, h listeners.Listener, plan poolPlan) listeners.UpdateOpts {
	opts := listeners.UpdateOpts{Description: plan.Description, AdminStateUp: plan.ListenerUp}
	if plan.SetLimits {
		opts.ConnLimit, opts.TimeoutClientData, opts.TimeoutMemberConnect, opts.TimeoutMemberData, opts.TimeoutTCPInspect = ls.Limits.opts()
	}
	if plan.SetCIDRs {
		cidrs := slices.Clone(ls.SourceRanges)
		if cidrs == nil {
			cidrs = []string{}
		}
		opts.AllowedCIDRs = &cidrs
	}
	if plan.SetHeaders {
		hs := withXFF(h.InsertHeaders, ls.InsertXFF)
		opts.InsertHeaders = &hs
	}
	if plan.SetTLS {
		ref := ls.TLSRef
		opts.DefaultTlsContainerRef = &ref
	}
	return opts
}

// poolUpdate is the pool update of plan: only the fields it changes. Pure.
func poolUpdate(ls listenerSpec, plan poolPlan) pools.UpdateOpts {
	opts := pools.UpdateOpts{AdminStateUp: plan.PoolUp}
	if plan.SetMethod {
		opts.LBMethod = pools.LBMethod(ls.Method)
	}
	if plan.SetPersistence {
		opts.Persistence = persistenceOpts(ls.Persistence)
	}
	return opts
}

// monitorCreateOpts is the monitor of m as ccm creates it (with a pool, or on one).
func monitorCreateOpts(m *monitorSpec) monitors.CreateOpts {
	method, codes := monitorHTTP(m.Type)
	return monitors.CreateOpts{Type: m.Type, Delay: m.Want.Delay, Timeout: m.Want.Timeout, MaxRetries: m.Want.MaxRetries,
		MaxRetriesDown: m.Want.MaxRetriesDown, URLPath: m.URLPath, HTTPMethod: method, ExpectedCodes: codes}
}

// monitorUpdateOpts is the monitor update of c: only the fields that differ. Pure.
func monitorUpdateOpts(c monitorChange) monitors.UpdateOpts {
	val := func(p *int) int {
		if p == nil {
			return 0 // omitted
		}
		return *p
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return monitors.UpdateOpts{Delay: val(c.Delay), Timeout: val(c.Timeout), MaxRetries: val(c.MaxRetries), MaxRetriesDown: val(c.MaxRetriesDown),
		URLPath: str(c.URLPath), HTTPMethod: str(c.HTTPMethod), ExpectedCodes: str(c.ExpectedCodes), AdminStateUp: c.Up}
}

// memberBatch is the member update of opts, carrying the settings of fixes on the members
// they fix (by address and port): the others keep theirs. Pure.
func memberBatch(opts []pools.CreateMemberOpts, fixes []memberFix) []pools.BatchUpdateMemberOpts {
	batch := make([]pools.BatchUpdateMemberOpts, 0, len(opts))
	for _, o := range opts {
		b := pools.BatchUpdateMemberOpts{Address: o.Address, ProtocolPort: o.ProtocolPort, MonitorPort: o.MonitorPort, Tags: o.Tags}
		name, subnet := o.Name, o.SubnetID
		b.Name = &name
		if subnet != "" {
			b.SubnetID = &subnet
		}
		for _, f := range fixes {
			if f.Address == o.Address && f.Port == o.ProtocolPort {
				b.Weight, b.Backup, b.AdminStateUp = f.Weight, f.Backup, f.Up
			}
		}
		batch = append(batch, b)
	}
	return batch
}
