package fakeaws

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Instance is an EC2 instance of the fake.
type Instance struct {
	ID, Type, Zone, State string // State: pending, running, stopping, stopped, shutting-down, terminated
	PrivateDNS, PublicDNS string
	PublicIP              string
	ENIs                  []ENI // in device-index order as given; the fake answers them shuffled
	Groups                []string
	Tags                  map[string]string
	SourceDestCheck       bool
	visibleAt             time.Time
}

// ENI is one network interface of an instance.
type ENI struct {
	Device     int
	PrivateIPs []string
	IPv6       []string
}

// Subnet is an EC2 subnet.
type Subnet struct{ ID, VPC, Zone, CIDR string }

// SecurityGroup is an EC2 security group with its ingress rules.
type SecurityGroup struct {
	ID, Name, Description, VPC string
	Rules                      []Rule
}

// Rule is one ingress permission: a protocol and port range from a CIDR (IPv4 or IPv6) or a
// group, with its description. As in EC2, a rule is identified by everything but its
// description: a second rule that differs only in the description is a duplicate.
type Rule struct {
	Protocol       string
	From, To       int
	CIDR, SourceSG string
	Description    string
}

func (r Rule) String() string {
	s := fmt.Sprintf("%s %d-%d from %s%s", r.Protocol, r.From, r.To, r.CIDR, r.SourceSG)
	if r.Description != "" {
		s += fmt.Sprintf(" %q", r.Description)
	}
	return s
}

// key is the rule without its description: what EC2 compares for duplicates and revokes.
func (r Rule) key() Rule {
	r.Description = ""
	return r
}

// isIPv6 tells an Ipv6Ranges CIDR from an IpRanges one.
func isIPv6(cidr string) bool { return strings.Contains(cidr, ":") }

// AddSubnet adds a subnet with tags and returns its ID.
func (s *Server) AddSubnet(vpc, zone, cidr string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID("subnet")
	s.subnets[id] = &Subnet{ID: id, VPC: vpc, Zone: zone, CIDR: cidr}
	s.tags[id] = copyTags(tags)
	return id
}

// AddInstance adds in (ID generated when empty; state running unless set) and returns its ID.
// With Faults.Visibility set, the instance is invisible to Describe calls for that long.
func (s *Server) AddInstance(in Instance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.ID == "" {
		in.ID = s.newID("i")
	}
	if in.State == "" {
		in.State = "running"
	}
	if len(in.Groups) == 0 {
		in.Groups = []string{NodeGroup}
	}
	in.Tags = copyTags(in.Tags)
	in.SourceDestCheck = true
	in.visibleAt = time.Now().Add(s.faults.Visibility)
	s.instances[in.ID] = &in
	return in.ID
}

// SetInstanceState changes an instance's state (e.g. "stopped", "terminated").
func (s *Server) SetInstanceState(id, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.instances[id]; ok {
		in.State = state
	}
}

// RemoveInstance forgets an instance, as EC2 does some time after termination.
func (s *Server) RemoveInstance(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instances, id)
}

// Group returns a copy of a security group.
func (s *Server) Group(id string) (SecurityGroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return SecurityGroup{}, false
	}
	c := *g
	c.Rules = slices.Clone(g.Rules)
	return c, true
}

func copyTags(t map[string]string) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		out[k] = v
	}
	return out
}

