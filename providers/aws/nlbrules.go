package aws

// Node security group rules for NLBs.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/nlbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// nodeGroupsTag lists (space-separated) the node security groups an NLB's rules were added to,
// so that a later reconcile or a delete (which gets no Nodes) knows where to look. It decides
// nothing: only rules carrying this Service's description are removed (and no Service
// annotation can set a ccm.k8s.io/ tag).
const nodeGroupsTag = "ccm.k8s.io/node-groups"

// removeNodeRulesNLB removes the Service's NLB rules from the node groups (read as they are
// now), and settles the shared MTU rules there. The rules it removes are those carrying this
// Service's description (ownership.Description): nodePorts are unique only within a cluster,
// and two clusters may share a node group. up is the name of the Service's NLB when it is the
// upstream CCM's, taken over ("" otherwise): the node rules upstream described with that name
// are then this Service's too.
func (l *loadBalancers) removeNodeRulesNLB(ctx context.Context, svc *v1.Service, up string, groups []string) error {
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	if len(groups) == 0 {
		return nil
	}
	gs, err := l.describeGroups(ctx, groups)
	if err != nil {
		return err
	}
	var read []sgrules.Group
	for i := range gs {
		read = append(read, sgrules.Group{ID: aws.ToString(gs[i].GroupId), Rules: rulesOf(&gs[i])})
	}
	changes, mtu := nlbplan.PlanNodeRules(nodeRuleOwners(l.identity(svc), up), read)
	_, err = l.applyNodeRules(ctx, svc, changes, mtu)
	return err
}

// nodeRuleOwners says which node rules are the Service's: an NLB's rules are from CIDRs (the
// Service's classic ELB rules, from its group, are not these, during a type change either) and
// carry its description, or are upstream's for its NLB up, taken over. No rule is wanted.
func nodeRuleOwners(id ownership.Identity, up string) nlbplan.NodeRules {
	upstream := func(r rule) bool { return upstream.NLBRule(up, r) }
	return nlbplan.NodeRules{Cluster: id.Cluster, Upstream: upstream,
		Mine: func(r rule) bool { return r.CIDR != "" && (ownership.DescribedBy(id, r.Desc) || upstream(r)) }}
}

// defaultRulesPerNamespace is NodeSecurityGroupRulesPerNamespace's default: two thirds of AWS's
// default quota of 60 rules per group, so one namespace cannot take every rule of a node group.
const defaultRulesPerNamespace = 40

// rulesPerNamespace is the bound on one namespace's NLB rules in a node group (0: none).
func (c *Config) rulesPerNamespace() int {
	switch n := c.Global.NodeSecurityGroupRulesPerNamespace; n {
	case 0:
		return defaultRulesPerNamespace
	case -1:
		return 0
	default:
		return n
	}
}

// checkNamespaceRules refuses, before the first rule is written, a Service that would add rules
// taking its namespace's rules in a node group past NodeSecurityGroupRulesPerNamespace: each
// Service's rules carry its description, so the namespace's share is counted from the group. A
// Service whose rules are all there already is not refused (a namespace over the limit after an
// upgrade keeps being served; it only cannot grow).
func (l *loadBalancers) checkNamespaceRules(id ownership.Identity, gs []types.SecurityGroup, groups []string, need []rule) error {
	limit := l.c.cfg.rulesPerNamespace()
	for i := range gs {
		if !slices.Contains(groups, aws.ToString(gs[i].GroupId)) {
			continue
		}
		have := rulesOf(&gs[i])
		adds := 0
		for _, r := range need {
			if !slices.ContainsFunc(have, func(h rule) bool { return h.Key() == r.Key() && ownership.DescribedBy(id, h.Desc) }) {
				adds++
			}
		}
		if adds == 0 {
			continue
		}
		var descs []string
		for _, r := range have {
			descs = append(descs, r.Desc)
		}
		if err := reach.NamespaceShare(id, descs, len(need), limit, "rules in node security group "+aws.ToString(gs[i].GroupId),
			"[Global] NodeSecurityGroupRulesPerNamespace"); err != nil {
			return err
		}
	}
	return nil
}

