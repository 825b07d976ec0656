package aws

// Path-MTU discovery for NLB clients. An NLB keeps the client's address, so a node's
// "fragmentation needed" answer (ICMP 3-4) goes straight to the client: the node group must admit
// it from the client ranges. EC2 holds one rule per protocol, ports and source in a group, so
// every NLB admitting a range needs the same rule; it is a shared rule of the cluster, described
// ccm:<cluster> - - nlb-mtu, present in a group while a client rule of this cluster's NLBs
// admits that range there, and revoked when none does. Every NLB reconcile and delete derives it
// again for the groups it looks at.
//
// The rules go in calls of their own after the client rules: AWS applies an Authorize whole or
// not at all, and a group at its rule quota or a rule another writer just added must not fail
// the client rules or the target registration (either is a Warning Event; the next sync looks
// again). Concurrent syncs share these rules, so one sync at a time decides a group's (a lock per
// group), from one read of the group as it is then. An MTU rule the upstream CCM made is taken
// as ccm's while a client rule admits its range. Upstream parity: docs/providers/aws.md.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"

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
	// A range inside another wanted one needs no rule of its own: the halves ccm's client rules
	// were split into (claim) come with the range they halve.
	want = slices.DeleteFunc(want, func(w rule) bool {
		return slices.ContainsFunc(want, func(o rule) bool { return rangeHolds(o.cidr, w.cidr) })
	})
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

// rangeHolds says whether range outer holds range inner and is larger.
func rangeHolds(outer, inner string) bool {
	o, err1 := netip.ParsePrefix(outer)
	i, err2 := netip.ParsePrefix(inner)
	return err1 == nil && err2 == nil && o.Bits() < i.Bits() && o.Masked().Contains(i.Addr())
}

// mtuOutOfStep says whether a group holding rules (as this sync leaves its client rules, with
// the Service's wanted rules rs) lacks an MTU rule it should have or holds one that should go.
func mtuOutOfStep(cluster string, rules, rs []rule) bool {
	want, mine := nlbMTURules(cluster, append(slices.Clone(rules), rs...))
	add, del := planRules(rules, want, mine)
	return len(add)+len(del) > 0
}

// reasonNLBMTURuleNotAdded: AWS refused the shared path-MTU rules in a node group.
const reasonNLBMTURuleNotAdded = "LoadBalancerMTURuleNotAdded"

// syncMTURules settles the shared MTU rules of the groups in wanted (group ID -> the Service's
// wanted client rules there), each under its group's lock and from one read of the groups as
// they are now. A refusal for the rule quota or a duplicate is a Warning on svc, not an error.
func (l *loadBalancers) syncMTURules(ctx context.Context, svc *v1.Service, cluster string, wanted map[string][]rule) ([]string, error) {
	if len(wanted) == 0 {
		return nil, nil
	}
	ids := slices.Sorted(maps.Keys(wanted)) // locks taken in one order: no deadlock
	for _, gid := range ids {
		defer l.groupKeys.Lock(gid)()
	}
	gs, err := l.describeGroups(ctx, ids)
	if err != nil {
		return nil, err
	}
	var changes []string
	for i := range gs {
		gid := aws.ToString(gs[i].GroupId)
		have := rulesOf(&gs[i])
		want, mine := nlbMTURules(cluster, append(slices.Clone(have), wanted[gid]...))
		add, del := planRules(have, want, mine)
		if len(add)+len(del) > 0 {
			l.gsnap.forgetAll() // the listing no longer holds this group as it is
		}
		if len(add) > 0 {
			_, err := l.c.api.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: permissions(add, true)})
			var ae smithy.APIError
			switch {
			case isCode(err, "RulesPerSecurityGroupLimitExceeded", "InvalidPermission.Duplicate") && errors.As(err, &ae):
				l.c.events.Advise(svc, reasonNLBMTURuleNotAdded, mtuRefusal(gid, add, ae.ErrorCode()))
			case err != nil:
				return nil, fmt.Errorf("aws: AuthorizeSecurityGroupIngress %s: %w", gid, err)
			default:
				for _, r := range add {
					changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was missing", r.text(), gid))
				}
			}
		}
		if len(del) > 0 {
			if _, err := l.c.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: permissions(del, false)}); err != nil && !isCode(err, "InvalidPermission.NotFound") {
				return nil, fmt.Errorf("aws: RevokeSecurityGroupIngress %s: %w", gid, err)
			}
			for _, r := range del {
				changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was not wanted", r.text(), gid))
			}
		}
	}
	return changes, nil
}

// mtuRefusal is the Warning for MTU rules AWS refused in group gid with code.
func mtuRefusal(gid string, add []rule, code string) string {
	var cidrs []string
	for _, r := range add {
		cidrs = append(cidrs, r.cidr)
	}
	why := "the group is at its quota of inbound rules: raise the quota (Service Quotas, \"Inbound or outbound rules per security group\") or free rules"
	if code == "InvalidPermission.Duplicate" {
		why = "another writer added one of them at the same time; the next sync looks again"
	}
	return fmt.Sprintf("node security group %s: AWS refused the path-MTU rules (ICMP 3-4 from %s) for NLB clients (%s): %s. The NLB serves; clients on a path with a smaller MTU may not learn it",
		gid, strings.Join(cidrs, ", "), code, why)
}
