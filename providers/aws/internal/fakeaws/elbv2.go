package fakeaws

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

const versionELBv2 = "2015-12-01"

// NLB is a network load balancer of the fake. It is "provisioning" until its ready time.
type NLB struct {
	ARN, Name, DNSName, Scheme string
	Subnets                    []string
	Tags                       map[string]string
	// Attributes are the load balancer attributes (DescribeLoadBalancerAttributes), AWS's
	// defaults until modified.
	Attributes map[string]string
	// Addresses are the Elastic IP allocation or private IPv4 address per subnet of the
	// SubnetMappings it was created with.
	Addresses map[string]string
	// SecurityGroups are the groups given at creation: AWS attaches groups to an NLB only
	// when it is created with some (one created without never takes any).
	SecurityGroups []string
	readyAt        time.Time
}

// nlbAttrDefaults are a new NLB's attributes (the subset the fake models).
var nlbAttrDefaults = map[string]string{"load_balancing.cross_zone.enabled": "false", "access_logs.s3.enabled": "false",
	"access_logs.s3.bucket": "", "access_logs.s3.prefix": "", "deletion_protection.enabled": "false"}

// tgAttrDefaults are a new instance target group's attributes (TCP/UDP/TLS).
var tgAttrDefaults = map[string]string{"deregistration_delay.timeout_seconds": "300", "deregistration_delay.connection_termination.enabled": "false",
	"preserve_client_ip.enabled": "true", "proxy_protocol_v2.enabled": "false", "stickiness.enabled": "false", "stickiness.type": "source_ip",
	"load_balancing.cross_zone.enabled": "use_load_balancer_configuration"}

// validAttr checks an attribute value as ELBv2 does for the keys the fake models.
func validAttr(k, v string) bool {
	switch k {
	case "deregistration_delay.timeout_seconds":
		n, err := strconv.Atoi(v)
		return err == nil && n >= 0 && n <= 3600
	case "stickiness.type":
		return v == "source_ip"
	case "load_balancing.cross_zone.enabled":
		return v == "true" || v == "false" || v == "use_load_balancer_configuration"
	case "access_logs.s3.bucket", "access_logs.s3.prefix":
		return true
	}
	return v == "true" || v == "false"
}

// TargetGroup is an ELBv2 target group (instance targets).
type TargetGroup struct {
	ARN, Name, Protocol, VPC string
	Port                     int
	HealthProtocol           string
	HealthPort, HealthPath   string
	HealthThresholds         string   // "healthy/unhealthy/interval/timeout" as created
	Targets                  []string // instance IDs (on Port)
	Tags                     map[string]string
	ProxyProtocolV2          bool              // attribute proxy_protocol_v2.enabled
	Attributes               map[string]string // the other attributes, AWS's defaults until modified
}

// NLBListener forwards a port to one target group.
type NLBListener struct {
	ARN, LB, Protocol, TargetGroup, Cert string
	Port                                 int
	SSLPolicy                            string // TLS listeners: ELB's default unless given
}

// SetNLBProvisioning sets how long a new NLB stays "provisioning".
func (s *Server) SetNLBProvisioning(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nlbDelay = d
}

// NLBByName returns a copy of the named NLB with its listeners and target groups.
func (s *Server) NLBByName(name string) (NLB, []NLBListener, []TargetGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lb := range s.nlbs {
		if lb.Name == name {
			var ls []NLBListener
			var tgs []TargetGroup
			for _, l := range s.listeners {
				if l.LB == lb.ARN {
					ls = append(ls, *l)
					tg := *s.tgs[l.TargetGroup]
					tg.Targets = slices.Clone(tg.Targets)
					tgs = append(tgs, tg)
				}
			}
			c := *lb
			c.Tags = copyTags(lb.Tags)
			return c, ls, tgs, true
		}
	}
	return NLB{}, nil, nil, false
}

// MinTargets is the smallest number of targets in any target group attached to an NLB, and
// the number of such groups.
func (s *Server) MinTargets() (minimum, groups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	minimum = -1
	for _, l := range s.listeners {
		n := len(s.tgs[l.TargetGroup].Targets)
		if minimum < 0 || n < minimum {
			minimum = n
		}
		groups++
	}
	return minimum, groups
}

