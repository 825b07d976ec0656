package fakeaws

import (
	"encoding/xml"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ClassicLB is a classic Elastic Load Balancer of the fake.
type ClassicLB struct {
	Name, DNSName, Scheme string
	Listeners             []Listener
	Instances             []string
	Subnets               []string
	SecurityGroups        []string
	HealthCheck           HealthCheck
	CrossZone             bool
	Attributes            ELBAttributes
	Tags                  map[string]string
	Policies              map[string]Policy // by name (CreateLoadBalancerPolicy)
	BackendPolicies       map[int][]string  // instance port -> policy names (SetLoadBalancerPoliciesForBackendServer)
	ListenerPolicies      map[int][]string  // listener port -> policy names (SetLoadBalancerPoliciesOfListener)
}

// ELBAttributes are a classic ELB's attributes besides cross-zone (DescribeLoadBalancerAttributes).
type ELBAttributes struct {
	IdleTimeout                  int // ConnectionSettings.IdleTimeout, 60 by default
	Draining                     bool
	DrainingTimeout              int // 300 by default
	AccessLog                    bool
	EmitInterval                 int // 60 by default
	S3BucketName, S3BucketPrefix string
}

// defaultELBAttributes are a new ELB's (upstream's ELBs have these unless annotated).
var defaultELBAttributes = ELBAttributes{IdleTimeout: 60, DrainingTimeout: 300, EmitInterval: 60}

// Policy is a classic ELB policy: its type and attributes.
type Policy struct {
	Type       string
	Attributes map[string]string
}

// policyTypes are the policy types the fake knows (a subset of DescribeLoadBalancerPolicyTypes).
var policyTypes = []string{"ProxyProtocolPolicyType", "SSLNegotiationPolicyType", "BackendServerAuthenticationPolicyType", "PublicKeyPolicyType"}

// securityPolicies are predefined ELB security policies (DescribeLoadBalancerPolicies without a
// load balancer; a subset).
var securityPolicies = []string{"ELBSecurityPolicy-2016-08", "ELBSecurityPolicy-TLS-1-1-2017-01", "ELBSecurityPolicy-TLS-1-2-2017-01",
	"ELBSecurityPolicy-2015-05", "ELBSecurityPolicy-2015-03", "ELBSample-OpenSSLDefaultCipherPolicy", "ELBSecurityPolicy-TLS13-1-2-2021-06"}

// Listener is one front-end port of a classic ELB.
type Listener struct {
	Protocol, InstanceProtocol string
	Port, InstancePort         int
	SSLCertificateID           string
}

// HealthCheck is a classic ELB health check.
type HealthCheck struct {
	Target                                string
	Interval, Timeout, Healthy, Unhealthy int
}

// ClassicLB returns a copy of the named load balancer.
func (s *Server) ClassicLB(name string) (ClassicLB, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb, ok := s.elbs[name]
	if !ok {
		return ClassicLB{}, false
	}
	c := *lb
	c.Instances = slices.Clone(lb.Instances)
	c.Tags = copyTags(lb.Tags)
	c.Policies = map[string]Policy{}
	for n, p := range lb.Policies {
		c.Policies[n] = Policy{Type: p.Type, Attributes: copyTags(p.Attributes)}
	}
	c.BackendPolicies = map[int][]string{}
	for port, ns := range lb.BackendPolicies {
		c.BackendPolicies[port] = slices.Clone(ns)
	}
	c.ListenerPolicies = map[int][]string{}
	for port, ns := range lb.ListenerPolicies {
		c.ListenerPolicies[port] = slices.Clone(ns)
	}
	return c, true
}

// ClassicLBNames lists the load balancers.
func (s *Server) ClassicLBNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.elbs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *Server) elb(action string, f form) (string, *apiError) {
	if action == "DescribeLoadBalancers" {
		return s.describeELBs(f)
	}
	if action == "CreateLoadBalancer" {
		return s.createELB(f)
	}
	name := f.get("LoadBalancerName")
	if action == "RemoveTags" {
		for _, n := range f.list("LoadBalancerNames.member") {
			lb, ok := s.elbs[n]
			if !ok {
				return "", elbNotFound(n)
			}
			for _, p := range f.structs("Tags.member") {
				delete(lb.Tags, f.get(p+"Key"))
			}
		}
		return "", nil
	}
	if action == "AddTags" || action == "DescribeTags" {
		names := f.list("LoadBalancerNames.member")
		if len(names) > maxTagNames {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: fmt.Sprintf("1 validation error detected: Value at 'loadBalancerNames' failed to satisfy constraint: Member must have length less than or equal to %d", maxTagNames)}
		}
		for _, n := range names {
			if _, ok := s.elbs[n]; !ok {
				return "", elbNotFound(n)
			}
		}
		if action == "AddTags" {
			for _, n := range names {
				for k, v := range f.tags("Tags.member") {
					s.elbs[n].Tags[k] = v
				}
			}
			return "", nil
		}
		var x w
		x.open("TagDescriptions")
		for _, n := range names {
			x.open("member")
			x.leaf("LoadBalancerName", n)
			x.open("Tags")
			tags := s.elbs[n].Tags
			keys := make([]string, 0, len(tags))
			for k := range tags {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				x.open("member")
				x.leaf("Key", k)
				x.leaf("Value", tags[k])
				x.close("member")
			}
			x.close("Tags")
			x.close("member")
		}
		x.close("TagDescriptions")
		return x.b.String(), nil
	}
	lb, ok := s.elbs[name]
	if action == "DeleteLoadBalancer" {
		delete(s.elbs, name) // deleting a missing load balancer succeeds, as in ELB
		return "", nil
	}
	if !ok {
		return "", elbNotFound(name)
	}
	switch action {
	case "RegisterInstancesWithLoadBalancer", "DeregisterInstancesFromLoadBalancer":
		for _, p := range f.structs("Instances.member") {
			id := f.get(p + "InstanceId")
			in, exists := s.instances[id]
			_ = in
			if action[0] == 'R' && (!exists || in.State == "terminated") {
				return "", &apiError{Status: 400, Code: "InvalidInstance", Message: "invalid instance " + id}
			}
			i := slices.Index(lb.Instances, id)
			if action[0] == 'R' && i < 0 {
				lb.Instances = append(lb.Instances, id)
			} else if action[0] == 'D' && i >= 0 {
				lb.Instances = slices.Delete(lb.Instances, i, i+1)
			}
		}
		var x w
		x.open("Instances")
		for _, id := range lb.Instances {
			x.open("member")
			x.leaf("InstanceId", id)
			x.close("member")
		}
		x.close("Instances")
		return x.b.String(), nil
	case "ConfigureHealthCheck":
		lb.HealthCheck = healthCheck(f, "HealthCheck.")
		var x w
		writeHealthCheck(&x, lb.HealthCheck)
		return x.b.String(), nil
	case "CreateLoadBalancerListeners":
		ls, err := listeners(f)
		if err != nil {
			return "", err
		}
		for _, l := range ls {
			if slices.ContainsFunc(lb.Listeners, func(o Listener) bool { return o.Port == l.Port }) {
				return "", &apiError{Status: 400, Code: "DuplicateListener", Message: fmt.Sprintf("a listener on port %d already exists", l.Port)}
			}
		}
		lb.Listeners = append(lb.Listeners, ls...)
		return "", nil
	case "DeleteLoadBalancerListeners":
		for _, p := range f.list("LoadBalancerPorts.member") {
			port, _ := strconv.Atoi(p)
			lb.Listeners = slices.DeleteFunc(lb.Listeners, func(l Listener) bool { return l.Port == port })
			delete(lb.ListenerPolicies, port)
		}
		return "", nil
	case "CreateLoadBalancerPolicy":
		pn, pt := f.get("PolicyName"), f.get("PolicyTypeName")
		if pn == "" || pt == "" {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "PolicyName and PolicyTypeName are required"}
		}
		if !slices.Contains(policyTypes, pt) {
			return "", &apiError{Status: 400, Code: "PolicyTypeNotFound", Message: "policy type " + pt + " not found"}
		}
		if _, dup := lb.Policies[pn]; dup {
			return "", &apiError{Status: 400, Code: "DuplicatePolicyName", Message: "a policy named " + pn + " exists"}
		}
		attrs := map[string]string{}
		for _, p := range f.structs("PolicyAttributes.member") {
			attrs[f.get(p+"AttributeName")] = f.get(p + "AttributeValue")
		}
		if ref, ok := attrs["Reference-Security-Policy"]; pt == "SSLNegotiationPolicyType" && (!ok || !slices.Contains(securityPolicies, ref)) {
			return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "Reference-Security-Policy " + ref + " is not a predefined security policy"}
		}
		if pt == "ProxyProtocolPolicyType" && attrs["ProxyProtocol"] != "true" && attrs["ProxyProtocol"] != "false" {
			return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "ProxyProtocolPolicyType needs the attribute ProxyProtocol (true or false)"}
		}
		if lb.Policies == nil {
			lb.Policies = map[string]Policy{}
		}
		lb.Policies[pn] = Policy{Type: pt, Attributes: attrs}
		return "", nil
	case "SetLoadBalancerPoliciesForBackendServer":
		port, err := strconv.Atoi(f.get("InstancePort"))
		if err != nil || port < 1 || port > 65535 {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "InstancePort must be 1-65535"}
		}
		names := f.list("PolicyNames.member")
		for _, n := range names {
			if _, ok := lb.Policies[n]; !ok {
				return "", &apiError{Status: 400, Code: "PolicyNotFound", Message: "There is no policy named '" + n + "'"}
			}
		}
		if lb.BackendPolicies == nil {
			lb.BackendPolicies = map[int][]string{}
		}
		if len(names) == 0 {
			delete(lb.BackendPolicies, port)
		} else {
			lb.BackendPolicies[port] = names
		}
		return "", nil
	case "DescribeLoadBalancerPolicies":
		names := f.list("PolicyNames.member")
		for _, n := range names {
			if _, ok := lb.Policies[n]; !ok {
				return "", &apiError{Status: 400, Code: "PolicyNotFound", Message: "There is no policy named '" + n + "'"}
			}
		}
		if len(names) == 0 {
			for n := range lb.Policies {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		var x w
		x.open("PolicyDescriptions")
		for _, n := range names {
			p := lb.Policies[n]
			x.open("member")
			x.leaf("PolicyName", n)
			x.leaf("PolicyTypeName", p.Type)
			x.open("PolicyAttributeDescriptions")
			keys := make([]string, 0, len(p.Attributes))
			for k := range p.Attributes {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				x.open("member")
				x.leaf("AttributeName", k)
				x.leaf("AttributeValue", p.Attributes[k])
				x.close("member")
			}
			x.close("PolicyAttributeDescriptions")
			x.close("member")
		}
		x.close("PolicyDescriptions")
		return x.b.String(), nil
	case "ModifyLoadBalancerAttributes":
		// Only what the request holds changes, as in ELB; values are checked first.
		p := "LoadBalancerAttributes."
		a, cz := lb.Attributes, lb.CrossZone
		if v := f.get(p + "CrossZoneLoadBalancing.Enabled"); v != "" {
			cz = v == "true"
		}
		if v := f.get(p + "ConnectionSettings.IdleTimeout"); v != "" {
			if a.IdleTimeout, _ = strconv.Atoi(v); a.IdleTimeout < 1 || a.IdleTimeout > 4000 {
				return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "IdleTimeout must be 1-4000"}
			}
		}
		if v := f.get(p + "ConnectionDraining.Enabled"); v != "" {
			a.Draining = v == "true"
		}
		if v := f.get(p + "ConnectionDraining.Timeout"); v != "" {
			if a.DrainingTimeout, _ = strconv.Atoi(v); a.DrainingTimeout < 1 || a.DrainingTimeout > 3600 {
				return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "ConnectionDraining Timeout must be 1-3600"}
			}
		}
		if v := f.get(p + "AccessLog.Enabled"); v != "" {
			a.AccessLog = v == "true"
			a.S3BucketName, a.S3BucketPrefix = f.get(p+"AccessLog.S3BucketName"), f.get(p+"AccessLog.S3BucketPrefix")
			if v := f.get(p + "AccessLog.EmitInterval"); v != "" {
				if a.EmitInterval, _ = strconv.Atoi(v); a.EmitInterval != 5 && a.EmitInterval != 60 {
					return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "EmitInterval must be 5 or 60"}
				}
			}
			if a.AccessLog && a.S3BucketName == "" {
				return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "access logs need an S3BucketName"}
			}
		}
		lb.Attributes, lb.CrossZone = a, cz
		return "<LoadBalancerName>" + name + "</LoadBalancerName>", nil
	case "DescribeLoadBalancerAttributes":
		a := lb.Attributes
		return fmt.Sprintf("<LoadBalancerAttributes><CrossZoneLoadBalancing><Enabled>%v</Enabled></CrossZoneLoadBalancing>"+
			"<ConnectionSettings><IdleTimeout>%d</IdleTimeout></ConnectionSettings>"+
			"<ConnectionDraining><Enabled>%v</Enabled><Timeout>%d</Timeout></ConnectionDraining>"+
			"<AccessLog><Enabled>%v</Enabled><EmitInterval>%d</EmitInterval><S3BucketName>%s</S3BucketName><S3BucketPrefix>%s</S3BucketPrefix></AccessLog>"+
			"</LoadBalancerAttributes>", lb.CrossZone, a.IdleTimeout, a.Draining, a.DrainingTimeout, a.AccessLog, a.EmitInterval, xmlText(a.S3BucketName), xmlText(a.S3BucketPrefix)), nil
	case "SetLoadBalancerPoliciesOfListener":
		port, _ := strconv.Atoi(f.get("LoadBalancerPort"))
		i := slices.IndexFunc(lb.Listeners, func(l Listener) bool { return l.Port == port })
		if i < 0 {
			return "", &apiError{Status: 400, Code: "ListenerNotFound", Message: fmt.Sprintf("there is no listener on port %d", port)}
		}
		names := f.list("PolicyNames.member")
		for _, n := range names {
			if _, ok := lb.Policies[n]; !ok {
				return "", &apiError{Status: 400, Code: "PolicyNotFound", Message: "There is no policy named '" + n + "'"}
			}
		}
		if lb.ListenerPolicies == nil {
			lb.ListenerPolicies = map[int][]string{}
		}
		lb.ListenerPolicies[port] = names
		return "", nil
	case "AttachLoadBalancerToSubnets", "DetachLoadBalancerFromSubnets":
		for _, sn := range f.list("Subnets.member") {
			if _, known := s.subnets[sn]; !known {
				return "", &apiError{Status: 400, Code: "SubnetNotFound", Message: "subnet " + sn + " not found"}
			}
			i := slices.Index(lb.Subnets, sn)
			if action[0] == 'A' && i < 0 {
				lb.Subnets = append(lb.Subnets, sn)
			} else if action[0] == 'D' && i >= 0 {
				lb.Subnets = slices.Delete(lb.Subnets, i, i+1)
			}
		}
		var x w
		x.open("Subnets")
		for _, sn := range lb.Subnets {
			x.leaf("member", sn)
		}
		x.close("Subnets")
		return x.b.String(), nil
	case "ApplySecurityGroupsToLoadBalancer":
		gs := f.list("SecurityGroups.member")
		for _, g := range gs {
			if _, known := s.groups[g]; !known {
				return "", &apiError{Status: 400, Code: "InvalidSecurityGroup", Message: "security group " + g + " not found"}
			}
		}
		lb.SecurityGroups = gs
		var x w
		x.open("SecurityGroups")
		for _, g := range gs {
			x.leaf("member", g)
		}
		x.close("SecurityGroups")
		return x.b.String(), nil
	}
	return "", &apiError{Status: 400, Code: "InvalidAction", Message: "the fake does not implement " + action}
}

