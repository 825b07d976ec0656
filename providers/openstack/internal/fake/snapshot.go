package fake

import (
	"fmt"
	"sort"
	"strings"
)

// Snapshot is every load-balancing object the fake holds, read from its state, one line each
// in a canonical order: load balancers, listeners (with allowed_cidrs and description),
// pools, members, monitors, floating IPs (with their port), security groups and their rules,
// and the security group lists of ports that have any. Equal snapshots mean nothing was
// created, changed or deleted. Nothing volatile (timestamps) is in it.
func (c *Cloud) Snapshot() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	sorted := func(v []string) string {
		v = append([]string(nil), v...)
		sort.Strings(v)
		return strings.Join(v, ",")
	}
	for _, lb := range c.lbs {
		add("loadbalancer %s name=%q description=%q status=%s vip=%s vip_port=%s subnet=%s provider=%s tags=[%s]",
			lb.ID, lb.Name, lb.Description, lb.Status, lb.VipAddress, lb.VipPortID, lb.VipSubnetID, lb.Provider, sorted(lb.Tags))
	}
	for _, l := range c.lis {
		add("listener %s lb=%s name=%q description=%q %s/%d pool=%s allowed_cidrs=[%s]",
			l.ID, l.LBID, l.Name, l.Description, l.Protocol, l.Port, l.PoolID, sorted(l.AllowedCIDRs))
	}
	for _, p := range c.pools {
		add("pool %s lb=%s listener=%s name=%q description=%q protocol=%s method=%s monitor=%s",
			p.ID, p.LBID, p.ListenerID, p.Name, p.Description, p.Protocol, p.Method, p.MonitorID)
		for _, m := range p.Members {
			add("member %s pool=%s %s:%d subnet=%s monitor_port=%d", m.ID, p.ID, m.Address, m.Port, m.SubnetID, m.MonitorPort)
		}
	}
	for _, m := range c.monitors {
		add("monitor %s pool=%s type=%s delay=%d timeout=%d retries=%d url=%q", m.ID, m.PoolID, m.Type, m.Delay, m.Timeout, m.MaxRetries, m.URLPath)
	}
	for _, f := range c.fips {
		add("floatingip %s %s network=%s port=%s fixed=%s status=%s description=%q", f.ID, f.FloatingIP, f.NetworkID, f.PortID, f.FixedIP, f.Status, f.Description)
	}
	for _, g := range c.sgs {
		add("securitygroup %s name=%q description=%q", g.ID, g.Name, g.Description)
	}
	for _, r := range c.sgRules {
		ports := "any"
		if r.PortMin != nil && r.PortMax != nil {
			ports = fmt.Sprintf("%d-%d", *r.PortMin, *r.PortMax)
		}
		add("rule %s group=%s %s %s %s %s %s description=%q", r.ID, r.GroupID, r.Direction, r.EtherType, r.Protocol, ports, r.RemoteIPPrefix, r.Description)
	}
	for _, p := range c.ports {
		if len(p.SecurityGroups) > 0 {
			add("port %s device=%s security_groups=[%s]", p.ID, p.DeviceID, strings.Join(p.SecurityGroups, ","))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