// nlbNodeRules are the node group rules want asks for: its source ranges on each nodePort, and
// the health check ports from the NLB's subnets where those do not admit everyone. Pure.
func nlbNodeRules(id ownership.Identity, want *nlbDesired) []rule {
	if want == nil {
		return nil
	}
	var need []rule
	for _, p := range want.Ports {
		proto := "tcp"
		if p.Protocol == "UDP" {
			proto = "udp"
		}
		for _, cidr := range want.SourceRanges {
			need = append(need, rule{Proto: proto, From: p.NodePort, To: p.NodePort, CIDR: cidr, Desc: ruleDescription(id, "client")})
		}
	}
	// The health checks come from the NLB's subnets: admitted where the rules above do not
	// admit everyone.
	if len(want.HealthCIDRs) > 0 {
		for _, port := range want.uncoveredHealthPorts() {
			for _, cidr := range want.HealthCIDRs {
				r := rule{Proto: "tcp", From: port, To: port, CIDR: cidr, Desc: ruleDescription(id, "health")}
				if !slices.ContainsFunc(need, func(n rule) bool { return n.Key() == r.Key() }) {
					need = append(need, r)
				}
			}
		}
	}
	return need
}

// checkNamespaceRulesBefore reads the node groups (from the cluster's listing) and checks the
// namespace's share before the NLB's first write.
func (l *loadBalancers) checkNamespaceRulesBefore(ctx context.Context, id ownership.Identity, want *nlbDesired) error {
	if len(want.NodeGroups) == 0 || l.c.cfg.Global.DisableSecurityGroupIngress || l.c.cfg.rulesPerNamespace() == 0 {
		return nil
	}
	gs, err := l.groupsByID(ctx, want.NodeGroups)
	if err != nil {
		return err
	}
	return l.checkNamespaceRules(id, gs, want.NodeGroups, nlbNodeRules(id, want))
}

// Path-MTU discovery for NLB clients. An NLB keeps the client's address, so a node's
// "fragmentation needed" answer (ICMP 3-4) goes straight to the client: the node group must admit
// it from the client ranges. EC2 holds one rule per protocol, ports and source in a group, so
// every NLB admitting a range needs the same rule; it is a shared rule of the cluster, described
// ccm:<cluster> - - nlb-mtu, present in a group while a client rule of this cluster's NLBs
// admits that range there, and revoked when none does. Every NLB reconcile and delete derives it
// again for the groups it looks at: which rules a group is to hold is sgrules.NLBMTURules, pure;
// this file writes them.
//
// The rules go in calls of their own after the client rules: AWS applies an Authorize whole or
// not at all, and a group at its rule quota or a rule another writer just added must not fail
// the client rules or the target registration (either is a Warning Event; the next sync looks
// again). Concurrent syncs share these rules, so one sync at a time decides a group's (a lock per
// group), from one read of the group as it is then. An MTU rule the upstream CCM made is taken
// as ccm's while a client rule admits its range. Upstream parity: docs/providers/aws.md.

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
		want, mine := sgrules.NLBMTURules(cluster, append(slices.Clone(have), wanted[gid]...))
		add, del := sgrules.Plan(have, want, mine)
		if len(add)+len(del) > 0 {
			l.gsnap.ForgetAll() // the listing no longer holds this group as it is
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
					changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was missing", r.Text(), gid))
				}
			}
		}
		if len(del) > 0 {
			if _, err := l.c.api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(gid), IpPermissions: permissions(del, false)}); err != nil && !isCode(err, "InvalidPermission.NotFound") {
				return nil, fmt.Errorf("aws: RevokeSecurityGroupIngress %s: %w", gid, err)
			}
			for _, r := range del {
				changes = append(changes, fmt.Sprintf("ingress rule %s of security group %s was not wanted", r.Text(), gid))
			}
		}
	}
	return changes, nil
}

// mtuRefusal is the Warning for MTU rules AWS refused in group gid with code.
func mtuRefusal(gid string, add []rule, code string) string {
	var cidrs []string
	for _, r := range add {
		cidrs = append(cidrs, r.CIDR)
	}
	why := "the group is at its quota of inbound rules: raise the quota (Service Quotas, \"Inbound or outbound rules per security group\") or free rules"
	if code == "InvalidPermission.Duplicate" {
		why = "another writer added one of them at the same time; the next sync looks again"
	}
	return fmt.Sprintf("node security group %s: AWS refused the path-MTU rules (ICMP 3-4 from %s) for NLB clients (%s): %s. The NLB serves; clients on a path with a smaller MTU may not learn it",
		gid, strings.Join(cidrs, ", "), code, why)
}
