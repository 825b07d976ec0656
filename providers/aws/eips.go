package aws

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

// checkEIPs decides the Elastic IPs an NLB is about to be made with (eip-allocations): each
// must be free and tagged for this Service (an operator tags it with the Service's ownership
// tags), or allowed by the operator by ID or namespace. One DescribeAddresses, before the
// NLB's first write: a tenant must not take another team's (or cluster's) address.
func (l *loadBalancers) checkEIPs(ctx context.Context, id ownership.Identity, eips []string) error {
	a, _ := annotations.Table.Lookup(annotations.Prefix + annotations.EIPAllocations)
	allow := l.c.cfg.allow()
	var ask []string
	for _, e := range eips {
		if !allow.Permits(id.Namespace, e) {
			ask = append(ask, e)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	out, err := l.c.api.ec2.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{AllocationIds: ask})
	if isCode(err, "InvalidAllocationID.NotFound") {
		return reach.Refuse(a.Name, "Elastic IP allocation(s) %s: not found in this account and region", strings.Join(ask, ", "))
	}
	if err != nil {
		return fmt.Errorf("aws: DescribeAddresses: %w", err)
	}
	byID := map[string]types.Address{}
	for _, addr := range out.Addresses {
		byID[aws.ToString(addr.AllocationId)] = addr
	}
	for _, e := range ask {
		addr, ok := byID[e]
		if !ok {
			return reach.Refuse(a.Name, "Elastic IP allocation %s: not found in this account and region", e)
		}
		ev := reach.Evidence{Tags: awsread.TagMap(addr.Tags, func(t types.Tag) (*string, *string) { return t.Key, t.Value })}
		if addr.AssociationId != nil {
			ev.InUse = "another network interface"
		}
		if err := reach.Named(id, allow, a, e, ev); err != nil {
			return err
		}
	}
	return nil
}
