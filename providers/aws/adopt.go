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
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

var (
	// upstreamLBNameRE: "a" and 31 hex digits (a UID without dashes, cut to 32).
	upstreamLBNameRE = regexp.MustCompile(`^a[0-9a-f]{31}$`)
	// upstreamTGNameRE: k8s-<namespace:8>-<name:8>-<sha1:10>, alphanumerics only in the parts.
	upstreamTGNameRE = regexp.MustCompile(`^k8s-[A-Za-z0-9]{0,8}-[A-Za-z0-9]{0,8}-[0-9a-f]{10}$`)
)

// upstreamName is the upstream CCM's name for svc's load balancer; "" without a UID (no
// Service of the API server lacks one, so nothing is looked up for it).
func upstreamName(svc *v1.Service) string {
	if svc.UID == "" {
		return ""
	}
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// isUpstreamLBName says whether a listing should keep a load balancer for the takeover.
func isUpstreamLBName(name string) bool { return upstreamLBNameRE.MatchString(name) }

// upstreamOwned says whether tags are those upstream put on an object it made for id: the
// Service tag naming id's Service, and this cluster's tag "owned" (or, in a legacy cluster, the
// KubernetesCluster tag naming it and no kubernetes.io/cluster/ tag at all). A UID tag, which
// upstream never writes, must be id's.
func upstreamOwned(id ownership.Identity, tags map[string]string) bool {
	if tags[ownership.ServiceTag] != id.Service() {
		return false
	}
	if uid := tags[ownership.ServiceUIDTag]; uid != "" && id.UID != "" && uid != id.UID {
		return false
	}
	if tags[ownership.ClusterTagPrefix+id.Cluster] == ownership.Owned {
		return true
	}
	for k := range tags {
		if strings.HasPrefix(k, ownership.ClusterTagPrefix) {
			return false
		}
	}
	return tags[legacyClusterTag] == id.Cluster
}

// checkLB checks that svc owns the load balancer name: by ccm's ownership tags, or, under
// upstream's name for svc, by upstream's.
func checkLB(id ownership.Identity, svc *v1.Service, name string, tags map[string]string) error {
	err := ownership.Check(id, "load balancer", name, tags)
	if err != nil && name == upstreamName(svc) && upstreamOwned(id, tags) {
		return nil
	}
	return err
}

// findClassic returns svc's classic ELB: ccm's name, else upstream's when its tags prove it is
// this Service's (never one of another cluster or Service). Neither: ccm's name and nil. From
// the cluster's listing when it holds either (listed), else read.
func (l *loadBalancers) findClassic(ctx context.Context, svc *v1.Service) (name string, cur *elbtypes.LoadBalancerDescription, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstreamName(svc)
	id := l.identity(svc)
	if cur, tags := l.snap.Get(ctx, own, l.listELBs); cur != nil && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.snap.Get(ctx, up, l.listELBs); cur != nil && tags != nil && checkLB(id, svc, up, tags) == nil {
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
			if checkLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("A load balancer has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
}

// findNLB is findClassic for NLBs. A listed NLB that is not active yet is read again.
func (l *loadBalancers) findNLB(ctx context.Context, svc *v1.Service) (name string, cur *v2types.LoadBalancer, tags map[string]string, listed bool, err error) {
	own, up := l.name(svc), upstreamName(svc)
	id := l.identity(svc)
	active := func(lb *v2types.LoadBalancer) bool {
		return lb != nil && lb.State != nil && lb.State.Code == v2types.LoadBalancerStateEnumActive
	}
	if cur, tags := l.nsnap.Get(ctx, own, l.listNLBs); active(cur) && tags != nil {
		return own, cur, tags, true, nil
	}
	if up != "" {
		if cur, tags := l.nsnap.Get(ctx, up, l.listNLBs); active(cur) && tags != nil && checkLB(id, svc, up, tags) == nil {
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
			if checkLB(id, svc, up, tags) == nil {
				return up, cur, tags, false, nil
			}
			klog.V(2).InfoS("An NLB has the upstream CCM's name for this Service but not its tags; not taking it over", "service", klog.KObj(svc), "name", up)
		}
	}
	return own, nil, nil, false, nil
}

// upstreamGroupDescription is the description upstream gives the ELB's own group.
func upstreamGroupDescription(lbName string, svc *v1.Service) string {
	return fmt.Sprintf("Security group for Kubernetes ELB %s (%s/%s)", lbName, svc.Namespace, svc.Name)
}

// isUpstreamGroup says whether g is the group upstream made for svc's ELB lbName: upstream's
// name for it (k8s-elb-<upstream ELB name>), its description naming the ELB and the Service,
// and this cluster's tag (upstream tags the group with the cluster only, never the Service).
func isUpstreamGroup(id ownership.Identity, svc *v1.Service, lbName string, g *types.SecurityGroup) bool {
	if lbName == "" || lbName != upstreamName(svc) || aws.ToString(g.GroupName) != groupName(lbName) ||
		aws.ToString(g.Description) != upstreamGroupDescription(lbName, svc) {
		return false
	}
	tags := groupTags(g)
	tags[ownership.ServiceTag] = id.Service() // the description named it
	return upstreamOwned(id, tags)
}

// adoptTargetGroup finds, among the target groups attached to svc's NLB, one upstream made
// for port p (its name shape, the port's target protocol and nodePort). With verify (the NLB has not
// been reconciled by ccm yet), its tags must prove it svc's (ccm's or upstream's), and untagged
// says ccm's ownership tags are to be added; after that, being attached to the Service's own
// NLB under upstream's name shape is what identifies it.
func (l *loadBalancers) adoptTargetGroup(ctx context.Context, svc *v1.Service, p nlbPort, attached []v2types.TargetGroup, verify bool) (_ *v2types.TargetGroup, untagged bool, _ error) {
	i := slices.IndexFunc(attached, func(tg v2types.TargetGroup) bool {
		return upstreamTGNameRE.MatchString(aws.ToString(tg.TargetGroupName)) && string(tg.Protocol) == p.backend() && aws.ToInt32(tg.Port) == p.NodePort
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
	if !ownership.Is(id, tags) && !upstreamOwned(id, tags) {
		return nil, false, nil // not provably this Service's: leave it, make ccm's own
	}
	return &tg, !tagsHold(tags, id.Tags()), nil
}

// ownsTG says whether a target group's tags make it svc's: ccm's tags, or upstream's on a group
// with upstream's name shape.
func ownsTG(id ownership.Identity, tg v2types.TargetGroup, tags map[string]string) bool {
	return ownership.Is(id, tags) || (upstreamTGNameRE.MatchString(aws.ToString(tg.TargetGroupName)) && upstreamOwned(id, tags))
}

// upstreamOnly is name when it is svc's upstream name (the load balancer found under it was
// proven svc's), else "".
func upstreamOnly(name string, svc *v1.Service) string {
	if name != "" && name == upstreamName(svc) {
		return name
	}
	return ""
}

// upstreamNLBRule says whether a node rule is one upstream added for the NLB up, which must be
// the Service's upstream NLB, proven its own by its tags (else ""): the rule's description names
// it (client or health rule). Upstream's ICMP rule for MTU discovery names no NLB (it is shared
// by all of them): sgrules.NLBMTURules keeps it while a client rule admits its range, then
// revokes it.
func upstreamNLBRule(up string, r rule) bool {
	return up != "" && r.CIDR != "" && (r.Desc == "kubernetes.io/rule/nlb/client="+up || r.Desc == "kubernetes.io/rule/nlb/health="+up)
}
