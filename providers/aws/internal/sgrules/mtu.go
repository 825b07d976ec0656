package sgrules

// Path-MTU discovery for NLB clients. An NLB keeps the client's address, so a node's
// "fragmentation needed" answer (ICMP 3-4) goes straight to the client: the node group must admit
// it from the client ranges. EC2 holds one rule per protocol, ports and source in a group, so
// every NLB admitting a range needs the same rule; it is a shared rule of the cluster, described
// ccm:<cluster> - - nlb-mtu, present in a group while a client rule of this cluster's NLBs
// admits that range there, and revoked when none does. This file decides those rules from a
// group's rules; package aws writes them (syncMTURules, with why they go in calls of their own).
// An MTU rule the upstream CCM made is taken as ccm's while a client rule admits its range.
// Upstream parity: docs/providers/aws.md.

import (
	"slices"
	"strings"

	"github.com/ccm-project/ccm/common/ownership"
)

const (
	// upstreamNLBClientDescription starts upstream's NLB client rule descriptions ("=<lb>").
	upstreamNLBClientDescription = "kubernetes.io/rule/nlb/client"
	// upstreamNLBMTUDescription describes upstream's ICMP 3-4 rule, shared by every NLB.
	upstreamNLBMTUDescription = "kubernetes.io/rule/nlb/mtu"
	// roleNLBMTU is the role in ccm's description of its shared MTU rule.
	roleNLBMTU = "nlb-mtu"
)

// MTUDescription is the description of ccm's shared MTU rule in cluster.
func MTUDescription(cluster string) string {
	return ownership.ClusterDescription(cluster, roleNLBMTU)
}

// mtuRule is the ICMP "fragmentation needed" rule from cidr.
func mtuRule(cidr, desc string) Rule {
	return Rule{Proto: "icmp", From: 3, To: 4, CIDR: cidr, Desc: desc}
}

// isMTURule says whether r is an ICMP "fragmentation needed" rule from a range, whoever made it.
func isMTURule(r Rule) bool {
	return r.Proto == "icmp" && r.From == 3 && r.To == 4 && r.CIDR != "" && r.Group == ""
}

// nlbClientRule says whether r admits an NLB's clients: ccm's client rule of an NLB (a CIDR
// rule in a node group, role client) of cluster, or of any cluster when cluster is "", or
// upstream's (its descriptions name no cluster).
func nlbClientRule(cluster string, r Rule) bool {
	if r.CIDR == "" || isMTURule(r) {
		return false
	}
	if strings.Contains(r.Desc, upstreamNLBClientDescription) {
		return true
	}
	owner, role, ok := ownership.ParseDescription(r.Desc)
	return ok && role == "client" && (cluster == "" || owner.Cluster == cluster)
}

// NLBMTURules is the MTU part of a node group's NLB rules, from rules: the group's rules as the
// client and health rules leave them (with the rules the Service wants, even where another's
// rule already admits them). want holds one rule per IPv4 range of this cluster's client rules;
// mine says which MTU rules may be revoked: ccm's of this cluster, and upstream's once no
// client rule of its range remains. Other rules (a user's ICMP rule, another cluster's) are
// never mine.
func NLBMTURules(cluster string, rules []Rule) (want []Rule, mine func(Rule) bool) {
	desc := MTUDescription(cluster)
	for _, r := range rules {
		if nlbClientRule(cluster, r) && !IsIPv6(r.CIDR) && !slices.ContainsFunc(want, func(w Rule) bool { return w.CIDR == r.CIDR }) {
			want = append(want, mtuRule(r.CIDR, desc))
		}
	}
	// A range inside another wanted one needs no rule of its own: the halves ccm's client rules
	// were split into (claim) come with the range they halve.
	want = slices.DeleteFunc(want, func(w Rule) bool {
		return slices.ContainsFunc(want, func(o Rule) bool { return rangeHolds(o.CIDR, w.CIDR) })
	})
	slices.SortFunc(want, func(a, b Rule) int { return strings.Compare(a.CIDR, b.CIDR) })
	admitted := func(cidr string) bool {
		return slices.ContainsFunc(rules, func(r Rule) bool { return r.CIDR == cidr && nlbClientRule("", r) })
	}
	mine = func(r Rule) bool {
		if !isMTURule(r) {
			return false
		}
		return r.Desc == desc || (r.Desc == upstreamNLBMTUDescription && !admitted(r.CIDR))
	}
	return want, mine
}

// MTUOutOfStep says whether a group holding rules (as this sync leaves its client rules, with
// the Service's wanted rules rs) lacks an MTU rule it should have or holds one that should go.
func MTUOutOfStep(cluster string, rules, rs []Rule) bool {
	want, mine := NLBMTURules(cluster, append(slices.Clone(rules), rs...))
	add, del := Plan(rules, want, mine)
	return len(add)+len(del) > 0
}