func (s *Server) arn(kind, name string) string {
	s.seq++
	return fmt.Sprintf("arn:aws:elasticloadbalancing:us-east-1:%s:%s/%s/%08x", Account, kind, name, s.seq)
}

func (s *Server) elbv2(action string, f form) (string, *apiError) {
	switch action {
	case "CreateLoadBalancer":
		name := f.get("Name")
		if name == "" || len(name) > 32 {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "Name must be 1-32 characters"}
		}
		if f.get("Type") != "network" {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "the fake serves only Type=network"}
		}
		for _, lb := range s.nlbs {
			if lb.Name == name {
				return "", &apiError{Status: 400, Code: "DuplicateLoadBalancerName", Message: "A load balancer with the same name '" + name + "' exists"}
			}
		}
		subnets := f.list("Subnets.member")
		addresses := map[string]string{}
		for _, p := range f.structs("SubnetMappings.member") {
			sn := f.get(p + "SubnetId")
			subnets = append(subnets, sn)
			if a := f.get(p + "AllocationId"); a != "" {
				addresses[sn] = a
			}
			if a := f.get(p + "PrivateIPv4Address"); a != "" {
				addresses[sn] = a
			}
		}
		for _, sn := range subnets {
			if _, ok := s.subnets[sn]; !ok {
				return "", &apiError{Status: 400, Code: "SubnetNotFound", Message: "subnet " + sn + " not found"}
			}
		}
		if len(subnets) == 0 {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "at least one subnet is required"}
		}
		scheme := f.get("Scheme")
		if scheme == "" {
			scheme = "internet-facing"
		}
		if len(addresses) > 0 && scheme == "internal" && slices.ContainsFunc(slices.Collect(maps.Values(addresses)), func(a string) bool { return strings.HasPrefix(a, "eipalloc-") }) {
			return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "an internal load balancer cannot have Elastic IP addresses"}
		}
		groups := f.list("SecurityGroups.member")
		for _, g := range groups {
			if sg, ok := s.groups[g]; !ok || sg.VPC != VPC {
				return "", &apiError{Status: 400, Code: "InvalidSecurityGroup", Message: "security group " + g + " not found in the load balancer's VPC"}
			}
		}
		lb := &NLB{ARN: s.arn("loadbalancer/net", name), Name: name, Scheme: scheme, Subnets: subnets, SecurityGroups: groups,
			Tags: f.tags("Tags.member"), readyAt: time.Now().Add(s.nlbDelay), Attributes: maps.Clone(nlbAttrDefaults), Addresses: addresses}
		if aerr := s.associateNLBAddresses(lb.ARN, addresses); aerr != nil {
			return "", aerr
		}
		lb.DNSName = fmt.Sprintf("%s-%d.elb.us-east-1.amazonaws.com", name, s.seq)
		s.nlbs[lb.ARN] = lb
		var x w
		x.open("LoadBalancers")
		s.writeNLB(&x, lb)
		x.close("LoadBalancers")
		return x.b.String(), nil
	case "DescribeLoadBalancers":
		var found []*NLB
		names, arns := f.list("Names.member"), f.list("LoadBalancerArns.member")
		for _, n := range names {
			i := slices.IndexFunc(s.sortedNLBs(), func(lb *NLB) bool { return lb.Name == n })
			if i < 0 {
				return "", notFound("LoadBalancerNotFound", "Load balancers '[%s]' not found", n)
			}
			found = append(found, s.sortedNLBs()[i])
		}
		for _, a := range arns {
			lb, ok := s.nlbs[a]
			if !ok {
				return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
			}
			found = append(found, lb)
		}
		if len(names) == 0 && len(arns) == 0 {
			found = s.sortedNLBs()
		}
		found, next, aerr := elbPage(f, found, s.pageLimit)
		if aerr != nil {
			return "", aerr
		}
		var x w
		x.open("LoadBalancers")
		for _, lb := range found {
			s.writeNLB(&x, lb)
		}
		x.close("LoadBalancers")
		if next != "" {
			x.leaf("NextMarker", next)
		}
		return x.b.String(), nil
	case "SetSecurityGroups":
		// As ELBv2: the list replaces the NLB's groups; an NLB created without groups never
		// takes any (InvalidConfigurationRequest), and every group must exist in its VPC.
		lb, ok := s.nlbs[f.get("LoadBalancerArn")]
		if !ok {
			return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
		}
		if len(lb.SecurityGroups) == 0 {
			return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "You cannot set security groups on a Network Load Balancer which was created without any security groups"}
		}
		groups := f.list("SecurityGroups.member")
		if len(groups) == 0 {
			// Removing every group is not modelled (ccm never asks it).
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "the fake needs at least one security group"}
		}
		for _, g := range groups {
			if sg, ok := s.groups[g]; !ok || sg.VPC != VPC {
				return "", &apiError{Status: 400, Code: "InvalidSecurityGroup", Message: "security group " + g + " not found in the load balancer's VPC"}
			}
		}
		lb.SecurityGroups = groups
		var x w
		x.open("SecurityGroupIds")
		for _, g := range groups {
			x.leaf("member", g)
		}
		x.close("SecurityGroupIds")
		return x.b.String(), nil
	case "DeleteLoadBalancer":
		arn := f.get("LoadBalancerArn")
		delete(s.nlbs, arn)
		s.releaseNLBAddresses(arn)
		for a, l := range s.listeners {
			if l.LB == arn {
				delete(s.listeners, a)
			}
		}
		return "", nil
	case "CreateTargetGroup":
		name := f.get("Name")
		if name == "" || len(name) > 32 {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "target group Name must be 1-32 characters"}
		}
		for _, tg := range s.tgs {
			if tg.Name == name {
				return "", &apiError{Status: 400, Code: "DuplicateTargetGroupName", Message: "A target group with the same name '" + name + "' exists"}
			}
		}
		if proto := f.get("Protocol"); !slices.Contains([]string{"TCP", "UDP", "TLS", "TCP_UDP"}, proto) {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "a network target group's Protocol must be TCP, UDP, TLS or TCP_UDP, not '" + proto + "'"}
		}
		port, _ := strconv.Atoi(f.get("Port"))
		tg := &TargetGroup{ARN: s.arn("targetgroup", name), Name: name, Protocol: f.get("Protocol"), Port: port, VPC: f.get("VpcId"),
			HealthProtocol: f.get("HealthCheckProtocol"), HealthPort: f.get("HealthCheckPort"), HealthPath: f.get("HealthCheckPath"), Tags: f.tags("Tags.member"),
			HealthThresholds: f.get("HealthyThresholdCount") + "/" + f.get("UnhealthyThresholdCount") + "/" + f.get("HealthCheckIntervalSeconds") + "/" + f.get("HealthCheckTimeoutSeconds"),
			Attributes:       maps.Clone(tgAttrDefaults)}
		s.tgs[tg.ARN] = tg
		var x w
		x.open("TargetGroups")
		s.writeTG(&x, tg)
		x.close("TargetGroups")
		return x.b.String(), nil
	case "DescribeTargetGroups":
		var found []*TargetGroup
		if lbArn := f.get("LoadBalancerArn"); lbArn != "" {
			if _, ok := s.nlbs[lbArn]; !ok {
				return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
			}
			for _, l := range s.listeners {
				if l.LB == lbArn && !slices.Contains(found, s.tgs[l.TargetGroup]) {
					found = append(found, s.tgs[l.TargetGroup])
				}
			}
		}
		for _, n := range f.list("Names.member") {
			i := slices.IndexFunc(s.sortedTGs(), func(tg *TargetGroup) bool { return tg.Name == n })
			if i < 0 {
				return "", notFound("TargetGroupNotFound", "One or more target groups not found")
			}
			found = append(found, s.sortedTGs()[i])
		}
		sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
		if f.get("LoadBalancerArn") == "" && len(f.list("Names.member")) == 0 {
			found = s.sortedTGs()
		}
		found, next, aerr := elbPage(f, found, s.pageLimit)
		if aerr != nil {
			return "", aerr
		}
		var x w
		x.open("TargetGroups")
		for _, tg := range found {
			s.writeTG(&x, tg)
		}
		x.close("TargetGroups")
		if next != "" {
			x.leaf("NextMarker", next)
		}
		return x.b.String(), nil
	case "ModifyTargetGroup":
		tg, ok := s.tgs[f.get("TargetGroupArn")]
		if !ok {
			return "", notFound("TargetGroupNotFound", "One or more target groups not found")
		}
		// Only what the request names changes, as in ELBv2.
		for k, field := range map[string]*string{"HealthCheckProtocol": &tg.HealthProtocol, "HealthCheckPort": &tg.HealthPort, "HealthCheckPath": &tg.HealthPath} {
			if v := f.get(k); v != "" {
				*field = v
			}
		}
		if tg.HealthProtocol == "TCP" {
			tg.HealthPath = "" // a TCP health check has no path
		}
		th := strings.Split(tg.HealthThresholds, "/")
		for len(th) < 4 {
			th = append(th, "")
		}
		for i, k := range []string{"HealthyThresholdCount", "UnhealthyThresholdCount", "HealthCheckIntervalSeconds", "HealthCheckTimeoutSeconds"} {
			if v := f.get(k); v != "" {
				th[i] = v
			}
		}
		tg.HealthThresholds = strings.Join(th, "/")
		var x w
		x.open("TargetGroups")
		s.writeTG(&x, tg)
		x.close("TargetGroups")
		return x.b.String(), nil
	case "ModifyTargetGroupAttributes", "DescribeTargetGroupAttributes":
		tg, ok := s.tgs[f.get("TargetGroupArn")]
		if !ok {
			return "", notFound("TargetGroupNotFound", "One or more target groups not found")
		}
		if action[0] == 'M' {
			attrs := f.structs("Attributes.member")
			if len(attrs) == 0 {
				return "", &apiError{Status: 400, Code: "ValidationError", Message: "Attributes is required"}
			}
			for _, p := range attrs {
				k, v := f.get(p+"Key"), f.get(p+"Value")
				if _, known := tgAttrDefaults[k]; !known {
					return "", &apiError{Status: 400, Code: "ValidationError", Message: "Attribute key '" + k + "' is not recognized"}
				}
				if !validAttr(k, v) {
					return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "Attribute value '" + v + "' is not valid for '" + k + "'"}
				}
			}
			for _, p := range attrs {
				k, v := f.get(p+"Key"), f.get(p+"Value")
				if k == "proxy_protocol_v2.enabled" {
					tg.ProxyProtocolV2 = v == "true"
				} else {
					if tg.Attributes == nil {
						tg.Attributes = maps.Clone(tgAttrDefaults)
					}
					tg.Attributes[k] = v
				}
			}
		}
		all := maps.Clone(tgAttrDefaults)
		maps.Copy(all, tg.Attributes)
		all["proxy_protocol_v2.enabled"] = strconv.FormatBool(tg.ProxyProtocolV2)
		return writeAttributes(all), nil
	case "ModifyLoadBalancerAttributes", "DescribeLoadBalancerAttributes":
		lb, ok := s.nlbs[f.get("LoadBalancerArn")]
		if !ok {
			return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
		}
		if lb.Attributes == nil {
			lb.Attributes = maps.Clone(nlbAttrDefaults)
		}
		if action[0] == 'M' {
			attrs := f.structs("Attributes.member")
			if len(attrs) == 0 {
				return "", &apiError{Status: 400, Code: "ValidationError", Message: "Attributes is required"}
			}
			next := maps.Clone(lb.Attributes)
			for _, p := range attrs {
				k, v := f.get(p+"Key"), f.get(p+"Value")
				if _, known := nlbAttrDefaults[k]; !known {
					return "", &apiError{Status: 400, Code: "ValidationError", Message: "Attribute key '" + k + "' is not recognized"}
				}
				if !validAttr(k, v) {
					return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "Attribute value '" + v + "' is not valid for '" + k + "'"}
				}
				next[k] = v
			}
			if next["access_logs.s3.enabled"] == "true" && next["access_logs.s3.bucket"] == "" {
				return "", &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "access logs need access_logs.s3.bucket"}
			}
			lb.Attributes = next
		}
		return writeAttributes(lb.Attributes), nil
	case "DeleteTargetGroup":
		arn := f.get("TargetGroupArn")
		for _, l := range s.listeners {
			if l.TargetGroup == arn {
				return "", &apiError{Status: 400, Code: "ResourceInUse", Message: "Target group is currently in use by a listener or a rule"}
			}
		}
		delete(s.tgs, arn)
		return "", nil
	case "RegisterTargets", "DeregisterTargets":
		tg, ok := s.tgs[f.get("TargetGroupArn")]
		if !ok {
			return "", notFound("TargetGroupNotFound", "One or more target groups not found")
		}
		for _, p := range f.structs("Targets.member") {
			id := f.get(p + "Id")
			i := slices.Index(tg.Targets, id)
			if action == "RegisterTargets" {
				if in, ok := s.instances[id]; !ok || in.State == "terminated" {
					return "", &apiError{Status: 400, Code: "InvalidTarget", Message: "The following targets are not in a running state: " + id}
				}
				if i < 0 {
					tg.Targets = append(tg.Targets, id)
					if s.newTargetsInitial {
						s.initial[tg.ARN+"/"+id] = true
					}
				}
			} else if i >= 0 {
				tg.Targets = slices.Delete(tg.Targets, i, i+1)
			}
		}
		return "", nil
	case "DescribeTargetHealth":
		tg, ok := s.tgs[f.get("TargetGroupArn")]
		if !ok {
			return "", notFound("TargetGroupNotFound", "One or more target groups not found")
		}
		var x w
		x.open("TargetHealthDescriptions")
		for _, id := range tg.Targets {
			x.open("member")
			x.open("Target")
			x.leaf("Id", id)
			x.leafInt("Port", tg.Port)
			x.close("Target")
			x.open("TargetHealth")
			state := "healthy"
			if s.initial[tg.ARN+"/"+id] {
				state = "initial"
			}
			x.leaf("State", state)
			x.close("TargetHealth")
			x.close("member")
		}
		x.close("TargetHealthDescriptions")
		return x.b.String(), nil
	case "CreateListener":
		lbArn := f.get("LoadBalancerArn")
		if _, ok := s.nlbs[lbArn]; !ok {
			return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
		}
		port, _ := strconv.Atoi(f.get("Port"))
		for _, l := range s.listeners {
			if l.LB == lbArn && l.Port == port {
				return "", &apiError{Status: 400, Code: "DuplicateListener", Message: "A listener already exists on this port for this load balancer"}
			}
		}
		tgArn := f.get("DefaultActions.member.1.TargetGroupArn")
		if _, ok := s.tgs[tgArn]; !ok || f.get("DefaultActions.member.1.Type") != "forward" {
			return "", notFound("TargetGroupNotFound", "a forward action to an existing target group is required")
		}
		if aerr := compatible(f.get("Protocol"), s.tgs[tgArn]); aerr != nil {
			return "", aerr
		}
		if f.get("Protocol") == "TLS" && f.get("Certificates.member.1.CertificateArn") == "" {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: "A certificate must be specified for TLS listeners"}
		}
		l := &NLBListener{ARN: s.arn("listener/net", strconv.Itoa(port)), LB: lbArn, Protocol: f.get("Protocol"), Port: port, TargetGroup: tgArn, Cert: f.get("Certificates.member.1.CertificateArn")}
		if l.Protocol == "TLS" {
			l.SSLPolicy = "ELBSecurityPolicy-2016-08"
			if v := f.get("SslPolicy"); v != "" {
				if !slices.Contains(securityPolicies, v) {
					return "", &apiError{Status: 400, Code: "SSLPolicyNotFound", Message: "SSL policy '" + v + "' not found"}
				}
				l.SSLPolicy = v
			}
		}
		s.listeners[l.ARN] = l
		var x w
		x.open("Listeners")
		writeListener(&x, l)
		x.close("Listeners")
		return x.b.String(), nil
	case "DescribeListeners":
		lbArn := f.get("LoadBalancerArn")
		if _, ok := s.nlbs[lbArn]; !ok {
			return "", notFound("LoadBalancerNotFound", "One or more load balancers not found")
		}
		var ls []*NLBListener
		for _, l := range s.listeners {
			if l.LB == lbArn {
				ls = append(ls, l)
			}
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].Port < ls[j].Port })
		ls, next, aerr := elbPage(f, ls, s.pageLimit)
		if aerr != nil {
			return "", aerr
		}
		var x w
		x.open("Listeners")
		for _, l := range ls {
			writeListener(&x, l)
		}
		x.close("Listeners")
		if next != "" {
			x.leaf("NextMarker", next)
		}
		return x.b.String(), nil
	case "ModifyListener":
		l, ok := s.listeners[f.get("ListenerArn")]
		if !ok {
			return "", notFound("ListenerNotFound", "One or more listeners not found")
		}
		// Checked whole before anything changes, as ELBv2 does.
		c := *l
		if v := f.get("Protocol"); v != "" && v != c.Protocol {
			c.Protocol = v
			if v != "TLS" {
				c.Cert, c.SSLPolicy = "", "" // TCP and UDP listeners hold neither
			}
		}
		if v := f.get("Certificates.member.1.CertificateArn"); v != "" {
			c.Cert = v
		}
		if v := f.get("SslPolicy"); v != "" {
			if !slices.Contains(securityPolicies, v) {
				return "", &apiError{Status: 400, Code: "SSLPolicyNotFound", Message: "SSL policy '" + v + "' not found"}
			}
			c.SSLPolicy = v
		}
		if c.Protocol == "TLS" {
			if c.Cert == "" {
				return "", &apiError{Status: 400, Code: "ValidationError", Message: "A certificate must be specified for TLS listeners"}
			}
			if c.SSLPolicy == "" {
				c.SSLPolicy = "ELBSecurityPolicy-2016-08"
			}
		}
		if v := f.get("DefaultActions.member.1.TargetGroupArn"); v != "" {
			if _, ok := s.tgs[v]; !ok || f.get("DefaultActions.member.1.Type") != "forward" {
				return "", notFound("TargetGroupNotFound", "a forward action to an existing target group is required")
			}
			c.TargetGroup = v
		}
		if aerr := compatible(c.Protocol, s.tgs[c.TargetGroup]); aerr != nil {
			return "", aerr
		}
		*l = c
		var x w
		x.open("Listeners")
		writeListener(&x, l)
		x.close("Listeners")
		return x.b.String(), nil
	case "DeleteListener":
		if _, ok := s.listeners[f.get("ListenerArn")]; !ok {
			return "", notFound("ListenerNotFound", "One or more listeners not found")
		}
		delete(s.listeners, f.get("ListenerArn"))
		return "", nil
	case "AddTags", "DescribeTags":
		if n := len(f.list("ResourceArns.member")); n > maxTagNames {
			return "", &apiError{Status: 400, Code: "ValidationError", Message: fmt.Sprintf("ResourceArns: %d members, at most 20", n)}
		}
		var x w
		x.open("TagDescriptions")
		for _, a := range f.list("ResourceArns.member") {
			var tags map[string]string
			if lb, ok := s.nlbs[a]; ok {
				tags = lb.Tags
			} else if tg, ok := s.tgs[a]; ok {
				tags = tg.Tags
			} else {
				return "", notFound("LoadBalancerNotFound", "resource %s not found", a)
			}
			if action == "AddTags" {
				for k, v := range f.tags("Tags.member") {
					tags[k] = v
				}
				continue
			}
			x.open("member")
			x.leaf("ResourceArn", a)
			x.open("Tags")
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
		if action == "AddTags" {
			return "", nil
		}
		return x.b.String(), nil
	}
	return "", &apiError{Status: 400, Code: "InvalidAction", Message: "the fake does not implement " + action}
}