func elbNotFound(name string) *apiError {
	return notFound("LoadBalancerNotFound", "There is no ACTIVE Load Balancer named '%s'", name)
}

func listeners(f form) ([]Listener, *apiError) {
	var out []Listener
	for _, p := range f.structs("Listeners.member") {
		port, _ := strconv.Atoi(f.get(p + "LoadBalancerPort"))
		iport, _ := strconv.Atoi(f.get(p + "InstancePort"))
		l := Listener{Protocol: f.get(p + "Protocol"), InstanceProtocol: f.get(p + "InstanceProtocol"), Port: port, InstancePort: iport, SSLCertificateID: f.get(p + "SSLCertificateId")}
		if port < 1 || port > 65535 || iport < 1 || iport > 65535 {
			return nil, &apiError{Status: 400, Code: "ValidationError", Message: "listener ports must be 1-65535"}
		}
		if (l.Protocol == "HTTPS" || l.Protocol == "SSL") && l.SSLCertificateID == "" {
			return nil, &apiError{Status: 400, Code: "ValidationError", Message: "an SSL/HTTPS listener needs SSLCertificateId"}
		}
		out = append(out, l)
	}
	return out, nil
}

func healthCheck(f form, p string) HealthCheck {
	atoi := func(k string) int { v, _ := strconv.Atoi(f.get(p + k)); return v }
	return HealthCheck{Target: f.get(p + "Target"), Interval: atoi("Interval"), Timeout: atoi("Timeout"), Healthy: atoi("HealthyThreshold"), Unhealthy: atoi("UnhealthyThreshold")}
}

