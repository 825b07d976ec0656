package fakeaws

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Objects made as an operator or another tool would make them, not through the API the ccm
// calls (they count as no write of the ccm's), and Dump, the canonical text of everything.

// AddSecurityGroup makes a security group in the fake's VPC with tags and returns its ID.
func (s *Server) AddSecurityGroup(name, description string, tags map[string]string, rules ...Rule) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID("sg")
	s.groups[id] = &SecurityGroup{ID: id, Name: name, Description: description, VPC: VPC, Rules: slices.Clone(rules)}
	s.tags[id] = copyTags(tags)
	return id
}

// AddGroupRule adds an ingress rule to a group as someone else would (no check for duplicates).
func (s *Server) AddGroupRule(group string, r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[group]; ok {
		g.Rules = append(g.Rules, r)
	}
}

// GroupByName returns the ID of the group named name, if any.
func (s *Server) GroupByName(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, g := range s.groups {
		if g.Name == name {
			return id, true
		}
	}
	return "", false
}

// TagResource sets tags on an EC2 resource (a subnet, a security group).
func (s *Server) TagResource(id string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tags[id] == nil {
		s.tags[id] = map[string]string{}
	}
	maps.Copy(s.tags[id], tags)
}

// SubnetIDs lists the subnets.
func (s *Server) SubnetIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.subnets))
}

// AddTargetGroup makes a target group with tags and returns its ARN.
func (s *Server) AddTargetGroup(name, protocol string, port int, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tg := &TargetGroup{ARN: s.arn("targetgroup", name), Name: name, Protocol: protocol, Port: port, VPC: VPC,
		HealthProtocol: "TCP", HealthPort: "traffic-port", Tags: copyTags(tags)}
	s.tgs[tg.ARN] = tg
	return tg.ARN
}

// AddClassicLB makes a classic ELB with one TCP listener and tags.
func (s *Server) AddClassicLB(name string, port, instancePort int, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	subnets := slices.Sorted(maps.Keys(s.subnets))[:1]
	s.seq++
	s.elbs[name] = &ClassicLB{Name: name, DNSName: fmt.Sprintf("%s-%d.elb.fake.amazonaws.com", name, s.seq), Scheme: "internet-facing",
		Listeners: []Listener{{Protocol: "TCP", InstanceProtocol: "TCP", Port: port, InstancePort: instancePort}}, Subnets: subnets,
		Attributes: defaultELBAttributes, Tags: copyTags(tags), HealthCheck: HealthCheck{Target: fmt.Sprintf("TCP:%d", instancePort), Interval: 30, Timeout: 5, Healthy: 10, Unhealthy: 2}}
}

// AddNLB makes an active NLB with tags and returns its ARN.
func (s *Server) AddNLB(name string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	subnets := slices.Sorted(maps.Keys(s.subnets))[:1]
	lb := &NLB{ARN: s.arn("loadbalancer/net", name), Name: name, Scheme: "internet-facing", Subnets: subnets, Tags: copyTags(tags)}
	lb.DNSName = fmt.Sprintf("%s-%d.elb.us-east-1.amazonaws.com", name, s.seq)
	s.nlbs[lb.ARN] = lb
	return lb.ARN
}

// Dump is every load-balancing object the fake holds, with its settings and tags, one line
// each, sorted: classic ELBs (listeners, instances, subnets, groups, health check, attributes,
// policies), NLBs, their listeners, target groups (targets, attributes, health check),
// security groups and every rule with its description. Equal dumps mean nothing was created,
// changed or deleted. IDs are the fake's; nothing volatile (times, request IDs) is in it.
func (s *Server) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, lb := range s.elbs {
		p := "elb " + lb.Name
		add("%s dns=%s scheme=%s subnets=%v groups=%v crosszone=%v tags=%s", p, lb.DNSName, lb.Scheme, sortedCopy(lb.Subnets), sortedCopy(lb.SecurityGroups), lb.CrossZone, tagText(lb.Tags))
		add("%s healthcheck=%+v", p, lb.HealthCheck)
		add("%s instances=%v", p, sortedCopy(lb.Instances))
		for _, l := range lb.Listeners {
			add("%s listener %+v", p, l)
		}
		for n, pol := range lb.Policies {
			add("%s policy %s %s %s", p, n, pol.Type, tagText(pol.Attributes))
		}
		for port, ns := range lb.BackendPolicies {
			add("%s backend %d policies=%v", p, port, ns)
		}
	}
	for _, lb := range s.nlbs {
		add("nlb %s arn=%s dns=%s scheme=%s subnets=%v tags=%s", lb.Name, lb.ARN, lb.DNSName, lb.Scheme, sortedCopy(lb.Subnets), tagText(lb.Tags))
	}
	for _, l := range s.listeners {
		add("nlb-listener %s lb=%s port=%d protocol=%s tg=%s cert=%s", l.ARN, l.LB, l.Port, l.Protocol, l.TargetGroup, l.Cert)
	}
	for _, tg := range s.tgs {
		add("tg %s arn=%s protocol=%s port=%d vpc=%s health=%s:%s:%s thresholds=%s proxy_protocol_v2=%v targets=%v tags=%s", tg.Name, tg.ARN, tg.Protocol, tg.Port, tg.VPC,
			tg.HealthProtocol, tg.HealthPort, tg.HealthPath, tg.HealthThresholds, tg.ProxyProtocolV2, sortedCopy(tg.Targets), tagText(tg.Tags))
	}
	for id, a := range s.addresses {
		add("eip %s ip=%s association=%s tags=%s", id, a.PublicIP, a.Association, tagText(s.tags[id]))
	}
	for id, g := range s.groups {
		add("sg %s name=%s description=%q vpc=%s tags=%s", id, g.Name, g.Description, g.VPC, tagText(s.tags[id]))
		for _, r := range g.Rules {
			add("sg %s rule %s", id, r)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func sortedCopy(v []string) []string {
	out := slices.Clone(v)
	sort.Strings(out)
	return out
}

func tagText(tags map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		kv = append(kv, fmt.Sprintf("%q=%q", k, tags[k]))
	}
	return "{" + strings.Join(kv, ",") + "}"
}
