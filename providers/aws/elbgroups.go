package aws

// A classic ELB's security groups as observe → plan → apply: its own group (made, taken over
// from upstream, its rules from the source ranges on the listener ports) or the groups the
// Service or the config names, the extra groups, and the node groups' rules that let the ELB's
// first group reach the Service's nodePorts. observeELBGroups reads and checks, planELBGroups
// decides (sgrules), applyELBGroups writes.

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// elbGroups is what was read of an ELB's groups, and what is planned for them.
type elbGroups struct {
	own *types.SecurityGroup // the ELB's own group as read, when it is to have one (nil: none yet)
	// seen is own as the plan compares it (Upstream: upstream's, to be taken over).
	seen  *sgrules.Group
	nodes []sgrules.Group // the node groups, as read
	// unused is the ELB's own group once the ELB uses named groups instead (deleted, with the
	// rules from it).
	unused *types.SecurityGroup
	plan   *sgrules.Own // the own group's writes (nil: the ELB has none)
	// changes are the node groups' writes, known once the ELB's first group is (planned with
	// the own group's ID, or after the group is made).
	changes []sgrules.Change
	planned bool
}

// writes says whether the groups' plan writes anything; a group still to be made does.
func (g *elbGroups) writes() bool {
	return g.plan.Writes() || len(g.changes) > 0 || g.unused != nil
}

// observeELBGroups reads the ELB's groups: the named ones are checked (each must be the
// Service's by its tags, or allowed by the operator), its own group is found (one found by
// its name alone must be the Service's, or upstream's for this Service's ELB), and the node
// groups are read. It sets want.groupIDs when they are known before any write.
func (l *loadBalancers) observeELBGroups(ctx context.Context, svc *v1.Service, name string, want *desired) (*elbGroups, error) {
	id := l.identity(svc)
	g := &elbGroups{}
	if !want.OwnGroup {
		if want.named {
			if err := l.checkNamedGroups(ctx, id, annotations.SecurityGroup, want.SecurityGroups); err != nil {
				return nil, err
			}
		}
		want.groupIDs = want.SecurityGroups
		g.unused = l.unusedOwnGroup(ctx, svc, name, want.vpc)
	} else if err := l.observeOwnELBGroup(ctx, svc, name, want, g); err != nil {
		return nil, err
	}
	if len(want.ExtraGroups) > 0 {
		if err := l.checkNamedGroups(ctx, id, annotations.ExtraGroups, want.ExtraGroups); err != nil {
			return nil, err
		}
	}
	if l.c.cfg.Global.DisableSecurityGroupIngress || len(want.NodeGroups) == 0 {
		return g, nil
	}
	gs, err := l.groupsByID(ctx, want.NodeGroups)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		g.nodes = append(g.nodes, sgrules.Group{ID: aws.ToString(gs[i].GroupId), Rules: rulesOf(&gs[i])})
	}
	return g, nil
}

// observeOwnELBGroup finds the ELB's own group and decides whether it is the Service's.
func (l *loadBalancers) observeOwnELBGroup(ctx context.Context, svc *v1.Service, name string, want *desired, g *elbGroups) error {
	own, err := l.ownGroup(ctx, name, want.vpc)
	if err != nil || own == nil {
		return err
	}
	id := l.identity(svc)
	g.own = own
	g.seen = &sgrules.Group{ID: aws.ToString(own.GroupId), Rules: rulesOf(own)}
	if err := ownership.Check(id, "security group", groupName(name), groupTags(own)); err != nil {
		// Found by its name alone: a group someone else made with this name is not ours;
		// upstream's group for this Service's ELB becomes ours in place.
		if !upstream.IsELBGroup(id, svc, name, own) {
			return err
		}
		g.seen.Upstream = true
	}
	want.groupIDs = []string{g.seen.ID}
	return nil
}