func (s *Server) ec2(action string, f form) (string, *apiError) {
	if out, err, ok := s.routeOps(action, f); ok {
		return out, err
	}
	if out, err, ok := s.topologyOps(action, f); ok {
		return out, err
	}
	switch action {
	case "DescribeInstances":
		return s.describeInstances(f)
	case "DescribeSubnets":
		return s.describeSubnets(f)
	case "DescribeVpcs":
		return s.describeVpcs(f)
	case "DescribeSecurityGroups":
		return s.describeSecurityGroups(f)
	case "CreateSecurityGroup":
		return s.createSecurityGroup(f)
	case "DeleteSecurityGroup":
		return s.deleteSecurityGroup(f)
	case "AuthorizeSecurityGroupIngress":
		return s.changeIngress(f, true)
	case "RevokeSecurityGroupIngress":
		return s.changeIngress(f, false)
	case "UpdateSecurityGroupRuleDescriptionsIngress":
		return s.redescribeIngress(f)
	case "CreateTags":
		return s.createTags(f)
	case "DescribeAddresses":
		return s.describeAddresses(f)
	}
	return "", &apiError{Status: 400, Code: "InvalidAction", Message: "the fake does not implement " + action}
}

// match applies EC2 filters: every filter must match one of its values.
func match(filters map[string][]string, attr func(name string) []string) bool {
	for name, want := range filters {
		got := attr(name)
		if !slices.ContainsFunc(got, func(g string) bool { return slices.Contains(want, g) }) {
			return false
		}
	}
	return true
}

func tagAttr(tags map[string]string, name string) ([]string, bool) {
	if k, ok := strings.CutPrefix(name, "tag:"); ok {
		if v, ok := tags[k]; ok {
			return []string{v}, true
		}
		return nil, true
	}
	if name == "tag-key" {
		var ks []string
		for k := range tags {
			ks = append(ks, k)
		}
		return ks, true
	}
	return nil, false
}

