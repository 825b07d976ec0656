package aws

// Path-MTU discovery for NLB clients. An NLB preserves the client's address, so a node's
// "fragmentation needed" answer (ICMP type 3 code 4) goes to the client straight from the node:
// the node group must admit it from the client ranges. Upstream (aws_loadbalancer.go,
// updateInstanceSecurityGroupForNLBMTU) keeps, in each node group it writes NLB rules in, one
// ICMP 3-4 rule per IPv4 range of the group's NLB client rules (those described
// "kubernetes.io/rule/nlb/client=<lb>", read from IpRanges only: no ICMPv6 rule for IPv6
// ranges), described "kubernetes.io/rule/nlb/mtu", and re-derives them from the remaining
// client rules whenever an NLB's rules in the group change.
//
// EC2 holds one rule per protocol, ports and source in a group: every NLB admitting a range
// needs the same rule, so it cannot carry one Service's description. It is modelled as a shared
// rule of the cluster, described ccm:<cluster> - - nlb-mtu (no Service, so no Service's
// DescribedBy takes it): present in a group while a client rule of this cluster's NLBs (ccm's,
// or upstream's not yet taken over, which name no cluster) admits that range there, revoked
// when none does. Every NLB reconcile and delete re-derives it for the groups it looks at.
//
// Upstream's own MTU rule is adopted as it is: while a client rule (of any NLB, ccm's of any
// cluster or upstream's) admits its range it satisfies ccm's rule and is left alone (no write:
// a takeover writes nothing for it); when none does it is revoked, as upstream would.

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

// mtuDescription is the description of ccm's shared MTU rule in cluster.
func mtuDescription(cluster string) string {
	return ownership.ClusterDescription(cluster, roleNLBMTU)
}

// mtuRule is the ICMP "fragmentation needed" rule from cidr.
func mtuRule(cidr, desc string) rule {
	return rule{proto: "icmp", from: 3, to: 4, cidr: cidr, desc: desc}
}

func isMTURule(r rule) bool {
	return r.proto == "icmp" && r.from == 3 && r.to == 4 && r.cidr != "" && r.group == ""
}

// nlbClientRule says whether r admits an NLB's clients: ccm's client rule of an NLB (a CIDR
// rule in a node group, role client) of cluster, or of any cluster when cluster is "", or
// upstream's (its descriptions name no cluster).
func nlbClientRule(cluster string, r rule) bool {
	if r.cidr == "" || isMTURule(r) {
		return false
	}
	if strings.Contains(r.desc, upstreamNLBClientDescription) {
		return true
	}
	owner, role, ok := ownership.ParseDescription(r.desc)
	return ok && role == "client" && (cluster == "" || owner.Cluster == cluster)
}

// nlbMTURules is the MTU part of a node group's NLB rules, from rules: the group's rules as the
// client and health rules leave them (with the rules the Service wants, even where another's
// rule already admits them). want holds one rule per IPv4 range of this cluster's client rules;
// mine says which MTU rules may be revoked: ccm's of this cluster, and upstream's once no
// client rule of its range remains. Other rules (a user's ICMP rule, another cluster's) are
// never mine.
func nlbMTURules(cluster string, rules []rule) (want []rule, mine func(rule) bool) {
	desc := mtuDescription(cluster)
	for _, r := range rules {
		if nlbClientRule(cluster, r) && !isIPv6(r.cidr) && !slices.ContainsFunc(want, func(w rule) bool { return w.cidr == r.cidr }) {
			want = append(want, mtuRule(r.cidr, desc))
		}
	}
	slices.SortFunc(want, func(a, b rule) int { return strings.Compare(a.cidr, b.cidr) })
	admitted := func(cidr string) bool {
		return slices.ContainsFunc(rules, func(r rule) bool { return r.cidr == cidr && nlbClientRule("", r) })
	}
	mine = func(r rule) bool {
		if !isMTURule(r) {
			return false
		}
		return r.desc == desc || (r.desc == upstreamNLBMTUDescription && !admitted(r.cidr))
	}
	return want, mine
}

// afterSync is have as syncRules(have, want, mine) leaves it.
func afterSync(have, want []rule, mine func(rule) bool) []rule {
	add, del := planRules(have, want, mine)
	out := slices.DeleteFunc(slices.Clone(have), func(h rule) bool {
		return slices.ContainsFunc(del, func(d rule) bool { return d.key() == h.key() })
	})
	return append(out, add...)
}
