package aws

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// The harness as cloudtest.HostileHarness: several clusters (each its own KubernetesClusterID)
// in one account, that is one fake. Every instance the harness adds is in the fake's one node
// security group, so the clusters' nodes share it, with the same nodePorts.

var _ cloudtest.HostileHarness = (*harness)(nil)

// NewCloudFor is a cloud of cluster on the same fake. The fake's load balancer subnets are
// tagged as shared with cluster too, as an operator would for a second cluster in the VPC.
func (h *harness) NewCloudFor(t cloudtest.T, cluster string) cloudprovider.Interface {
	for _, id := range h.subnets {
		h.fake.TagResource(id, map[string]string{ownership.ClusterTagPrefix + cluster: ownership.Shared})
	}
	c, err := New(strings.NewReader(h.configFor(cluster)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.Initialize(nil, nil)
	return c
}

// attackName is the load balancer name of the suite's attack Service for case i.
func attackName(attacker string, i int) string {
	svc := cloudtest.AttackService(i)
	return lbname.AWSELB.Name(attacker, svc.Namespace, svc.Name)
}

// HostileCases seeds the fake with objects ccm did not make (or made for another cluster)
// and returns the annotations a tenant of attacker could write against them.
func (h *harness) HostileCases(t cloudtest.T, victim string, victimSvc *v1.Service, attacker string) []cloudtest.HostileCase {
	victimLB := lbname.AWSELB.Name(victim, victimSvc.Namespace, victimSvc.Name)
	victimSG, ok := h.fake.GroupByName(groupName(victimLB))
	if !ok {
		t.Fatalf("the victim's ELB security group %s is not in the fake", groupName(victimLB))
	}
	victimTags := ownership.Of(victim, victimSvc).Tags()
	handSG := h.fake.AddSecurityGroup("made-by-hand", "an operator's group", map[string]string{"team": "net"})
	victimSubnet := h.fake.AddSubnet(fakeaws.VPC, "us-east-1a", "10.0.200.0/24", map[string]string{
		ownership.ClusterTagPrefix + victim: ownership.Owned, "kubernetes.io/role/elb": "1"})
	forged := fmt.Sprintf("%s%s=owned,%s=%s/%s,%s=%s", ownership.ClusterTagPrefix, victim, ownership.ServiceTag, victimSvc.Namespace, victimSvc.Name, ownership.ServiceUIDTag, victimSvc.UID)
	typeNLB := annotations.Prefix + annotations.Type
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []cloudtest.HostileCase{
		{Name: "additional-resource-tags forge the victim's ownership (classic)", Reason: "reserved",
			Annotations: ann(annotations.Prefix+annotations.ExtraTags, forged)},
		{Name: "additional-resource-tags forge the victim's ownership (nlb)", Reason: "reserved",
			Annotations: ann(annotations.Prefix+annotations.ExtraTags, forged, typeNLB, "nlb")},
		{Name: "additional-resource-tags forge ccm's bookkeeping (node groups, fingerprint)", Reason: "reserved",
			Annotations: ann(annotations.Prefix+annotations.ExtraTags, nodeGroupsTag+"="+fakeaws.NodeGroup+","+fingerprintTag+"=x", typeNLB, "nlb")},
		{Name: "security-groups names the victim cluster's ELB group", Reason: "does not own",
			Annotations: ann(annotations.Prefix+annotations.SecurityGroup, victimSG)},
		{Name: "security-groups names a group made by hand", Reason: "does not own",
			Annotations: ann(annotations.Prefix+annotations.SecurityGroup, handSG)},
		{Name: "security-groups names the shared node group", Reason: "does not own",
			Annotations: ann(annotations.Prefix+annotations.SecurityGroup, fakeaws.NodeGroup)},
		{Name: "a group named k8s-elb-<the Service's ELB> exists with the victim's tags", Reason: "not this Service's"},
		{Name: "a target group with ccm's name for the Service exists with the victim's tags", Reason: "not this Service's",
			Annotations: ann(typeNLB, "nlb")},
		{Name: "subnets names a subnet tagged for the victim cluster only (classic)", Reason: "not tagged",
			Annotations: ann(annotations.Prefix+annotations.Subnets, victimSubnet)},
		{Name: "subnets names a subnet tagged for the victim cluster only (nlb)", Reason: "not tagged",
			Annotations: ann(annotations.Prefix+annotations.Subnets, victimSubnet, typeNLB, "nlb")},
		{Name: "an ELB with the Service's name exists with the victim's tags", Reason: "not this Service's"},
		{Name: "an NLB with the Service's name exists without tags", Reason: "not this Service's",
			Annotations: ann(typeNLB, "nlb")},
	}
	// The objects found by name, for the cases that expect them.
	h.fake.AddSecurityGroup(groupName(attackName(attacker, 6)), "not ccm's", victimTags)
	h.fake.AddTargetGroup(tgNames.Name(attacker, ownership.Of(attacker, cloudtest.AttackService(7)).Service(), "tcp30080"), "TCP", 30080, victimTags)
	h.fake.AddClassicLB(attackName(attacker, 10), 80, 30080, victimTags)
	h.fake.AddNLB(attackName(attacker, 11), nil)
	return cases
}

// Snapshot is the fake's own dump of every load-balancing object with its settings, tags,
// targets and every security group rule with its description.
func (h *harness) Snapshot(cloudtest.T) string { return h.fake.Dump() }

var _ cloudtest.ReachHarness = (*harness)(nil)

func (h *harness) Annotations() reach.Table { return annotations.Table }

// Foreign seeds objects of kind that no attacking Service owns: the victim cluster's, another
// namespace's of the attacker's own cluster, an operator's untagged one, one an upstream CCM
// (no UID) would tag, and one in use.
func (h *harness) Foreign(t cloudtest.T, kind, victim string, victimSvc *v1.Service, attacker string) []cloudtest.Foreign {
	victimTags := ownership.Of(victim, victimSvc).Tags()
	neighbour := cloudtest.AttackService(0)
	neighbour.Namespace, neighbour.UID = "neighbour", "uid-neighbour"
	nsTags := ownership.Of(attacker, neighbour).Tags()
	upstreamTags := map[string]string{ownership.ClusterTagPrefix + attacker: ownership.Owned, ownership.ServiceTag: "neighbour/old-web"}
	f := func(flavour, value string) cloudtest.Foreign {
		return cloudtest.Foreign{Flavour: flavour, Value: value}
	}
	switch kind {
	case "subnet":
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, h.fake.AddSubnet(fakeaws.VPC, "us-east-1a", "10.0.210.0/24", map[string]string{ownership.ClusterTagPrefix + victim: ownership.Owned})),
			f(cloudtest.Unowned, h.fake.AddSubnet(fakeaws.VPC, "us-east-1b", "10.0.211.0/24", map[string]string{"team": "db"})),
		}
	case "security group":
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, h.fake.AddSecurityGroup("reach-victims", "the victim cluster's", victimTags)),
			f(cloudtest.OtherNamespace, h.fake.AddSecurityGroup("reach-neighbours", "another namespace's", nsTags)),
			f(cloudtest.Unowned, h.fake.AddSecurityGroup("reach-hand-made", "an operator's", map[string]string{"team": "net"})),
			f(cloudtest.UpstreamMade, h.fake.AddSecurityGroup("reach-upstream", "tagged without a UID", upstreamTags)),
			f(cloudtest.InUse, fakeaws.NodeGroup),
		}
	case "certificate":
		return []cloudtest.Foreign{f(cloudtest.Unowned, "arn:aws:acm:us-east-1:1:certificate/payments-team")}
	case "S3 bucket":
		return []cloudtest.Foreign{f(cloudtest.Unowned, "payments-audit-logs")}
	case "Elastic IP":
		used := h.fake.AddAddress(nil)
		h.fake.AssociateAddress(used, "eni-0abc")
		list := func(a string) string { return a + "," + a + "," + a } // one per subnet
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, list(h.fake.AddAddress(victimTags))),
			f(cloudtest.OtherNamespace, list(h.fake.AddAddress(nsTags))),
			f(cloudtest.Unowned, list(h.fake.AddAddress(map[string]string{"team": "edge"}))),
			f(cloudtest.UpstreamMade, list(h.fake.AddAddress(upstreamTags))),
			f(cloudtest.InUse, list(used)),
		}
	}
	t.Errorf("the AWS harness makes no foreign %s", kind)
	return nil
}