// planELBGroups plans the own group's writes and, once the ELB's groups are known, the node
// groups'. The groups the ELB is to have are set in want.groupIDs.
func planELBGroups(id ownership.Identity, want *desired, g *elbGroups) {
	if want.OwnGroup {
		var rs []rule
		for _, ls := range want.Listeners {
			port := elbplan.ListenerOf(ls).LoadBalancerPort
			for _, cidr := range want.SourceRanges {
				rs = append(rs, rule{Proto: "tcp", From: port, To: port, CIDR: cidr, Desc: ruleDescription(id, "client")})
			}
		}
		g.plan = sgrules.PlanOwn(g.seen, rs)
		if g.plan.Create {
			return // the node rules name the group: planned once it is made
		}
	}
	want.groupIDs = elbGroupIDs(want)
	g.planNodeRules(id, want)
}

// elbGroupIDs are the groups the ELB is to have: its own or the named ones, then the extra
// groups (attached besides them, as upstream; the node rules stay from the first).
func elbGroupIDs(want *desired) []string {
	ids := slices.Clone(want.groupIDs)
	for _, g := range want.ExtraGroups {
		if !slices.Contains(ids, g) {
			ids = append(ids, g)
		}
	}
	return ids
}

// planNodeRules plans the node groups' rules from the ELB's first group on its nodePorts. The
// ELB's rules in node groups are from a group (the Service's NLB rules, from CIDRs, are not
// these); rules from the ELB's own group are its own, described or not (earlier versions
// admitted all traffic from it without a description).
func (g *elbGroups) planNodeRules(id ownership.Identity, want *desired) {
	g.planned = true
	if len(want.groupIDs) == 0 || len(g.nodes) == 0 {
		return
	}
	from, ownID := want.groupIDs[0], ""
	if g.plan != nil {
		ownID = from
	}
	var need []rule
	for _, p := range want.nodePorts() {
		need = append(need, rule{Proto: "tcp", From: p, To: p, Group: from, Desc: ruleDescription(id, "elb")})
	}
	wanted := map[string][]rule{}
	for _, n := range g.nodes {
		wanted[n.ID] = need
	}
	g.changes = sgrules.PlanGroups(g.nodes, wanted, func(r rule) bool {
		return r.Group != "" && (ownership.DescribedBy(id, r.Desc) || r.Group == ownID)
	})
}

// applyELBGroups writes the groups' plan: the own group made or taken over and its rules,
// then the node groups' rules. It returns what it repaired.
func (l *loadBalancers) applyELBGroups(ctx context.Context, svc *v1.Service, name string, want *desired, g *elbGroups) ([]string, error) {
	var repairs []string
	if g.plan != nil {
		gid, err := l.applyOwnELBGroup(ctx, svc, name, want, g.plan)
		if err != nil {
			return nil, err
		}
		changed, err := l.writeRules(ctx, gid, g.plan.Add, g.plan.Del)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, changed...)
		if !g.planned {
			want.groupIDs = []string{gid}
			want.groupIDs = elbGroupIDs(want)
			g.planNodeRules(l.identity(svc), want)
		}
	}
	for _, c := range g.changes {
		changed, err := l.writeRules(ctx, c.Group, c.Add, c.Del)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, changed...)
	}
	return repairs, nil
}

// applyOwnELBGroup makes the ELB's own group, or adds ccm's tags to upstream's; it returns its ID.
func (l *loadBalancers) applyOwnELBGroup(ctx context.Context, svc *v1.Service, name string, want *desired, p *sgrules.Own) (string, error) {
	switch {
	case p.Create:
		return l.createGroup(ctx, groupName(name), want.vpc, fmt.Sprintf("Kubernetes ELB %s for %s/%s", name, svc.Namespace, svc.Name), l.identity(svc).Tags())
	case p.TakeOver:
		if err := l.takeOverGroup(ctx, svc, p.ID, "ELB"); err != nil {
			return "", err
		}
	}
	return p.ID, nil
}