func writeHealthCheck(x *w, h HealthCheck) {
	x.open("HealthCheck")
	x.leaf("Target", h.Target)
	x.leafInt("Interval", h.Interval)
	x.leafInt("Timeout", h.Timeout)
	x.leafInt("UnhealthyThreshold", h.Unhealthy)
	x.leafInt("HealthyThreshold", h.Healthy)
	x.close("HealthCheck")
}

func (s *Server) createELB(f form) (string, *apiError) {
	name := f.get("LoadBalancerName")
	if name == "" || len(name) > 32 {
		return "", &apiError{Status: 400, Code: "ValidationError", Message: "LoadBalancerName must be 1-32 characters"}
	}
	if _, ok := s.elbs[name]; ok {
		return "", &apiError{Status: 400, Code: "DuplicateLoadBalancerName", Message: "a load balancer named " + name + " exists"}
	}
	ls, err := listeners(f)
	if err != nil {
		return "", err
	}
	subnets := f.list("Subnets.member")
	if len(subnets) == 0 {
		return "", &apiError{Status: 400, Code: "ValidationError", Message: "at least one subnet is required in a VPC"}
	}
	for _, sn := range subnets {
		if _, ok := s.subnets[sn]; !ok {
			return "", &apiError{Status: 400, Code: "SubnetNotFound", Message: "subnet " + sn + " not found"}
		}
	}
	groups := f.list("SecurityGroups.member")
	for _, g := range groups {
		if _, ok := s.groups[g]; !ok {
			return "", &apiError{Status: 400, Code: "InvalidSecurityGroup", Message: "security group " + g + " not found"}
		}
	}
	scheme := f.get("Scheme")
	if scheme == "" {
		scheme = "internet-facing"
	}
	s.seq++
	dns := fmt.Sprintf("%s-%d.elb.fake.amazonaws.com", name, s.seq)
	if scheme == "internal" {
		dns = "internal-" + dns
	}
	s.elbs[name] = &ClassicLB{Name: name, DNSName: dns, Scheme: scheme, Listeners: ls, Subnets: subnets,
		SecurityGroups: groups, Tags: f.tags("Tags.member"), Attributes: defaultELBAttributes,
		HealthCheck: HealthCheck{Target: "TCP:" + strconv.Itoa(firstPort(ls)), Interval: 30, Timeout: 5, Healthy: 10, Unhealthy: 2}}
	return "<DNSName>" + dns + "</DNSName>", nil
}