func (s *Server) sortedNLBs() []*NLB {
	var out []*NLB
	for _, lb := range s.nlbs {
		out = append(out, lb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Server) sortedTGs() []*TargetGroup {
	var out []*TargetGroup
	for _, tg := range s.tgs {
		out = append(out, tg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Server) writeNLB(x *w, lb *NLB) {
	x.open("member")
	x.leaf("LoadBalancerArn", lb.ARN)
	x.leaf("LoadBalancerName", lb.Name)
	x.leaf("DNSName", lb.DNSName)
	x.leaf("Scheme", lb.Scheme)
	x.leaf("Type", "network")
	x.leaf("VpcId", VPC)
	if len(lb.SecurityGroups) > 0 {
		x.open("SecurityGroups")
		for _, g := range lb.SecurityGroups {
			x.leaf("member", g)
		}
		x.close("SecurityGroups")
	}
	x.open("State")
	if time.Now().Before(lb.readyAt) {
		x.leaf("Code", "provisioning")
	} else {
		x.leaf("Code", "active")
	}
	x.close("State")
	x.open("AvailabilityZones")
	for _, sn := range lb.Subnets {
		x.open("member")
		x.leaf("SubnetId", sn)
		x.leaf("ZoneName", s.subnets[sn].Zone)
		if a := lb.Addresses[sn]; a != "" {
			x.open("LoadBalancerAddresses")
			x.open("member")
			if strings.HasPrefix(a, "eipalloc-") {
				x.leaf("AllocationId", a)
			} else {
				x.leaf("PrivateIPv4Address", a)
			}
			x.close("member")
			x.close("LoadBalancerAddresses")
		}
		x.close("member")
	}
	x.close("AvailabilityZones")
	x.close("member")
}

func (s *Server) writeTG(x *w, tg *TargetGroup) {
	x.open("member")
	x.leaf("TargetGroupArn", tg.ARN)
	x.leaf("TargetGroupName", tg.Name)
	x.leaf("Protocol", tg.Protocol)
	x.leafInt("Port", tg.Port)
	x.leaf("VpcId", tg.VPC)
	x.leaf("TargetType", "instance")
	x.leaf("HealthCheckProtocol", tg.HealthProtocol)
	x.leaf("HealthCheckPort", tg.HealthPort)
	if tg.HealthPath != "" {
		x.leaf("HealthCheckPath", tg.HealthPath)
	}
	th := strings.Split(tg.HealthThresholds, "/")
	for i, k := range []string{"HealthyThresholdCount", "UnhealthyThresholdCount", "HealthCheckIntervalSeconds", "HealthCheckTimeoutSeconds"} {
		if i < len(th) && th[i] != "" {
			x.leaf(k, th[i])
		}
	}
	x.open("LoadBalancerArns")
	var lbs []string
	for _, l := range s.listeners {
		if l.TargetGroup == tg.ARN && !slices.Contains(lbs, l.LB) {
			lbs = append(lbs, l.LB)
		}
	}
	sort.Strings(lbs)
	for _, lb := range lbs {
		x.leaf("member", lb)
	}
	x.close("LoadBalancerArns")
	x.close("member")
}

// compatible is ELBv2's rule for an NLB listener's target group: a TLS listener forwards to
// TCP or TLS, a TCP listener to TCP or TCP_UDP, a UDP one to UDP or TCP_UDP.
func compatible(listener string, tg *TargetGroup) *apiError {
	ok := map[string][]string{"TLS": {"TCP", "TLS"}, "TCP": {"TCP", "TCP_UDP"}, "UDP": {"UDP", "TCP_UDP"}, "TCP_UDP": {"TCP_UDP"}}
	if tg == nil || !slices.Contains(ok[listener], tg.Protocol) {
		proto := ""
		if tg != nil {
			proto = tg.Protocol
		}
		return &apiError{Status: 400, Code: "IncompatibleProtocols", Message: "a " + listener + " listener cannot forward to a " + proto + " target group"}
	}
	return nil
}

func writeListener(x *w, l *NLBListener) {
	x.open("member")
	x.leaf("ListenerArn", l.ARN)
	x.leaf("LoadBalancerArn", l.LB)
	x.leafInt("Port", l.Port)
	x.leaf("Protocol", l.Protocol)
	x.open("DefaultActions")
	x.open("member")
	x.leaf("Type", "forward")
	x.leaf("TargetGroupArn", l.TargetGroup)
	x.close("member")
	x.close("DefaultActions")
	if l.SSLPolicy != "" {
		x.leaf("SslPolicy", l.SSLPolicy)
	}
	if l.Cert != "" {
		x.open("Certificates")
		x.open("member")
		x.leaf("CertificateArn", l.Cert)
		x.close("member")
		x.close("Certificates")
	}
	x.close("member")
}

func writeAttributes(m map[string]string) string {
	var x w
	x.open("Attributes")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		x.open("member")
		x.leaf("Key", k)
		x.leaf("Value", m[k])
		x.close("member")
	}
	x.close("Attributes")
	return x.b.String()
}

// SetTargetsInitial makes targets registered from now on stay "initial" (their first health
// checks not passed yet) while on; turning it off makes every target healthy.
func (s *Server) SetTargetsInitial(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newTargetsInitial = on
	if s.initial == nil || !on {
		s.initial = map[string]bool{}
	}
}
