// Package subnets chooses a load balancer's subnets: the ones the Service's annotation names (by
// ID or Name tag), else those tagged for the load balancer's role and this cluster, one per zone.
// Query and Choose are pure; Cache reads EC2 through them and keeps each answer for a while, so a
// resync does not cost a DescribeSubnets per Service.
package subnets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

// Want is what a Service asks for and the config fixes.
type Want struct {
	Internal  bool     // an internal load balancer: the internal-elb role
	Named     []string // the subnets annotation: subnet IDs or Name tags
	VPC       string   // [Global] VPC; "" for any
	ClusterID string
}

// Choice is the subnets chosen.
type Choice struct {
	IDs      []string // sorted
	VPC      string
	Untagged []string          // of IDs, those not tagged for this cluster (owned or shared)
	CIDRs    map[string]string // IPv4 CIDR by subnet ID
}

// Role is the tag key that marks the subnets for a public or an internal load balancer.
func Role(internal bool) string {
	if internal {
		return "kubernetes.io/role/internal-elb"
	}
	return "kubernetes.io/role/elb"
}

// Query is the DescribeSubnets request for w: the named subnets (by ID or by Name tag, not
// both), else those tagged with the role; within the VPC when the config names one.
func Query(w Want) (*ec2.DescribeSubnetsInput, error) {
	var filters []types.Filter
	if w.VPC != "" {
		filters = append(filters, awsread.Filter("vpc-id", w.VPC))
	}
	in := &ec2.DescribeSubnetsInput{}
	var names []string
	for _, s := range w.Named {
		if strings.HasPrefix(s, "subnet-") {
			in.SubnetIds = append(in.SubnetIds, s)
		} else {
			names = append(names, s)
		}
	}
	switch {
	case len(w.Named) == 0:
		filters = append(filters, awsread.Filter("tag-key", Role(w.Internal)))
	case len(names) > 0 && len(in.SubnetIds) > 0:
		return nil, annotations.Error(annotations.Subnets, "use either subnet IDs or Name tags, not both")
	case len(names) > 0:
		filters = append(filters, awsread.Filter("tag:Name", names...))
	}
	in.Filters = filters
	return in, nil
}

// Choose picks from the subnets EC2 answered: every one found for the names (at least as many as
// were named; those not tagged for the cluster are listed in Untagged for the caller's reach
// check), else, among those tagged for the cluster, the lowest ID of each zone, so the choice is
// stable.
func Choose(w Want, found []types.Subnet) (Choice, error) {
	c := Choice{CIDRs: map[string]string{}}
	byZone := map[string]string{}
	for _, s := range found {
		id := aws.ToString(s.SubnetId)
		if v := awsread.TagValue(s.Tags, ownership.ClusterTagPrefix+w.ClusterID); v != ownership.Owned && v != ownership.Shared {
			if len(w.Named) == 0 {
				continue
			}
			c.Untagged = append(c.Untagged, id)
		}
		c.CIDRs[id] = aws.ToString(s.CidrBlock)
		if z := aws.ToString(s.AvailabilityZone); byZone[z] == "" || id < byZone[z] {
			byZone[z] = id
		}
		c.VPC = aws.ToString(s.VpcId)
	}
	if len(w.Named) > 0 {
		for _, s := range found {
			c.IDs = append(c.IDs, aws.ToString(s.SubnetId))
		}
		if len(c.IDs) < len(w.Named) {
			return Choice{}, annotations.Error(annotations.Subnets, "found %d of the %d subnets named", len(c.IDs), len(w.Named))
		}
	} else {
		for _, id := range byZone {
			c.IDs = append(c.IDs, id)
		}
	}
	if len(c.IDs) == 0 {
		return Choice{}, fmt.Errorf("aws: no subnet is tagged %s and %s%s (owned or shared); tag the subnets or set the annotation %s%s",
			Role(w.Internal), ownership.ClusterTagPrefix, w.ClusterID, annotations.Prefix, annotations.Subnets)
	}
	slices.Sort(c.IDs)
	return c, nil
}

// Cache keeps each Want's Choice for TTL: subnets change rarely.
type Cache struct {
	TTL time.Duration
	mu  sync.Mutex
	m   map[string]entry
}

type entry struct {
	c  Choice
	at time.Time
}

// Get is w's Choice, read from EC2 when none younger than TTL is kept.
func (c *Cache) Get(ctx context.Context, api awsread.SubnetsAPI, w Want) (Choice, error) {
	key := fmt.Sprintf("%v|%v|%s|%s", w.Internal, w.Named, w.VPC, w.ClusterID)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.TTL {
		return e.c, nil
	}
	in, err := Query(w)
	if err != nil {
		return Choice{}, err
	}
	out, err := awsread.DescribeSubnetsAll(ctx, api, in)
	if err != nil {
		if awsread.IsCode(err, "InvalidSubnetID.NotFound", "InvalidSubnetID.Malformed") {
			return Choice{}, annotations.Error(annotations.Subnets, "names a subnet that does not exist")
		}
		return Choice{}, fmt.Errorf("aws: DescribeSubnets: %w", err)
	}
	ch, err := Choose(w, out.Subnets)
	if err != nil {
		return Choice{}, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]entry{}
	}
	c.m[key] = entry{c: ch, at: time.Now()}
	c.mu.Unlock()
	return ch, nil
}
