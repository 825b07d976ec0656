package aws

// Node security group rules for NLBs.

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

// nodeGroupsTag lists (space-separated) the node security groups an NLB's rules were added to,
// so that a later reconcile or a delete (which gets no Nodes) knows where to look. It decides
// nothing: only rules carrying this Service's description are removed (and no Service
// annotation can set a ccm.k8s.io/ tag).
const nodeGroupsTag = "ccm.k8s.io/node-groups"

// nodeRulesNLB makes the node groups admit want's source ranges on its nodePorts (and health
// check nodePort), or, with want nil, removes the rules; it returns what it changed. The rules it manages are those
// carrying this Service's description (ownership.Description): nodePorts are unique only
// within a cluster, and two clusters may share a node group.
// up is the name of the Service's NLB when it is the upstream CCM's, taken over ("" otherwise):
// the node rules upstream described with that name are then this Service's too. In each group it
// also keeps the cluster's shared ICMP rules for path-MTU discovery (nlbmtu.go), after the client
// rules (adds and revokes) of every group, in calls of their own.
func (l *loadBalancers) nodeRulesNLB(ctx context.Context, svc *v1.Service, up string, groups []string, want *nlbDesired) ([]string, error) {
	groups = slices.Compact(slices.Sorted(slices.Values(groups)))
	if len(groups) == 0 || (want != nil && l.c.cfg.Global.DisableSecurityGroupIngress) {
		return nil, nil
	}
	id := l.identity(svc)
	var need []rule
	if want != nil {
		for _, p := range want.Ports {
			proto := "tcp"
			if p.Protocol == "UDP" {
				proto = "udp"
			}
			for _, cidr := range want.SourceRanges {
				need = append(need, rule{proto: proto, from: p.NodePort, to: p.NodePort, cidr: cidr, desc: ruleDescription(id, "client")})
			}
		}
		// The health checks come from the NLB's subnets: admitted where the rules above do not
		// admit everyone.
		if len(want.HealthCIDRs) > 0 {
			for _, port := range want.uncoveredHealthPorts() {
				for _, cidr := range want.HealthCIDRs {
					r := rule{proto: "tcp", from: port, to: port, cidr: cidr, desc: ruleDescription(id, "health")}
					if !slices.ContainsFunc(need, func(n rule) bool { return n.key() == r.key() }) {
						need = append(need, r)
					}
				}
			}
		}
	}
	read := l.groupsByID // a reconcile may use the listing
	if want == nil {
		read = l.describeGroups // a delete reads them as they are
	}
	gs, err := read(ctx, groups)
	if err != nil {
		return nil, err
	}
	var changes []string
	mtu := map[string][]rule{} // groups whose MTU rules are to be looked at: their wanted client rules
	for i := range gs {
		g := &gs[i]
		gid := aws.ToString(g.GroupId)
		var rs []rule
		if slices.Contains(want.nodeGroups(), gid) {
			rs = need
		}
		// An NLB's rules are from CIDRs; the Service's classic ELB rules (from its group) are not
		// these, during a type change either. The client and health rules the upstream CCM
		// added for this Service's NLB are taken over: those ccm wants get its description in
		// place, the others are revoked after ccm's own are added (syncRules adds first).
		upstream := func(r rule) bool { return upstreamNLBRule(up, r) }
		mine := func(r rule) bool { return r.cidr != "" && (ownership.DescribedBy(id, r.desc) || upstream(r)) }
		have, redescribed, err := l.redescribe(ctx, gid, rulesOf(g), rs, upstream)
		if err != nil {
			return nil, err
		}
		changes = append(changes, redescribed...)
		changed, err := l.syncRules(ctx, gid, have, rs, mine)
		if err != nil {
			return nil, err
		}
		changes = append(changes, changed...)
		// The shared MTU rules follow the client rules; they are settled below, after every
		// group's client rules, where this sync changed those or the MTU rules look out of step.
		if len(redescribed)+len(changed) > 0 || mtuOutOfStep(id.Cluster, afterSync(have, rs, mine), rs) {
			mtu[gid] = rs
		}
	}
	changed, err := l.syncMTURules(ctx, svc, id.Cluster, mtu)
	if err != nil {
		return nil, err
	}
	return append(changes, changed...), nil
}

func (d *nlbDesired) nodeGroups() []string {
	if d == nil {
		return nil
	}
	return d.NodeGroups
}
