package fake

import (
	"fmt"
	"sort"
	"strings"
)

// Out-of-band changes, as an operator would make them at the console: each changes the fake's
// state directly (no ccm call, no write counted) and reports whether it found what to change.

// lbNamed is the load balancer named name. Callers hold c.mu.
func (c *Cloud) lbNamed(name string) *loadBalancer {
	for _, lb := range c.lbs {
		if lb.Name == name {
			return lb
		}
	}
	return nil
}

// listenerOn is the listener of port on the load balancer named name. Callers hold c.mu.
func (c *Cloud) listenerOn(name string, port int) *listener {
	lb := c.lbNamed(name)
	if lb == nil {
		return nil
	}
	for _, l := range c.lis {
		if l.LBID == lb.ID && l.Port == port {
			return l
		}
	}
	return nil
}

// DeleteListener deletes the listener of port on the load balancer named name; its pool stays,
// as with `openstack loadbalancer listener delete`.
func (c *Cloud) DeleteListener(name string, port int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.listenerOn(name, port)
	if l == nil {
		return false
	}
	delete(c.lis, l.ID)
	if p := c.pools[l.PoolID]; p != nil {
		p.ListenerID = ""
	}
	return true
}

// poolOn is the default pool of the listener of port. Callers hold c.mu.
func (c *Cloud) poolOn(name string, port int) *pool {
	if l := c.listenerOn(name, port); l != nil {
		return c.pools[l.PoolID]
	}
	return nil
}

// DeleteMonitor deletes the health monitor of the pool of port's listener.
func (c *Cloud) DeleteMonitor(name string, port int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || p.MonitorID == "" {
		return false
	}
	delete(c.monitors, p.MonitorID)
	p.MonitorID = ""
	return true
}

// SetMonitorDelay changes the delay and timeout of the health monitor of port's pool.
func (c *Cloud) SetMonitorDelay(name string, port, delay, timeout int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || c.monitors[p.MonitorID] == nil {
		return false
	}
	m := c.monitors[p.MonitorID]
	m.Delay, m.Timeout = delay, timeout
	return true
}

// SetListenerUp sets the admin_state_up of port's listener.
func (c *Cloud) SetListenerUp(name string, port int, up bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.listenerOn(name, port)
	if l == nil {
		return false
	}
	l.Up = up
	return true
}

// SetPoolUp sets the admin_state_up of port's pool.
func (c *Cloud) SetPoolUp(name string, port int, up bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil {
		return false
	}
	p.Up = up
	return true
}

// SetMemberSettings sets the weight, backup and admin_state_up of the first member (by
// address) of port's pool.
func (c *Cloud) SetMemberSettings(name string, port, weight int, backup, up bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || len(p.Members) == 0 {
		return false
	}
	sort.Slice(p.Members, func(i, j int) bool { return p.Members[i].Address < p.Members[j].Address })
	m := p.Members[0]
	m.Weight, m.Backup, m.Up = weight, backup, up
	return true
}

// SetMonitorHTTP sets the http_method and expected_codes of the health monitor of port's pool
// (an HTTP or HTTPS one).
func (c *Cloud) SetMonitorHTTP(name string, port int, method, codes string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || c.monitors[p.MonitorID] == nil || !httpMonitor(c.monitors[p.MonitorID].Type) {
		return false
	}
	m := c.monitors[p.MonitorID]
	m.HTTPMethod, m.ExpectedCodes = method, codes
	return true
}

// SetMonitorUp sets the admin_state_up of the health monitor of port's pool.
func (c *Cloud) SetMonitorUp(name string, port int, up bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || c.monitors[p.MonitorID] == nil {
		return false
	}
	c.monitors[p.MonitorID].Up = up
	return true
}

// RemoveMember removes the first member (by address) of port's pool.
func (c *Cloud) RemoveMember(name string, port int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil || len(p.Members) == 0 {
		return false
	}
	sort.Slice(p.Members, func(i, j int) bool { return p.Members[i].Address < p.Members[j].Address })
	p.Members = p.Members[1:]
	return true
}

// SetPoolMethod changes the lb_algorithm of port's pool.
func (c *Cloud) SetPoolMethod(name string, port int, method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil {
		return false
	}
	p.Method = method
	return true
}

// SetAllowedCIDRs changes the allowed_cidrs of port's listener.
func (c *Cloud) SetAllowedCIDRs(name string, port int, cidrs ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.listenerOn(name, port)
	if l == nil {
		return false
	}
	l.AllowedCIDRs = cidrs
	return true
}

// DetachFloatingIP removes the association of the floating IP on the VIP port of the load
// balancer named name (the floating IP stays allocated).
func (c *Cloud) DetachFloatingIP(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lb := c.lbNamed(name)
	if lb == nil {
		return false
	}
	found := false
	for _, f := range c.fips {
		if f.PortID == lb.VipPortID {
			f.PortID, f.FixedIP, f.Status = "", "", "DOWN"
			found = true
		}
	}
	return found
}

