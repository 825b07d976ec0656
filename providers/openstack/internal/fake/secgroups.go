package fake

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
)

// Neutron security groups and rules, as in the Networking API v2.0 reference: a new group
// gets the two default egress rules (IPv4 and IPv6, any protocol); a group still used by a
// port cannot be deleted (409); a duplicate rule is refused (409).

type secGroup struct {
	ID, Name, Description string
}

type sgRule struct {
	ID, GroupID, Direction, EtherType, Protocol, RemoteIPPrefix, Description string
	PortMin, PortMax                                                         *int
}

// SecurityGroup is a security group as tests see it, with its rules.
type SecurityGroup struct {
	ID, Name, Description string
	Rules                 []SecurityGroupRule
}

// SecurityGroupRule is one rule as tests see it; ports are 0 when unset.
type SecurityGroupRule struct {
	Direction, EtherType, Protocol, RemoteIPPrefix string
	PortMin, PortMax                               int
}

func (r SecurityGroupRule) String() string {
	return fmt.Sprintf("%s %s %s %d-%d %s", r.Direction, r.EtherType, r.Protocol, r.PortMin, r.PortMax, r.RemoteIPPrefix)
}

// SecurityGroups lists the groups with their rules (rules sorted by String).
func (c *Cloud) SecurityGroups() []SecurityGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []SecurityGroup
	for _, g := range c.sgs {
		sg := SecurityGroup{ID: g.ID, Name: g.Name, Description: g.Description}
		for _, r := range c.sgRules {
			if r.GroupID == g.ID {
				sr := SecurityGroupRule{Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol, RemoteIPPrefix: r.RemoteIPPrefix}
				if r.PortMin != nil {
					sr.PortMin = *r.PortMin
				}
				if r.PortMax != nil {
					sr.PortMax = *r.PortMax
				}
				sg.Rules = append(sg.Rules, sr)
			}
		}
		sort.Slice(sg.Rules, func(i, j int) bool { return sg.Rules[i].String() < sg.Rules[j].String() })
		out = append(out, sg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddSecurityGroup creates a group as a user would outside Kubernetes and returns its ID.
func (c *Cloud) AddSecurityGroup(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newGroup(name, "").ID
}

// AddSecurityGroupRule adds an ingress TCP rule to a group as a user would (no description).
func (c *Cloud) AddSecurityGroupRule(groupID, etherType, prefix string, port int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &sgRule{ID: c.nextID("sgr"), GroupID: groupID, Direction: "ingress", EtherType: etherType, Protocol: "tcp",
		RemoteIPPrefix: prefix, PortMin: &port, PortMax: &port}
	c.sgRules[r.ID] = r
}

// ServerPortID is the ID of the (first) port of server id, or "".
func (c *Cloud) ServerPortID(serverID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, p := range c.ports {
		if p.DeviceID == serverID {
			ids = append(ids, p.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// PortSecurityGroups is the security group list of a port.
func (c *Cloud) PortSecurityGroups(portID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.ports[portID]; p != nil {
		return slices.Clone(p.SecurityGroups)
	}
	return nil
}

// SetPortSecurity sets a port's port_security_enabled, as an operator would (a port of a
// router VM or a VRRP pair). As Neutron, port security is turned off only on a port without
// security groups: false when the port has some (or does not exist).
func (c *Cloud) SetPortSecurity(portID string, enabled bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.ports[portID]
	if p == nil || (!enabled && len(p.SecurityGroups) > 0) {
		return false
	}
	p.NoPortSecurity = !enabled
	p.Revision++
	return true
}

// SetPortSecurityGroups sets a port's groups, as a user would.
func (c *Cloud) SetPortSecurityGroups(portID string, groups ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.ports[portID]; p != nil {
		c.setPortGroups(p, groups)
	}
}

func (c *Cloud) newGroup(name, desc string) *secGroup {
	g := &secGroup{ID: c.nextID("sg"), Name: name, Description: desc}
	c.sgs[g.ID] = g
	for _, et := range []string{"IPv4", "IPv6"} {
		r := &sgRule{ID: c.nextID("sgr"), GroupID: g.ID, Direction: "egress", EtherType: et}
		c.sgRules[r.ID] = r
	}
	return g
}

func (c *Cloud) securityGroupRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /network/v2.0/security-groups", c.op("neutron.ListSecurityGroups", c.listSGs))
	m.HandleFunc("POST /network/v2.0/security-groups", c.op("neutron.CreateSecurityGroup", c.createSG))
	m.HandleFunc("GET /network/v2.0/security-groups/{id}", c.op("neutron.GetSecurityGroup", c.getSG))
	m.HandleFunc("DELETE /network/v2.0/security-groups/{id}", c.op("neutron.DeleteSecurityGroup", c.deleteSG))
	m.HandleFunc("GET /network/v2.0/security-group-rules", c.op("neutron.ListSecurityGroupRules", c.listRules))
	m.HandleFunc("POST /network/v2.0/security-group-rules", c.op("neutron.CreateSecurityGroupRule", c.createRule))
	m.HandleFunc("GET /network/v2.0/security-group-rules/{id}", c.op("neutron.GetSecurityGroupRule", c.getRule))
	m.HandleFunc("DELETE /network/v2.0/security-group-rules/{id}", c.op("neutron.DeleteSecurityGroupRule", c.deleteRule))
}

func ruleJSON(r *sgRule) map[string]any {
	var min, max, proto, prefix any
	if r.PortMin != nil {
		min = *r.PortMin
	}
	if r.PortMax != nil {
		max = *r.PortMax
	}
	if r.Protocol != "" {
		proto = r.Protocol
	}
	if r.RemoteIPPrefix != "" {
		prefix = r.RemoteIPPrefix
	}
	return map[string]any{"id": r.ID, "security_group_id": r.GroupID, "direction": r.Direction, "ethertype": r.EtherType,
		"protocol": proto, "port_range_min": min, "port_range_max": max, "remote_ip_prefix": prefix, "remote_group_id": nil,
		"description": r.Description, "project_id": "demo", "tenant_id": "demo"}
}

func (c *Cloud) sgJSON(g *secGroup) map[string]any {
	rules := []any{}
	var ids []string
	for id, r := range c.sgRules {
		if r.GroupID == g.ID {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		rules = append(rules, ruleJSON(c.sgRules[id]))
	}
	return map[string]any{"id": g.ID, "name": g.Name, "description": g.Description, "stateful": true,
		"project_id": "demo", "tenant_id": "demo", "security_group_rules": rules, "tags": []string{}}
}

func (c *Cloud) listSGs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ids []string
	for id, g := range c.sgs {
		if v := q.Get("name"); v != "" && v != g.Name {
			continue
		}
		if v := q.Get("id"); v != "" && v != g.ID {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := []any{}
	for _, id := range ids {
		out = append(out, c.sgJSON(c.sgs[id]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"security_groups": out})
}

func (c *Cloud) createSG(w http.ResponseWriter, r *http.Request) {
	var b struct {
		SG struct {
			Name        *string `json:"name"`
			Description string  `json:"description"`
		} `json:"security_group"`
	}
	if err := decode(r, &b); err != nil || b.SG.Name == nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"security_group": c.sgJSON(c.newGroup(*b.SG.Name, b.SG.Description))})
}

func (c *Cloud) getSG(w http.ResponseWriter, r *http.Request) {
	g := c.sgs[r.PathValue("id")]
	if g == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group %s does not exist", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"security_group": c.sgJSON(g)})
}

func (c *Cloud) deleteSG(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if c.sgs[id] == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group %s does not exist", id))
		return
	}
	for _, p := range c.ports {
		if slices.Contains(p.SecurityGroups, id) {
			writeErr(w, http.StatusConflict, fmt.Sprintf("Security Group %s in use.", id))
			return
		}
	}
	delete(c.sgs, id)
	for rid, rule := range c.sgRules {
		if rule.GroupID == id {
			delete(c.sgRules, rid)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cloud) listRules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ids []string
	for id, rule := range c.sgRules {
		if v := q.Get("security_group_id"); v != "" && v != rule.GroupID {
			continue
		}
		if v := q.Get("direction"); v != "" && v != rule.Direction {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := []any{}
	for _, id := range ids {
		out = append(out, ruleJSON(c.sgRules[id]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"security_group_rules": out})
}

func same(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func (c *Cloud) createRule(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Rule struct {
			GroupID        string `json:"security_group_id"`
			Direction      string `json:"direction"`
			EtherType      string `json:"ethertype"`
			Protocol       string `json:"protocol"`
			RemoteIPPrefix string `json:"remote_ip_prefix"`
			Description    string `json:"description"`
			PortMin        *int   `json:"port_range_min"`
			PortMax        *int   `json:"port_range_max"`
		} `json:"security_group_rule"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	in := b.Rule
	if c.sgs[in.GroupID] == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group %s does not exist", in.GroupID))
		return
	}
	if (in.Direction != "ingress" && in.Direction != "egress") || (in.EtherType != "IPv4" && in.EtherType != "IPv6") {
		writeErr(w, http.StatusBadRequest, "invalid direction or ethertype")
		return
	}
	if in.RemoteIPPrefix != "" {
		pfx, err := netip.ParsePrefix(in.RemoteIPPrefix)
		if err != nil || pfx.Addr().Is4() != (in.EtherType == "IPv4") {
			writeErr(w, http.StatusBadRequest, fmt.Sprintf("Conflicting value ethertype %s for CIDR %s", in.EtherType, in.RemoteIPPrefix))
			return
		}
	}
	for _, o := range c.sgRules {
		if o.GroupID == in.GroupID && o.Direction == in.Direction && o.EtherType == in.EtherType && o.Protocol == in.Protocol &&
			o.RemoteIPPrefix == in.RemoteIPPrefix && same(o.PortMin, in.PortMin) && same(o.PortMax, in.PortMax) {
			writeErr(w, http.StatusConflict, fmt.Sprintf("Security group rule already exists. Rule id is %s.", o.ID))
			return
		}
	}
	rule := &sgRule{ID: c.nextID("sgr"), GroupID: in.GroupID, Direction: in.Direction, EtherType: in.EtherType, Protocol: in.Protocol,
		RemoteIPPrefix: in.RemoteIPPrefix, Description: in.Description, PortMin: in.PortMin, PortMax: in.PortMax}
	c.sgRules[rule.ID] = rule
	writeJSON(w, http.StatusCreated, map[string]any{"security_group_rule": ruleJSON(rule)})
}

func (c *Cloud) getRule(w http.ResponseWriter, r *http.Request) {
	rule := c.sgRules[r.PathValue("id")]
	if rule == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group rule %s does not exist", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"security_group_rule": ruleJSON(rule)})
}

func (c *Cloud) deleteRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if c.sgRules[id] == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group rule %s does not exist", id))
		return
	}
	delete(c.sgRules, id)
	w.WriteHeader(http.StatusNoContent)
}
