package aws

import (
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
)

// "Strict for typos, not for upstream" (docs/writing-a-provider.md): every key the upstream AWS CCM
// reads (its CloudConfig struct, pkg/providers/v1/config, and the in-tree provider's
// leftovers that generated configs still carry) is in upstreamKeys with what ccm does with
// it. A name in neither ccm's config nor this table stays an "unknown key" error with its
// line. docs/providers/aws.md carries the table (TestUpstreamKeysDocumented).

const (
	secGlobal   = "Global"
	secOverride = "ServiceOverride"
)

func impl(section, key, example, note string) config.UpstreamKey {
	return config.UpstreamKey{Section: section, Key: key, Status: config.Implemented, Example: example, Why: note}
}

func notUsed(section, key, example, why, instead string) config.UpstreamKey {
	return config.UpstreamKey{Section: section, Key: key, Status: config.Unused, Example: example, Why: why, Instead: instead}
}

// upstreamKeys is every key the upstream AWS CCM reads, in its struct's order.
var upstreamKeys = []config.UpstreamKey{
	impl(secGlobal, "Zone", "eu-west-1b", "the region is derived from it as upstream does (Local and Wavelength Zones included) and wins over the metadata service"),
	impl(secGlobal, "Region", "eu-west-1", "without Region and Zone, read from the instance metadata service (IMDSv2) at start-up"),
	impl(secGlobal, "VPC", "vpc-2", ""),
	notUsed(secGlobal, "SubnetID", "subnet-1",
		"ccm picks load balancer subnets by their kubernetes.io/role/elb (or internal-elb) and cluster tags, or by the aws-load-balancer-subnets annotation; the upstream CCM uses SubnetID only as the fallback subnet of a control plane outside AWS when no subnet is tagged",
		"tag the load balancer subnets (kubernetes.io/cluster/<id> and kubernetes.io/role/elb or kubernetes.io/role/internal-elb)"),
	impl(secGlobal, "RouteTableID", "rtb-2", ""),
	impl(secGlobal, "RoleARN", "arn:aws:iam::123456789012:role/other", ""),
	impl(secGlobal, "SourceARN", "arn:aws:eks:us-east-1:123456789012:cluster/c", "sent as x-amz-source-arn with the AssumeRole of RoleARN (x-amz-source-account always), as upstream"),
	impl(secGlobal, "KubernetesClusterTag", "legacy", "the legacy spelling of KubernetesClusterID"),
	impl(secGlobal, "KubernetesClusterID", "other", "without it (and KubernetesClusterTag), read at start-up from the running instance's kubernetes.io/cluster/<id> or KubernetesCluster tag"),
	impl(secGlobal, "DisableSecurityGroupIngress", "true", ""),
	impl(secGlobal, "ElbSecurityGroup", "sg-2", ""),
	impl(secGlobal, "NodeIPFamilies", "ipv6", ""),
	impl(secGlobal, "ClusterServiceLoadBalancerHealthProbeMode", probeModeShared, "Shared: Services with externalTrafficPolicy Cluster are health-checked on kube-proxy (HTTP, default port 10256, path /healthz), classic ELBs and NLBs alike"),
	impl(secGlobal, "ClusterServiceSharedLoadBalancerHealthProbePort", "10257", "0 means 10256"),
	impl(secGlobal, "ClusterServiceSharedLoadBalancerHealthProbePath", "/livez", ""),
	impl(secGlobal, "SupportedTopologyInstanceTypePattern", `"^p4d\\..*"`, "as upstream: instance types whose topology.k8s.aws/network-node-layer-* labels are required (a failed DescribeInstanceTopology fails their Node's initialisation); other types get them when EC2 answers; default upstream's pattern"),
	impl(secGlobal, "NLBSecurityGroupMode", nlbGroupModeManaged, "Managed: each new NLB gets a security group of its own admitting the source ranges on the listener ports (upstream's taken over in place, deleted after the NLB), or the groups its `security-groups` annotation names (nothing written into them); an existing NLB whose groups differ gets the wanted ones with `SetSecurityGroups`: named groups, its own again when the annotation is removed, or a new own group when none of its groups is recognised as the Service's (e.g. upstream's made under another `--cluster-name`; those are left as they are); an NLB made without groups stays without (AWS cannot add them)"),
	notUsed(secGlobal, "DisableStrictZoneCheck", "true",
		"a key of the in-tree AWS provider that generated configs (OpenShift, Rancher) still carry; the upstream CCM ignores it since 2023 and ccm has no zone check to disable",
		"remove it"),

	impl(secOverride, "Service", `"Elastic Load Balancing"`, `the SDK v2 service IDs upstream compares with (EC2, "Elastic Load Balancing", "Elastic Load Balancing v2", STS, ec2imds) and the endpoint names (ec2, elasticloadbalancing, elasticloadbalancingv2, sts), case-insensitive; KMS, "Auto Scaling" and S3 are accepted and reported (ccm does not call them)`),
	impl(secOverride, "Region", "us-east-1", "a section applies only when its Region is the cloud's region, as upstream (ccm: a section without Region applies to any)"),
	impl(secOverride, "URL", "https://ec2.internal.example", "https, or http to a loopback host (simulators) or, for ec2imds, the link-local metadata address"),
	impl(secOverride, "SigningRegion", "eu-west-3", ""),
	impl(secOverride, "SigningMethod", "v4", "any value is accepted, as upstream accepts it without reading it; requests are signed with SigV4 (the SDK's only signer), and a value other than v4 is reported at start-up"),
	impl(secOverride, "SigningName", "compute", ""),
}

// signingMethodNote is the start-up report of a [ServiceOverride] SigningMethod other than v4.
const signingMethodNote = "the upstream CCM never reads SigningMethod either; requests to the endpoint are signed with SigV4 whatever it says; remove the key"

// upstreamGlobal holds the [Global] keys the table marks unused. Pointers tell "not in the
// file" from a zero value; their types are upstream's, so a value upstream could not parse
// is an error here too.
type upstreamGlobal struct {
	SubnetID               *string
	DisableStrictZoneCheck *bool
}

// logNotice is where the start-up reports go; tests replace it.
var logNotice = func(msg string) { klog.Warning(msg) }

// Notices returns the start-up reports of this config: upstream keys read but not used, and
// what ccm will discover at start-up instead of reading it from the file.
func (c *Config) Notices() []string { return append([]string(nil), c.notices...) }

// upstreamKeysMarkdown is the table of docs/providers/aws.md, between its markers.
func upstreamKeysMarkdown() string {
	return config.UpstreamMarkdown(upstreamKeys, func(section string) string {
		if section == secOverride {
			return `[ServiceOverride "n"]`
		}
		return "[" + section + "]"
	})
}