// DeleteLoadBalancerNamed deletes the load balancer named name with everything on it at once
// (a cascade delete that has completed).
func (c *Cloud) DeleteLoadBalancerNamed(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	lb := c.lbNamed(name)
	if lb == nil {
		return false
	}
	c.removeLB(lb.ID)
	return true
}

// RevokeRule deletes the first ingress rule (in String order) of the security group named
// group.
func (c *Cloud) RevokeRule(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, g := range c.sgs {
		if g.Name != group {
			continue
		}
		for id, r := range c.sgRules {
			if r.GroupID == g.ID && r.Direction == "ingress" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return false
	}
	sort.Slice(ids, func(i, j int) bool { return c.ruleText(c.sgRules[ids[i]]) < c.ruleText(c.sgRules[ids[j]]) })
	delete(c.sgRules, ids[0])
	return true
}

func (c *Cloud) ruleText(r *sgRule) string {
	lo, hi := 0, 0
	if r.PortMin != nil {
		lo = *r.PortMin
	}
	if r.PortMax != nil {
		hi = *r.PortMax
	}
	return fmt.Sprintf("%s %s %s %d-%d %s", r.Direction, r.EtherType, r.Protocol, lo, hi, r.RemoteIPPrefix)
}

// LoadBalancerState is the load balancer named name as the fake holds it, in a canonical text
// without the IDs and addresses the fake assigns: its listeners with their settings, pools,
// monitors and members, whether a floating IP is associated with its VIP, and the rules of
// the security group named group (if any) with the number of ports it is attached to.
func (c *Cloud) LoadBalancerState(name, group string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	lb := c.lbNamed(name)
	if lb == nil {
		return "", false
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	sorted := func(v []string) string {
		v = append([]string(nil), v...)
		sort.Strings(v)
		return strings.Join(v, ",")
	}
	add("loadbalancer %q description=%q provider=%s tags=[%s]", lb.Name, lb.Description, lb.Provider, sorted(lb.Tags))
	var pools []string
	for _, l := range c.lis {
		if l.LBID != lb.ID {
			continue
		}
		add("listener %s/%d name=%q description=%q allowed_cidrs=[%s] up=%t", l.Protocol, l.Port, l.Name, l.Description, sorted(l.AllowedCIDRs), l.Up)
		if p := c.pools[l.PoolID]; p != nil {
			pools = append(pools, p.ID)
			add("  pool %s/%d name=%q %s %s description=%q up=%t", l.Protocol, l.Port, p.Name, p.Protocol, p.Method, p.Description, p.Up)
			if sp := p.Persistence; sp != nil {
				add("  session_persistence %s/%d %s %q", l.Protocol, l.Port, sp.Type, sp.CookieName)
			}
			if m := c.monitors[p.MonitorID]; m != nil {
				add("  monitor %s/%d %s delay=%d timeout=%d retries=%d path=%q method=%q codes=%q up=%t", l.Protocol, l.Port, m.Type, m.Delay, m.Timeout,
					m.MaxRetries, m.URLPath, m.HTTPMethod, m.ExpectedCodes, m.Up)
			}
			var ms []string
			for _, m := range p.Members {
				ms = append(ms, fmt.Sprintf("%s:%d/%d@%s weight=%d backup=%t up=%t", m.Address, m.Port, m.MonitorPort, m.SubnetID, m.Weight, m.Backup, m.Up))
			}
			add("  members %s/%d [%s]", l.Protocol, l.Port, sorted(ms))
		}
	}
	for _, p := range c.pools {
		if p.LBID == lb.ID && p.ListenerID == "" {
			add("pool without listener name=%q", p.Name)
		}
	}
	fips := 0
	for _, f := range c.fips {
		if f.PortID == lb.VipPortID {
			fips++
		}
	}
	add("floating IPs associated: %d", fips)
	for _, g := range c.sgs {
		if g.Name != group {
			continue
		}
		var rules []string
		for _, r := range c.sgRules {
			if r.GroupID == g.ID {
				rules = append(rules, c.ruleText(r))
			}
		}
		attached := 0
		for _, p := range c.ports {
			for _, id := range p.SecurityGroups {
				if id == g.ID {
					attached++
				}
			}
		}
		add("security group %q rules=[%s] ports=%d", g.Name, sorted(rules), attached)
	}
	sort.Strings(out[1:])
	return strings.Join(out, "\n"), true
}

// SetPoolPersistence sets (typ "" removes) the session_persistence of port's pool, as a user
// would by hand; cookie is the cookie_name (APP_COOKIE).
func (c *Cloud) SetPoolPersistence(name string, port int, typ, cookie string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.poolOn(name, port)
	if p == nil {
		return false
	}
	p.Persistence = nil
	if typ != "" {
		p.Persistence = &Persistence{Type: typ, CookieName: cookie}
	}
	return true
}
