package aws

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// Orphan collection (common/servicecontroller): the cluster's classic ELBs and NLBs are the
// listings the reconciles already share (snapshot.go): per API one paged DescribeLoadBalancers
// (400 a page) and one DescribeTags per 20 load balancers with ccm's name prefix, kept when
// their tags carry this cluster's ownership mark. Ownership here is by the cluster ID
// (KubernetesClusterID, as every AWS object's tag), whatever cluster name the caller passes.
// Load balancers named the upstream way ("a" + UID) are not listed.

var _ servicecontroller.OwnedLister = (*Cloud)(nil)

// OwnedLoadBalancers implements servicecontroller.OwnedLister.
func (c *Cloud) OwnedLoadBalancers(ctx context.Context, _ string) ([]servicecontroller.OwnedLoadBalancer, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	l, cluster := c.lb, c.cfg.ClusterID()
	_, elbTagsByName, err := l.listELBs(ctx)
	if err != nil {
		return nil, publicError(fmt.Errorf("aws: listing classic ELBs: %w", err))
	}
	_, nlbTagsByName, err := l.listNLBs(ctx)
	if err != nil {
		return nil, publicError(fmt.Errorf("aws: listing NLBs: %w", err))
	}
	var out []servicecontroller.OwnedLoadBalancer
	for _, byName := range []map[string]map[string]string{elbTagsByName, nlbTagsByName} {
		for name, tags := range byName {
			if owner, ok := ownership.Owner(cluster, tags); ok {
				out = append(out, servicecontroller.OwnedLoadBalancer{Owner: owner, ID: name})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteOwnedLoadBalancer implements servicecontroller.OwnedLister: the load balancer is read
// again (Describe and DescribeTags of its API) and must still carry lb's owner; then the
// Service's delete path (EnsureLoadBalancerDeleted) removes it with its target groups, security
// group and rules, checking ownership on the way as always.
func (c *Cloud) DeleteOwnedLoadBalancer(ctx context.Context, _ string, lb servicecontroller.OwnedLoadBalancer) error {
	if err := c.init(); err != nil {
		return err
	}
	l := c.lb
	svc := lb.Service()
	id := l.identity(svc)
	if name := l.name(svc); lb.ID != name {
		return fmt.Errorf("load balancer %s is not named as ccm names %s's (%s): not deleting it", lb.ID, lb.Owner.Service(), name)
	}
	var tags map[string]string
	cur, err := l.describe(ctx, lb.ID)
	switch {
	case err != nil:
		return publicError(err)
	case cur != nil:
		if tags, err = l.tags(ctx, lb.ID); err != nil {
			return publicError(err)
		}
	default:
		nlb, err := l.describeNLB(ctx, lb.ID)
		if err != nil {
			return publicError(err)
		}
		if nlb == nil {
			return nil // gone already
		}
		if tags, err = l.tagsV2(ctx, aws.ToString(nlb.LoadBalancerArn)); err != nil {
			return publicError(err)
		}
		svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
	}
	if err := ownership.Check(id, "load balancer", lb.ID, tags); err != nil {
		return err
	}
	return l.EnsureLoadBalancerDeleted(ctx, "", svc)
}
