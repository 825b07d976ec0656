package aws

// Taking over, in place, the load balancers the upstream AWS CCM (kubernetes/cloud-provider-aws)
// left: same load balancer, same DNS name, nothing that serves deleted. Upstream names a
// Service's classic ELB or NLB "a" + its UID without dashes, cut to 32 characters
// (cloudprovider.DefaultLoadBalancerName), and tags it kubernetes.io/cluster/<id>=owned (and
// KubernetesCluster=<id> in legacy clusters) and kubernetes.io/service-name=<ns>/<name>. ccm
// keeps such a load balancer under that name for the Service's life: ELB names cannot change.
//
// What ccm writes at the takeover (its ownership tags on the load balancer, the ELB's group and
// the target groups; new node rules before upstream's are revoked) is compared first, so the
// next sync writes nothing.

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// findClassic returns svc's classic ELB: ccm's name, else upstream's when its tags prove it is
// this Service's (never one of another cluster or Service). Neither: ccm's name and nil. From
// the cluster's listing when it holds either (listed), else read.
func (l *loadBalancers) findClassic(ctx context.Context, svc *v1.Service) (name string, cur *elbtypes.LoadBalancerDescription, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstream.LBName(svc)
	id := l.identity(svc)
	if cur, tags := l.snap.Get(ctx, own, l.listELBs); cur != nil && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.snap.Get(ctx, up, l.listELBs); cur != nil && tags != nil && upstream.CheckLB(id, svc, up, tags) == nil {
			return up, cur, tags, true, nil
		}
	}
	// Not listed (new, just written, or the listing failed): read ccm's name, then upstream's.
	if cur, err = l.describe(ctx, own); err != nil || cur != nil {
		if cur != nil {
			tags, err = l.tags(ctx, own)
		}
		return own, cur, tags, false, err
	}
	if up != "" {
		if cur, err = l.describe(ctx, up); err != nil {
			return "", nil, nil, false, err
		}
		if cur != nil {
			if tags, err = l.tags(ctx, up); err != nil {
				return "", nil, nil, false, err
			}
			if upstream.CheckLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("A load balancer has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
}

// findNLB is findClassic for NLBs. A listed NLB that is not active yet is read again.
func (l *loadBalancers) findNLB(ctx context.Context, svc *v1.Service) (name string, cur *v2types.LoadBalancer, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstream.LBName(svc)
	id := l.identity(svc)
	active := func(lb *v2types.LoadBalancer) bool {
		return lb != nil && lb.State != nil && lb.State.Code == v2types.LoadBalancerStateEnumActive
	}
	if cur, tags := l.nsnap.Get(ctx, own, l.listNLBs); active(cur) && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.nsnap.Get(ctx, up, l.listNLBs); active(cur) && tags != nil && upstream.CheckLB(id, svc, up, tags) == nil {
			return up, cur, tags, true, nil
		}
	}
	if cur, err = l.describeNLB(ctx, own); err != nil || cur != nil {
		if cur != nil {
			tags, err = l.tagsV2(ctx, aws.ToString(cur.LoadBalancerArn))
		}
		return own, cur, tags, false, err
	}
	if up != "" {
		if cur, err = l.describeNLB(ctx, up); err != nil {
			return "", nil, nil, false, err
		}
		if cur != nil {
			if tags, err = l.tagsV2(ctx, aws.ToString(cur.LoadBalancerArn)); err != nil {
				return "", nil, nil, false, err
			}
			if upstream.CheckLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("An NLB has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
}

// adoptTargetGroup finds, among the target groups attached to svc's NLB, one upstream made
// for port p (its name shape, the port's target protocol and nodePort). With verify (the NLB has not
// been reconciled by ccm yet), its tags must prove it svc's (ccm's or upstream's), and untagged
// says ccm's ownership tags are to be added; after that, being attached to the Service's own
// NLB under upstream's name shape is what identifies it.
func (l *loadBalancers) adoptTargetGroup(ctx context.Context, svc *v1.Service, p nlbPort, attached []v2types.TargetGroup, verify bool) (_ *v2types.TargetGroup, untagged bool, _ error) {
	i := slices.IndexFunc(attached, func(tg v2types.TargetGroup) bool {
		return upstream.IsTGName(aws.ToString(tg.TargetGroupName)) && string(tg.Protocol) == p.backend() && aws.ToInt32(tg.Port) == p.NodePort
	})
	if i < 0 {
		return nil, false, nil
	}
	tg := attached[i]
	if !verify {
		return &tg, false, nil
	}
	id := l.identity(svc)
	tags, err := l.tagsV2(ctx, aws.ToString(tg.TargetGroupArn))
	if err != nil {
		return nil, false, err
	}
	if !ownership.Is(id, tags) && !upstream.Owned(id, tags) {
		return nil, false, nil // not provably this Service's: leave it, make ccm's own
	}
	return &tg, !tagsHold(tags, id.Tags()), nil
}