func firstPort(ls []Listener) int {
	if len(ls) == 0 {
		return 0
	}
	return ls[0].InstancePort
}

func (s *Server) describeELBs(f form) (string, *apiError) {
	names := f.list("LoadBalancerNames.member")
	for _, n := range names {
		if _, ok := s.elbs[n]; !ok {
			return "", elbNotFound(n)
		}
	}
	if len(names) == 0 {
		for n := range s.elbs {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	names, next, aerr := elbPage(f, names, s.pageLimit)
	if aerr != nil {
		return "", aerr
	}
	var x w
	x.open("LoadBalancerDescriptions")
	for _, n := range names {
		lb := s.elbs[n]
		x.open("member")
		x.leaf("LoadBalancerName", lb.Name)
		x.leaf("DNSName", lb.DNSName)
		x.leaf("Scheme", lb.Scheme)
		x.leaf("VPCId", VPC)
		x.open("ListenerDescriptions")
		for _, l := range lb.Listeners {
			x.open("member")
			x.open("Listener")
			x.leaf("Protocol", l.Protocol)
			x.leafInt("LoadBalancerPort", l.Port)
			x.leaf("InstanceProtocol", l.InstanceProtocol)
			x.leafInt("InstancePort", l.InstancePort)
			if l.SSLCertificateID != "" {
				x.leaf("SSLCertificateId", l.SSLCertificateID)
			}
			x.close("Listener")
			x.open("PolicyNames")
			for _, n := range lb.ListenerPolicies[l.Port] {
				x.leaf("member", n)
			}
			x.close("PolicyNames")
			x.close("member")
		}
		x.close("ListenerDescriptions")
		x.open("Instances")
		for _, id := range lb.Instances {
			x.open("member")
			x.leaf("InstanceId", id)
			x.close("member")
		}
		x.close("Instances")
		writeHealthCheck(&x, lb.HealthCheck)
		x.open("BackendServerDescriptions")
		ports := make([]int, 0, len(lb.BackendPolicies))
		for p := range lb.BackendPolicies {
			ports = append(ports, p)
		}
		sort.Ints(ports)
		for _, p := range ports {
			x.open("member")
			x.leafInt("InstancePort", p)
			x.open("PolicyNames")
			for _, n := range lb.BackendPolicies[p] {
				x.leaf("member", n)
			}
			x.close("PolicyNames")
			x.close("member")
		}
		x.close("BackendServerDescriptions")
		x.open("Policies")
		x.open("AppCookieStickinessPolicies")
		x.close("AppCookieStickinessPolicies")
		x.open("LBCookieStickinessPolicies")
		x.close("LBCookieStickinessPolicies")
		x.open("OtherPolicies")
		pnames := make([]string, 0, len(lb.Policies))
		for n := range lb.Policies {
			pnames = append(pnames, n)
		}
		sort.Strings(pnames)
		for _, n := range pnames {
			x.leaf("member", n)
		}
		x.close("OtherPolicies")
		x.close("Policies")
		for _, l := range []struct {
			name string
			vs   []string
		}{{"Subnets", lb.Subnets}, {"SecurityGroups", lb.SecurityGroups}} {
			x.open(l.name)
			for _, v := range l.vs {
				x.leaf("member", v)
			}
			x.close(l.name)
		}
		x.close("member")
	}
	x.close("LoadBalancerDescriptions")
	if next != "" {
		x.leaf("NextMarker", next)
	}
	return x.b.String(), nil
}

// xmlText escapes v for an XML text node.
func xmlText(v string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(v))
	return b.String()
}
