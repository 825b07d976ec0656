package aws

// Node security group rules for NLBs.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
)

// nodeGroupsTag and nodePortsTag list (space-separated) the node security groups an NLB's
// rules were added to and the nodePorts they open, so that a later reconcile or a delete
// (which gets no Nodes, and maybe other ports) removes exactly those rules.
const (
	nodeGroupsTag = "ccm.k8s.io/node-groups"
	nodePortsTag  = "ccm.k8s.io/node-ports"
)

func (d *nlbDesired) nodePorts() []string {
	var out []string
	for _, p := range d.Ports {
		out = append(out, strconv.Itoa(int(p.NodePort)))
	}
	if d.HCNodePort != 0 {
		out = append(out, strconv.Itoa(int(d.HCNodePort)))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// nodeRulesNLB makes the node groups admit want's source ranges on its nodePorts (and health
// check nodePort), or, with want nil, removes the rules. The rules it manages are those on
// prevPorts (opened earlier) and on want's ports: nodePorts are unique in a cluster, so such a
// rule belongs to this Service.
func (l *loadBalancers) nodeRulesNLB(ctx context.Context, _ *v1.Service, groups, prevPorts []string, want *nlbDesired) error {
	if l.c.cfg.Global.DisableSecurityGroupIngress || len(groups) == 0 {
		return nil
	}
	ports := map[int32]bool{}
	for _, p := range prevPorts {
		if n, err := strconv.Atoi(p); err == nil {
			ports[int32(n)] = true
		}
	}
	var need []rule
	if want != nil {
		for _, p := range want.Ports {
			proto := "tcp"
			if p.Protocol == "UDP" {
				proto = "udp"
			}
			for _, cidr := range want.SourceRanges {
				need = append(need, rule{proto: proto, from: p.NodePort, to: p.NodePort, cidr: cidr})
			}
		}
		if want.HCNodePort != 0 {
			for _, cidr := range want.SourceRanges {
				need = append(need, rule{proto: "tcp", from: want.HCNodePort, to: want.HCNodePort, cidr: cidr})
			}
		}
		for _, r := range need {
			ports[r.from] = true
		}
	}
	out, err := l.c.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: groups})
	if err != nil {
		return fmt.Errorf("aws: DescribeSecurityGroups: %w", err)
	}
	for i := range out.SecurityGroups {
		g := &out.SecurityGroups[i]
		mine := func(r rule) bool { return r.cidr != "" && r.from == r.to && ports[r.from] }
		if err := l.syncRules(ctx, aws.ToString(g.GroupId), rulesOf(g), need, mine); err != nil {
			return err
		}
	}
	return nil
}