func (s *Server) describeInstances(f form) (string, *apiError) {
	ids := f.list("InstanceId")
	filters := f.filters()
	now := time.Now()
	var found []*Instance
	for _, id := range ids {
		in, ok := s.instances[id]
		if !ok || now.Before(in.visibleAt) || !s.inRegion(in) {
			return "", notFound("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	for _, in := range s.instances {
		if now.Before(in.visibleAt) || !s.inRegion(in) || (len(ids) > 0 && !slices.Contains(ids, in.ID)) {
			continue
		}
		ok := match(filters, func(name string) []string {
			if v, isTag := tagAttr(in.Tags, name); isTag {
				return v
			}
			switch name {
			case "instance-id":
				return []string{in.ID}
			case "private-dns-name":
				return []string{in.PrivateDNS}
			case "instance-state-name":
				return []string{in.State}
			case "vpc-id":
				return []string{VPC}
			case "private-ip-address", "network-interface.addresses.private-ip-address":
				var ips []string
				for _, e := range in.ENIs {
					ips = append(ips, e.PrivateIPs...)
				}
				if name == "private-ip-address" && len(ips) > 0 {
					return ips[:1]
				}
				return ips
			}
			return nil
		})
		if ok {
			found = append(found, in)
		}
	}
	if bad := unknownFilter(filters, "instance-id", "private-dns-name", "instance-state-name", "vpc-id", "private-ip-address", "network-interface.addresses.private-ip-address"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	found, next, aerr := ec2Page(f, found, 1000, len(ids) > 0, s.pageLimit)
	if aerr != nil {
		return "", aerr
	}
	var x w
	x.open("reservationSet")
	for _, in := range found {
		x.open("item")
		x.leaf("reservationId", "r-"+in.ID)
		x.open("instancesSet")
		x.open("item")
		writeInstance(&x, in)
		x.close("item")
		x.close("instancesSet")
		x.close("item")
	}
	x.close("reservationSet")
	writeNextToken(&x, next)
	return x.b.String(), nil
}

func writeNextToken(x *w, next string) {
	if next != "" {
		x.leaf("nextToken", next)
	}
}

func unknownFilter(filters map[string][]string, known ...string) string {
	for name := range filters {
		if !slices.Contains(known, name) && !strings.HasPrefix(name, "tag:") && name != "tag-key" {
			return name
		}
	}
	return ""
}

func writeInstance(x *w, in *Instance) {
	x.leaf("instanceId", in.ID)
	x.leaf("instanceType", in.Type)
	x.open("instanceState")
	x.leafInt("code", map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}[in.State])
	x.leaf("name", in.State)
	x.close("instanceState")
	x.open("placement")
	x.leaf("availabilityZone", in.Zone)
	x.close("placement")
	x.leaf("privateDnsName", in.PrivateDNS)
	x.leaf("dnsName", in.PublicDNS)
	if in.State != "terminated" {
		if len(in.ENIs) > 0 && len(in.ENIs[0].PrivateIPs) > 0 {
			x.leaf("privateIpAddress", in.ENIs[0].PrivateIPs[0])
		}
		if in.PublicIP != "" {
			x.leaf("ipAddress", in.PublicIP)
		}
	}
	x.leaf("vpcId", VPC)
	x.leaf("sourceDestCheck", strconv.FormatBool(in.SourceDestCheck))
	x.open("groupSet")
	for _, g := range in.Groups {
		x.open("item")
		x.leaf("groupId", g)
		x.close("item")
	}
	x.close("groupSet")
	x.open("networkInterfaceSet")
	// EC2 does not promise device order in its answer: the reverse order keeps clients honest.
	for i := len(in.ENIs) - 1; i >= 0 && in.State != "terminated"; i-- {
		e := in.ENIs[i]
		x.open("item")
		x.leaf("networkInterfaceId", fmt.Sprintf("eni-%s-%d", in.ID, e.Device))
		x.open("attachment")
		x.leafInt("deviceIndex", e.Device)
		x.close("attachment")
		x.open("privateIpAddressesSet")
		for j, ip := range e.PrivateIPs {
			x.open("item")
			x.leaf("privateIpAddress", ip)
			x.leaf("primary", strconv.FormatBool(j == 0))
			x.close("item")
		}
		x.close("privateIpAddressesSet")
		x.open("ipv6AddressesSet")
		for _, ip := range e.IPv6 {
			x.open("item")
			x.leaf("ipv6Address", ip)
			x.close("item")
		}
		x.close("ipv6AddressesSet")
		x.close("item")
	}
	x.close("networkInterfaceSet")
	writeTags(x, in.Tags)
}

func writeTags(x *w, tags map[string]string) {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	x.open("tagSet")
	for _, k := range keys {
		x.open("item")
		x.leaf("key", k)
		x.leaf("value", tags[k])
		x.close("item")
	}
	x.close("tagSet")
}

func (s *Server) describeSubnets(f form) (string, *apiError) {
	ids := f.list("SubnetId")
	filters := f.filters()
	if bad := unknownFilter(filters, "vpc-id", "subnet-id", "availability-zone"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	for _, id := range ids {
		if _, ok := s.subnets[id]; !ok || !s.homeRegion() {
			return "", notFound("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	var found []*Subnet
	for _, sn := range s.subnets {
		if !s.homeRegion() || (len(ids) > 0 && !slices.Contains(ids, sn.ID)) {
			continue
		}
		if match(filters, func(name string) []string {
			if v, isTag := tagAttr(s.tags[sn.ID], name); isTag {
				return v
			}
			return map[string][]string{"vpc-id": {sn.VPC}, "subnet-id": {sn.ID}, "availability-zone": {sn.Zone}}[name]
		}) {
			found = append(found, sn)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	found, next, aerr := ec2Page(f, found, 1000, false, s.pageLimit)
	if aerr != nil {
		return "", aerr
	}
	var x w
	x.open("subnetSet")
	for _, sn := range found {
		x.open("item")
		x.leaf("subnetId", sn.ID)
		x.leaf("vpcId", sn.VPC)
		x.leaf("availabilityZone", sn.Zone)
		x.leaf("cidrBlock", sn.CIDR)
		writeTags(&x, s.tags[sn.ID])
		x.close("item")
	}
	x.close("subnetSet")
	writeNextToken(&x, next)
	return x.b.String(), nil
}

// describeVpcs answers the fake's one VPC, in the home region only.
func (s *Server) describeVpcs(f form) (string, *apiError) {
	ids := f.list("VpcId")
	filters := f.filters()
	if bad := unknownFilter(filters, "vpc-id", "state"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	for _, id := range ids {
		if id != VPC || !s.homeRegion() {
			return "", notFound("InvalidVpcID.NotFound", "The vpc ID '%s' does not exist", id)
		}
	}
	var found []string
	if s.homeRegion() && match(filters, func(name string) []string {
		if v, isTag := tagAttr(s.tags[VPC], name); isTag {
			return v
		}
		return map[string][]string{"vpc-id": {VPC}, "state": {"available"}}[name]
	}) {
		found = append(found, VPC)
	}
	found, next, aerr := ec2Page(f, found, 1000, false, s.pageLimit)
	if aerr != nil {
		return "", aerr
	}
	var x w
	x.open("vpcSet")
	for _, id := range found {
		x.open("item")
		x.leaf("vpcId", id)
		x.leaf("state", "available")
		x.leaf("cidrBlock", "10.0.0.0/16")
		writeTags(&x, s.tags[id])
		x.close("item")
	}
	x.close("vpcSet")
	writeNextToken(&x, next)
	return x.b.String(), nil
}

func (s *Server) describeSecurityGroups(f form) (string, *apiError) {
	ids := f.list("GroupId")
	filters := f.filters()
	if bad := unknownFilter(filters, "vpc-id", "group-name", "group-id", "ip-permission.group-id"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	for _, id := range ids {
		if _, ok := s.groups[id]; !ok || !s.homeRegion() {
			return "", notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	var found []*SecurityGroup
	for _, g := range s.groups {
		if !s.homeRegion() || (len(ids) > 0 && !slices.Contains(ids, g.ID)) {
			continue
		}
		if match(filters, func(name string) []string {
			if v, isTag := tagAttr(s.tags[g.ID], name); isTag {
				return v
			}
			if name == "ip-permission.group-id" {
				var srcs []string
				for _, r := range g.Rules {
					srcs = append(srcs, r.SourceSG)
				}
				return srcs
			}
			return map[string][]string{"vpc-id": {g.VPC}, "group-name": {g.Name}, "group-id": {g.ID}}[name]
		}) {
			found = append(found, g)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	found, next, aerr := ec2Page(f, found, 1000, false, s.pageLimit)
	if aerr != nil {
		return "", aerr
	}
	var x w
	x.open("securityGroupInfo")
	for _, g := range found {
		x.open("item")
		x.leaf("groupId", g.ID)
		x.leaf("groupName", g.Name)
		x.leaf("groupDescription", g.Description)
		x.leaf("vpcId", g.VPC)
		x.open("ipPermissions")
		for _, r := range g.Rules {
			x.open("item")
			x.leaf("ipProtocol", r.Protocol)
			if r.Protocol != "-1" {
				x.leafInt("fromPort", r.From)
				x.leafInt("toPort", r.To)
			}
			x.open("groups")
			if r.SourceSG != "" {
				x.open("item")
				x.leaf("groupId", r.SourceSG)
				if r.Description != "" {
					x.leaf("description", r.Description)
				}
				x.close("item")
			}
			x.close("groups")
			for _, fam := range []struct {
				list, leaf string
				v6         bool
			}{{"ipRanges", "cidrIp", false}, {"ipv6Ranges", "cidrIpv6", true}} {
				x.open(fam.list)
				if r.CIDR != "" && isIPv6(r.CIDR) == fam.v6 {
					x.open("item")
					x.leaf(fam.leaf, r.CIDR)
					if r.Description != "" {
						x.leaf("description", r.Description)
					}
					x.close("item")
				}
				x.close(fam.list)
			}
			x.close("item")
		}
		x.close("ipPermissions")
		writeTags(&x, s.tags[g.ID])
		x.close("item")
	}
	x.close("securityGroupInfo")
	writeNextToken(&x, next)
	return x.b.String(), nil
}

func (s *Server) createSecurityGroup(f form) (string, *apiError) {
	name, vpc := f.get("GroupName"), f.get("VpcId")
	if name == "" || f.get("GroupDescription") == "" {
		return "", &apiError{Status: 400, Code: "MissingParameter", Message: "GroupName and GroupDescription are required"}
	}
	for _, g := range s.groups {
		if g.Name == name && g.VPC == vpc {
			return "", &apiError{Status: 400, Code: "InvalidGroup.Duplicate", Message: fmt.Sprintf("The security group '%s' already exists for VPC '%s'", name, vpc)}
		}
	}
	id := s.newID("sg")
	s.groups[id] = &SecurityGroup{ID: id, Name: name, Description: f.get("GroupDescription"), VPC: vpc}
	s.tags[id] = map[string]string{}
	for _, p := range f.structs("TagSpecification") {
		for k, v := range f.tags(p + "Tag") {
			s.tags[id][k] = v
		}
	}
	return "<return>true</return><groupId>" + id + "</groupId>", nil
}

func (s *Server) deleteSecurityGroup(f form) (string, *apiError) {
	id := f.get("GroupId")
	if _, ok := s.groups[id]; !ok {
		return "", notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	}
	for _, lb := range s.elbs {
		if slices.Contains(lb.SecurityGroups, id) {
			return "", &apiError{Status: 400, Code: "DependencyViolation", Message: "resource " + id + " has a dependent object"}
		}
	}
	for _, lb := range s.nlbs {
		if slices.Contains(lb.SecurityGroups, id) {
			return "", &apiError{Status: 400, Code: "DependencyViolation", Message: "resource " + id + " has a dependent object"}
		}
	}
	for _, g := range s.groups {
		for _, r := range g.Rules {
			if r.SourceSG == id {
				return "", &apiError{Status: 400, Code: "DependencyViolation", Message: "resource " + id + " has a dependent object"}
			}
		}
	}
	delete(s.groups, id)
	delete(s.tags, id)
	return "<return>true</return>", nil
}

func (s *Server) changeIngress(f form, add bool) (string, *apiError) {
	g, rules, aerr := s.ingressOf(f)
	if aerr != nil {
		return "", aerr
	}
	// EC2 applies a request whole or not at all, and matches rules without their descriptions.
	next := slices.Clone(g.Rules)
	for _, r := range rules {
		if len(r.Description) > 255 || strings.ContainsFunc(r.Description, func(c rune) bool { return !descChar(c) }) {
			return "", invalid("Invalid rule description: %q", r.Description)
		}
		i := slices.IndexFunc(next, func(o Rule) bool { return o.key() == r.key() })
		switch {
		case add && i >= 0:
			return "", &apiError{Status: 400, Code: "InvalidPermission.Duplicate", Message: "the specified rule " + r.key().String() + " already exists"}
		case add:
			next = append(next, r)
		case i < 0:
			return "", notFound("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
		default:
			next = slices.Delete(next, i, i+1)
		}
	}
	if add && s.ruleLimit > 0 {
		if v4, v6 := ruleCounts(next); v4 > s.ruleLimit || v6 > s.ruleLimit {
			return "", &apiError{Status: 400, Code: "RulesPerSecurityGroupLimitExceeded", Message: "The maximum number of rules per security group has been reached."}
		}
	}
	g.Rules = next
	return "<return>true</return>", nil
}

// DefaultRulesPerGroup is AWS's default quota of inbound rules per security group.
const DefaultRulesPerGroup = 60

// SetRulesPerGroupLimit sets the inbound rules a group may hold (AWS's quota:
// DefaultRulesPerGroup in a new account, which the fake starts with): an
// AuthorizeSecurityGroupIngress that would take a group past it fails whole with
// RulesPerSecurityGroupLimitExceeded. 0 is no limit, as an account with a raised quota: the
// bench and the takeover figures put the rules of hundreds of load balancers into one group.
func (s *Server) SetRulesPerGroupLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ruleLimit = n
}

// ruleCounts counts rules against the quota as AWS does: separately for IPv4 and IPv6 sources,
// a rule from a security group counting in both.
func ruleCounts(rules []Rule) (v4, v6 int) {
	for _, r := range rules {
		switch {
		case r.SourceSG != "":
			v4++
			v6++
		case isIPv6(r.CIDR):
			v6++
		default:
			v4++
		}
	}
	return v4, v6
}

// redescribeIngress is UpdateSecurityGroupRuleDescriptionsIngress: each named rule (matched
// without its description) gets the request's description; the rule itself, and the traffic
// it admits, stay. A rule the group does not hold fails the whole request.
func (s *Server) redescribeIngress(f form) (string, *apiError) {
	g, rules, aerr := s.ingressOf(f)
	if aerr != nil {
		return "", aerr
	}
	next := slices.Clone(g.Rules)
	for _, r := range rules {
		if len(r.Description) > 255 || strings.ContainsFunc(r.Description, func(c rune) bool { return !descChar(c) }) {
			return "", invalid("Invalid rule description: %q", r.Description)
		}
		i := slices.IndexFunc(next, func(o Rule) bool { return o.key() == r.key() })
		if i < 0 {
			return "", notFound("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
		}
		next[i].Description = r.Description
	}
	g.Rules = next
	return "<return>true</return>", nil
}

// ingressOf reads the group and the rules of an ingress request (IpPermissions).
func (s *Server) ingressOf(f form) (*SecurityGroup, []Rule, *apiError) {
	g, ok := s.groups[f.get("GroupId")]
	if !ok {
		return nil, nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", f.get("GroupId"))
	}
	var rules []Rule
	for _, p := range f.structs("IpPermissions") {
		proto := f.get(p + "IpProtocol")
		from, _ := strconv.Atoi(f.get(p + "FromPort"))
		to, _ := strconv.Atoi(f.get(p + "ToPort"))
		if proto == "-1" {
			from, to = 0, 0
		}
		for _, r := range f.structs(p + "IpRanges") {
			cidr := f.get(r + "CidrIp")
			if isIPv6(cidr) {
				return nil, nil, invalid("CIDR block %s is malformed", cidr)
			}
			rules = append(rules, Rule{Protocol: proto, From: from, To: to, CIDR: cidr, Description: f.get(r + "Description")})
		}
		for _, r := range f.structs(p + "Ipv6Ranges") {
			cidr := f.get(r + "CidrIpv6")
			if !isIPv6(cidr) {
				return nil, nil, invalid("CIDR block %s is malformed", cidr)
			}
			rules = append(rules, Rule{Protocol: proto, From: from, To: to, CIDR: cidr, Description: f.get(r + "Description")})
		}
		for _, r := range f.structs(p + "Groups") {
			src := f.get(r + "GroupId")
			if _, ok := s.groups[src]; !ok {
				return nil, nil, notFound("InvalidGroup.NotFound", "The security group '%s' does not exist", src)
			}
			rules = append(rules, Rule{Protocol: proto, From: from, To: to, SourceSG: src, Description: f.get(r + "Description")})
		}
	}
	return g, rules, nil
}

// descChar is a character EC2 accepts in a rule description: a-zA-Z0-9. _-:/()#,@[]+=&;{}!$*
func descChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(". _-:/()#,@[]+=&;{}!$*", c)
}

func (s *Server) createTags(f form) (string, *apiError) {
	tags := f.tags("Tag")
	for _, id := range f.list("ResourceId") {
		if _, ok := s.tags[id]; !ok {
			if in, ok := s.instances[id]; ok {
				for k, v := range tags {
					in.Tags[k] = v
				}
				continue
			}
			return "", notFound("InvalidID", "The ID '%s' is not valid", id)
		}
		for k, v := range tags {
			s.tags[id][k] = v
		}
	}
	return "<return>true</return>", nil
}
