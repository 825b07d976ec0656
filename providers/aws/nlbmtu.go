package aws

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

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

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
