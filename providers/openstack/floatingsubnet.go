package openstack

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/ccm-project/ccm/common/reach"
)

// The floating IP subnet of a public load balancer, in upstream's vocabulary: an ID, or a name
// pattern and/or tags that pick among the floating network's subnets.
const (
	annFloatingSubnet     = annPrefix + "floating-subnet"
	annFloatingSubnetTags = annPrefix + "floating-subnet-tags"
)

// fipSubnetSel says which subnet of the floating network a new floating IP comes from. As
// upstream, an ID wins over a pattern and tags, which must then both match.
type fipSubnetSel struct {
	ID, Pattern, Tags string
	// from is where the selection was read: "" (the Service's annotations), "[LoadBalancer]"
	// or `[LoadBalancerClass "name"]`; messages name the keys there.
	from string
}

func (s fipSubnetSel) set() bool { return s.ID != "" || s.Pattern != "" || s.Tags != "" }

// matching: the subnet is picked by pattern and tags, not by ID.
func (s fipSubnetSel) matching() bool { return s.ID == "" && (s.Pattern != "" || s.Tags != "") }

// key names the setting k (floating-subnet, -id, -tags) where the selection was read.
func (s fipSubnetSel) key(k string) string {
	if s.from == "" {
		return "annotation " + annPrefix + k
	}
	return s.from + " " + k
}

// String names the selection's keys and values, for errors and Events.
func (s fipSubnetSel) String() string {
	if s.ID != "" {
		return fmt.Sprintf("%s %q", s.key("floating-subnet-id"), s.ID)
	}
	var parts []string
	if s.Pattern != "" {
		parts = append(parts, fmt.Sprintf("%s %q", s.key("floating-subnet"), s.Pattern))
	}
	if s.Tags != "" {
		parts = append(parts, fmt.Sprintf("%s %q", s.key("floating-subnet-tags"), s.Tags))
	}
	return strings.Join(parts, " and ")
}

// netChoice is where a Service's load balancer, its members and its floating IP go.
type netChoice struct {
	subnetID, networkID, memberSubnetID string
	// memberDefault: no member-subnet-id is set anywhere, so memberSubnetID is upstream's
	// default. Members an earlier ccm put on the VIP subnet (its default) satisfy it too.
	memberDefault bool
	// memberSubnetFrom names the setting memberSubnetID comes from, for errors.
	memberSubnetFrom string
	// svcSubnetID is the subnet-id by annotation, then class, then config (upstream's
	// lbSubnetID): an earlier ccm's VIP and member subnet, which members may stay on.
	svcSubnetID       string
	floatingNetworkID string
	floatingSubnet    fipSubnetSel
}

// chooseNetworks resolves the class (cls, named className; nil: none), the Service's
// annotations and [LoadBalancer] by upstream's precedence, which is not the same for all:
//   - the VIP's subnet-id and network-id: for a public Service the class's, then the
//     annotation's, then the config's (upstream's createOctaviaLoadBalancer sends the class's
//     ahead of its lbSubnetID/lbNetworkID); for an internal one the annotation's, then the
//     class's, then the config's (upstream's getSubnetID/getNetworkID: its class is looked
//     up for the VIP only in checkService's public branch);
//   - member-subnet-id: annotation, then class, then config (getMemberSubnetID); without one
//     anywhere, members go on the config's subnet-id, else on subnet-id by annotation, then
//     class (upstream's lbMemberSubnetID default, its lbSubnetID);
//   - floating-network-id: the class's wins over the annotation, which wins (even empty: then
//     the floating network is detected, as upstream) over the config;
//   - the floating subnet is one unit (an ID, or pattern and tags): the class's when it sets
//     any, else the annotations' when they set any, else the config's.
//
// Pure.
func chooseNetworks(cfg *LBConfig, cls *LBClass, className string, ann map[string]string, internal bool) netChoice {
	var c netChoice
	var clsSubnet, clsNetwork, clsMember, clsFloatingNet string
	var clsFIP fipSubnetSel
	if cls != nil {
		clsSubnet, clsNetwork, clsMember, clsFloatingNet = cls.SubnetID, cls.NetworkID, cls.MemberSubnetID, cls.FloatingNetworkID
		clsFIP = subnetSel(cls.FloatingSubnetID, cls.FloatingSubnet, cls.FloatingSubnetTags, fmt.Sprintf("[LoadBalancerClass %q]", className))
	}
	c.svcSubnetID = or(ann[annSubnetID], or(clsSubnet, cfg.SubnetID))
	c.subnetID = c.svcSubnetID
	c.networkID = or(ann[annNetworkID], or(clsNetwork, cfg.NetworkID))
	if !internal {
		c.subnetID, c.networkID = or(clsSubnet, c.subnetID), or(clsNetwork, c.networkID)
	}
	clsKey := func(k string) string { return fmt.Sprintf("[LoadBalancerClass %q] %s", className, k) }
	c.memberSubnetID, c.memberSubnetFrom = firstSet(
		ann[annMemberSubnetID], "annotation "+annMemberSubnetID,
		clsMember, clsKey("member-subnet-id"),
		cfg.MemberSubnetID, "[LoadBalancer] member-subnet-id")
	if c.memberSubnetID == "" {
		c.memberDefault = true
		c.memberSubnetID, c.memberSubnetFrom = firstSet(
			cfg.SubnetID, "[LoadBalancer] subnet-id",
			ann[annSubnetID], "annotation "+annSubnetID,
			clsSubnet, clsKey("subnet-id"))
	}
	c.floatingNetworkID = cfg.FloatingNetworkID
	if v, ok := ann[annFloatingNetworkID]; ok {
		c.floatingNetworkID = v
	}
	c.floatingNetworkID = or(clsFloatingNet, c.floatingNetworkID)
	c.floatingSubnet = clsFIP
	if !c.floatingSubnet.set() {
		c.floatingSubnet = subnetSel(ann[annFloatingSubnetID], ann[annFloatingSubnet], ann[annFloatingSubnetTags], "")
	}
	if !c.floatingSubnet.set() {
		c.floatingSubnet = subnetSel(cfg.FloatingSubnetID, cfg.FloatingSubnet, cfg.FloatingSubnetTags, "[LoadBalancer]")
	}
	if !c.floatingSubnet.set() {
		c.floatingSubnet = fipSubnetSel{} // none: any subnet, Neutron's choice
	}
	return c
}

