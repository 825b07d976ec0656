package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

// subnetTTL: subnets change rarely; caching them keeps a resync from costing a read per Service.
const subnetTTL = time.Minute

type subnetCache struct {
	mu sync.Mutex
	m  map[string]subnetAnswer
}

type subnetAnswer struct {
	ids      []string
	vpc      string
	untagged []string          // of ids, those not tagged for this cluster (owned or shared)
	cidrs    map[string]string // IPv4 CIDR by subnet ID
	at       time.Time
}

// subnets returns the ELB's subnets: the annotation's (IDs or Name tags), else those tagged
// kubernetes.io/role/elb (internal-elb for internal ELBs) and kubernetes.io/cluster/<id>, one
// per zone (the lowest ID, so the choice is stable). A subnet named by the annotation is used
// only if it is tagged for this cluster (owned or shared) or the operator allowed it by the
// Service's namespace or its ID: a tenant must not put a load balancer into another cluster's
// (or anyone's) subnet.
func (l *loadBalancers) subnets(ctx context.Context, svc *v1.Service, opts *annotations.Options) ([]string, string, error) {
	a, err := l.subnetAnswer(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	ann, _ := annotations.Table.Lookup(annotations.Prefix + annotations.Subnets)
	for _, sn := range a.untagged {
		if err := reach.Named(l.identity(svc), l.c.cfg.allow(), ann, sn, reach.Evidence{}); err != nil {
			return nil, "", err
		}
	}
	return a.ids, a.vpc, nil
}

func (l *loadBalancers) subnetAnswer(ctx context.Context, opts *annotations.Options) (subnetAnswer, error) {
	key := fmt.Sprintf("%v|%v", opts.Internal, opts.Subnets)
	l.sn.mu.Lock()
	a, ok := l.sn.m[key]
	l.sn.mu.Unlock()
	if ok && time.Since(a.at) < subnetTTL {
		return a, nil
	}
	var filters []types.Filter
	if v := l.c.cfg.Global.VPC; v != "" {
		filters = append(filters, filter("vpc-id", v))
	}
	in := &ec2.DescribeSubnetsInput{}
	var names []string
	for _, s := range opts.Subnets {
		if strings.HasPrefix(s, "subnet-") {
			in.SubnetIds = append(in.SubnetIds, s)
		} else {
			names = append(names, s)
		}
	}
	role := "kubernetes.io/role/elb"
	if opts.Internal {
		role = "kubernetes.io/role/internal-elb"
	}
	switch {
	case len(opts.Subnets) == 0:
		filters = append(filters, filter("tag-key", role))
	case len(names) > 0 && len(in.SubnetIds) > 0:
		return subnetAnswer{}, annotations.Error(annotations.Subnets, "use either subnet IDs or Name tags, not both")
	case len(names) > 0:
		filters = append(filters, filter("tag:Name", names...))
	}
	in.Filters = filters
	out, err := awsread.DescribeSubnetsAll(ctx, l.c.api.ec2, in)
	if err != nil {
		if isCode(err, "InvalidSubnetID.NotFound", "InvalidSubnetID.Malformed") {
			return subnetAnswer{}, annotations.Error(annotations.Subnets, "names a subnet that does not exist")
		}
		return subnetAnswer{}, fmt.Errorf("aws: DescribeSubnets: %w", err)
	}
	byZone := map[string]string{}
	cidrs := map[string]string{}
	vpc := ""
	var untagged []string
	for _, s := range out.Subnets {
		v := tagValue(s.Tags, ownership.ClusterTagPrefix+l.c.cfg.ClusterID())
		if v != ownership.Owned && v != ownership.Shared {
			if len(opts.Subnets) == 0 {
				continue
			}
			untagged = append(untagged, aws.ToString(s.SubnetId))
		}
		z, id := aws.ToString(s.AvailabilityZone), aws.ToString(s.SubnetId)
		cidrs[id] = aws.ToString(s.CidrBlock)
		if cur, ok := byZone[z]; !ok || id < cur || len(opts.Subnets) > 0 {
			byZone[z] = id
		}
		vpc = aws.ToString(s.VpcId)
	}
	var ids []string
	for _, id := range byZone {
		ids = append(ids, id)
	}
	if len(opts.Subnets) > 0 {
		ids = ids[:0]
		for _, s := range out.Subnets {
			ids = append(ids, aws.ToString(s.SubnetId))
		}
		if len(ids) < len(opts.Subnets) {
			return subnetAnswer{}, annotations.Error(annotations.Subnets, "found %d of the %d subnets named", len(ids), len(opts.Subnets))
		}
	}
	if len(ids) == 0 {
		return subnetAnswer{}, fmt.Errorf("aws: no subnet is tagged %s and %s%s (owned or shared); tag the subnets or set the annotation %s%s",
			role, ownership.ClusterTagPrefix, l.c.cfg.ClusterID(), annotations.Prefix, annotations.Subnets)
	}
	sort.Strings(ids)
	a = subnetAnswer{ids: ids, vpc: vpc, untagged: untagged, cidrs: cidrs, at: time.Now()}
	l.sn.mu.Lock()
	l.sn.m[key] = a
	l.sn.mu.Unlock()
	return a, nil
}

func tagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}
