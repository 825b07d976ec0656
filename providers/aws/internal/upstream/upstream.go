// Package upstream recognises, from names, descriptions and tags alone, the objects the upstream
// AWS CCM (kubernetes/cloud-provider-aws) made for a Service, so that ccm takes them over in place:
// the same load balancer, the same DNS name, nothing that serves deleted. Every answer is pure;
// the provider reads the objects and this package says whose they are.
//
// Upstream names a Service's classic ELB or NLB "a" + its UID without dashes, cut to 32
// characters, and tags it kubernetes.io/cluster/<id>=owned (KubernetesCluster=<id> in legacy
// clusters) and kubernetes.io/service-name=<ns>/<name>. ccm keeps such a load balancer under that
// name for the Service's life: ELB names cannot change.
package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

// LegacyClusterTag is the cluster tag of clusters made before kubernetes.io/cluster/<id>.
const LegacyClusterTag = "KubernetesCluster"

// NLBGroupDescription is the description upstream gives every NLB group of its Managed mode.
const NLBGroupDescription = "[k8s] Managed SecurityGroup for LoadBalancer"

var (
	// lbNameRE: "a" and 31 hex digits (a UID without dashes, cut to 32).
	lbNameRE = regexp.MustCompile(`^a[0-9a-f]{31}$`)
	// tgNameRE: k8s-<namespace:8>-<name:8>-<sha1:10>, alphanumerics only in the parts.
	tgNameRE   = regexp.MustCompile(`^k8s-[A-Za-z0-9]{0,8}-[A-Za-z0-9]{0,8}-[0-9a-f]{10}$`)
	nonAlnumRE = regexp.MustCompile(`[^A-Za-z0-9]`)
)

// LBName is upstream's name for svc's load balancer; "" without a UID (no Service of the API
// server lacks one, so nothing is looked up for it).
func LBName(svc *v1.Service) string {
	if svc.UID == "" {
		return ""
	}
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// IsLBName says whether a listing should keep a load balancer for the takeover.
func IsLBName(name string) bool { return lbNameRE.MatchString(name) }

// IsTGName says whether name has the shape of upstream's target group names.
func IsTGName(name string) bool { return tgNameRE.MatchString(name) }

// Only is name when it is svc's upstream name (the load balancer found under it was proven
// svc's), else "".
func Only(name string, svc *v1.Service) string {
	if name != "" && name == LBName(svc) {
		return name
	}
	return ""
}

// Owned says whether tags are those upstream put on an object it made for id: the Service tag
// naming id's Service, and this cluster's tag "owned" (or, in a legacy cluster, the
// KubernetesCluster tag naming it and no kubernetes.io/cluster/ tag at all). A UID tag, which
// upstream never writes, must be id's.
func Owned(id ownership.Identity, tags map[string]string) bool {
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
	return tags[LegacyClusterTag] == id.Cluster
}

// CheckLB checks that svc owns the load balancer name: by ccm's ownership tags, or, under
// upstream's name for svc, by upstream's.
func CheckLB(id ownership.Identity, svc *v1.Service, name string, tags map[string]string) error {
	err := ownership.Check(id, "load balancer", name, tags)
	if err != nil && name == LBName(svc) && Owned(id, tags) {
		return nil
	}
	return err
}

// OwnsTG says whether a target group's tags make it id's: ccm's tags, or upstream's on a group
// with upstream's name shape.
func OwnsTG(id ownership.Identity, tg v2types.TargetGroup, tags map[string]string) bool {
	return ownership.Is(id, tags) || (IsTGName(aws.ToString(tg.TargetGroupName)) && Owned(id, tags))
}

// ELBGroupName is the name of a classic ELB's own group, upstream's and ccm's alike.
func ELBGroupName(lbName string) string { return "k8s-elb-" + lbName }

// ELBGroupDescription is the description upstream gives the ELB's own group.
func ELBGroupDescription(lbName string, svc *v1.Service) string {
	return fmt.Sprintf("Security group for Kubernetes ELB %s (%s/%s)", lbName, svc.Namespace, svc.Name)
}

// IsELBGroup says whether g is the group upstream made for svc's ELB lbName: upstream's name for
// it, its description naming the ELB and the Service, and this cluster's tag (upstream tags the
// group with the cluster only, never the Service).
func IsELBGroup(id ownership.Identity, svc *v1.Service, lbName string, g *types.SecurityGroup) bool {
	if lbName == "" || lbName != LBName(svc) || aws.ToString(g.GroupName) != ELBGroupName(lbName) ||
		aws.ToString(g.Description) != ELBGroupDescription(lbName, svc) {
		return false
	}
	return serviceGroupOwned(id, g)
}

// NLBGroupName is the name upstream's Managed mode gives svc's NLB group: k8s-<namespace:8>-
// <name:8>-<10 hex digits of the sha256 of the cluster name, the Service's name, namespace and
// UID>, alphanumerics only in the parts. The UID in it ties the group to this Service, as no tag
// of upstream's does.
func NLBGroupName(clusterName string, svc *v1.Service) string {
	h := sha256.New()
	for _, s := range []string{clusterName, svc.Name, svc.Namespace, string(svc.UID)} {
		_, _ = h.Write([]byte(s))
	}
	cut := func(s string) string {
		s = nonAlnumRE.ReplaceAllString(s, "")
		return s[:min(len(s), 8)]
	}
	return fmt.Sprintf("k8s-%s-%s-%s", cut(svc.Namespace), cut(svc.Name), hex.EncodeToString(h.Sum(nil))[:10])
}

// IsNLBGroup says whether g is the group upstream's Managed mode made for svc in the cluster
// clusterName: the name derived from svc's UID, the Managed description, and this cluster's tag
// "owned". The Service is proven by the UID hash in the name, not by the NLB the group is
// attached to, so the answer holds once the group is detached too.
func IsNLBGroup(id ownership.Identity, clusterName string, svc *v1.Service, g *types.SecurityGroup) bool {
	if svc.UID == "" || aws.ToString(g.GroupName) != NLBGroupName(clusterName, svc) || aws.ToString(g.Description) != NLBGroupDescription {
		return false
	}
	return serviceGroupOwned(id, g)
}

// serviceGroupOwned: upstream tags its groups with the cluster only; the caller has proven the
// Service by the group's name and description.
func serviceGroupOwned(id ownership.Identity, g *types.SecurityGroup) bool {
	tags := awsread.TagMap(g.Tags, func(t types.Tag) (*string, *string) { return t.Key, t.Value })
	tags[ownership.ServiceTag] = id.Service()
	return Owned(id, tags)
}

// NLBRule says whether a node rule is one upstream added for the NLB up, which must be the
// Service's upstream NLB, proven its own by its tags (else ""): the rule's description names it
// (client or health rule). Upstream's ICMP rule for MTU discovery names no NLB (it is shared by
// all of them): sgrules.NLBMTURules keeps it while a client rule admits its range.
func NLBRule(up string, r sgrules.Rule) bool {
	return up != "" && r.CIDR != "" && (r.Desc == "kubernetes.io/rule/nlb/client="+up || r.Desc == "kubernetes.io/rule/nlb/health="+up)
}