// firstSet is the first non-empty value of the (value, name) pairs, with its name. Pure.
func firstSet(pairs ...string) (value, name string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			return pairs[i], pairs[i+1]
		}
	}
	return "", ""
}

// subnetSel: with an ID, the pattern and tags of the same source are not read (upstream).
func subnetSel(id, pattern, tags, from string) fipSubnetSel {
	if id != "" {
		return fipSubnetSel{ID: id, from: from}
	}
	return fipSubnetSel{Pattern: pattern, Tags: tags, from: from}
}

// subnetNameMatcher compiles a floating-subnet pattern as upstream reads it: a leading "!"
// negates; then a leading "~" makes the rest a regular expression, else it is a glob (*: any
// run of characters but "/", ?: one character, [...]: a class, {a,b}: alternatives; anything
// else stands for itself). A name matches when the pattern's leftmost match is the whole
// name, upstream's test (so "~a|ab" does not match "ab"). A pattern that does not compile is
// an error (upstream's glob would panic). Pure.
func subnetNameMatcher(pattern string) (func(name string) bool, error) {
	not := strings.HasPrefix(pattern, "!")
	p := strings.TrimPrefix(pattern, "!")
	var expr string
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		expr = rest
	} else {
		expr = globExpr(p)
	}
	if len(p) > reach.MaxPattern {
		return nil, fmt.Errorf("the pattern is %d bytes, more than the %d accepted", len(p), reach.MaxPattern)
	}
	// Bounded and compiled once per value (common/reach): a resync of every Service with the
	// same pattern compiles it once, and no pattern costs more than reach.MaxInst.
	re, err := patterns.Regexp(expr)
	if err != nil {
		return nil, fmt.Errorf("%.80q is not a valid pattern: %v", pattern, err)
	}
	return func(name string) bool { return (re.FindString(name) == name) != not }, nil
}

// globExpr is the anchored regular expression of glob g.
func globExpr(g string) string {
	var b strings.Builder
	b.WriteString("^")
	inGroup := false
	for i := 0; i < len(g); {
		r, w := utf8.DecodeRuneInString(g[i:])
		switch {
		case r == '*':
			b.WriteString("[^/]*")
		case r == '?':
			b.WriteString(".")
		case r == '[' || r == ']':
			b.WriteRune(r)
		case r == '{' && !inGroup:
			inGroup = true
			b.WriteString("(")
		case r == '}' && inGroup:
			inGroup = false
			b.WriteString(")")
		case r == ',' && inGroup:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
		i += w
	}
	b.WriteString("$")
	return b.String()
}

// subnetTagFilter is the Neutron subnet list filter upstream sends for floating-subnet-tags:
// tags separated by commas or spaces; by default tags-any (at least one present); a leading
// "&" asks for tags (all present); a leading "!" (before the "&") for not-tags (Neutron: not
// all present) or, with "&", not-tags-any (none present). Upstream's docs describe the
// negations the other way round, but these are the filters it sends, so what Neutron answers
// is what upstream gets. Pure.
func subnetTagFilter(v string) (param string, tags []string) {
	not := strings.HasPrefix(v, "!")
	v = strings.TrimPrefix(v, "!")
	all := strings.HasPrefix(v, "&")
	v = strings.TrimPrefix(v, "&")
	tags = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	switch {
	case not && all:
		return "not-tags-any", tags
	case not:
		return "not-tags", tags
	case all:
		return "tags", tags
	}
	return "tags-any", tags
}

// fipSubnetListOpts is the list of the floating network's subnets that sel's tags allow.
func fipSubnetListOpts(networkID string, sel fipSubnetSel) subnets.ListOpts {
	o := subnets.ListOpts{NetworkID: networkID}
	if sel.Tags == "" {
		return o
	}
	param, tags := subnetTagFilter(sel.Tags)
	v := strings.Join(tags, ",")
	switch param {
	case "tags":
		o.Tags = v
	case "tags-any":
		o.TagsAny = v
	case "not-tags":
		o.NotTags = v
	case "not-tags-any":
		o.NotTagsAny = v
	}
	return o
}

// pickFIPSubnets keeps, in their order, the subnets whose name matches sel's pattern (the
// tags are the list's filter). Pure.
func pickFIPSubnets(sel fipSubnetSel, subs []subnets.Subnet) ([]subnets.Subnet, error) {
	if sel.Pattern == "" {
		return subs, nil
	}
	match, err := subnetNameMatcher(sel.Pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", sel.key("floating-subnet"), err)
	}
	var out []subnets.Subnet
	for _, s := range subs {
		if match(s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}
