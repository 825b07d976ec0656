package aws

// Nodes as EC2 instances: the InstancesV2 interface, and a load balancer's members (the Nodes'
// instances) with the node security groups their rules go into.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// instances implements cloudprovider.InstancesV2 over EC2.
type instances struct{ c *Cloud }

var _ cloudprovider.InstancesV2 = instances{}

// InstanceExists is false for an instance EC2 does not know or reports terminated. A failed
// call is an error; the shared deletion guard confirms "false" before a Node is deleted.
// With a providerID, "does not know" is EC2's InvalidInstanceID.NotFound for that one ID,
// never an ID missing from a filtered list; a Node or providerID of another region than the
// configured one is an error (EC2 in the wrong region knows none of the cluster's instances).
func (i instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	in, err := i.c.lookup(ctx, node)
	if err != nil {
		return false, err
	}
	return in != nil, nil
}

// InstanceShutdown is true for a stopped instance.
func (i instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	in, err := i.c.lookup(ctx, node)
	if err != nil {
		return false, err
	}
	if in == nil {
		return false, cloudprovider.InstanceNotFound
	}
	return in.State != nil && in.State.Name == types.InstanceStateNameStopped, nil
}

// InstanceMetadata returns providerID, type, zone, region, addresses and the topology labels.
func (i instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, err := i.c.lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	zone := ""
	if in.Placement != nil {
		zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	// The topology.k8s.aws/* labels the Node lacks, as upstream (topology.go).
	labels, err := i.c.topo.labels(ctx, node.Labels, zone, aws.ToString(in.InstanceId), string(in.InstanceType))
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:       "aws:///" + zone + "/" + aws.ToString(in.InstanceId),
		InstanceType:     string(in.InstanceType),
		Zone:             zone,
		Region:           i.c.cfg.region(),
		NodeAddresses:    i.c.addresses(in),
		AdditionalLabels: labels,
	}, nil
}

// instanceID extracts the instance ID from aws:///<az>/<id>, aws:////<id> or a bare i-…
func instanceID(providerID string) (string, error) {
	rest := providerID
	if r, ok := strings.CutPrefix(providerID, "aws://"); ok {
		rest = r
	} else if strings.Contains(providerID, "://") {
		return "", fmt.Errorf("aws: providerID %q is not an aws:// ID", providerID)
	}
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.HasPrefix(id, "i-") || len(id) < 3 {
		return "", fmt.Errorf("aws: providerID %q does not end in an instance ID (i-…)", providerID)
	}
	return id, nil
}

// lookup finds node's instance; nil, nil means EC2 says there is none (or it is terminated).
// With a providerID it asks by ID (batched, cached). Without one it tries, in order: the
// private DNS name equal to the Node name (upstream's rule), the NodeNameTag tag equal to the
// Node name, and the Node's InternalIP addresses as ENI private addresses.
func (c *Cloud) lookup(ctx context.Context, node *v1.Node) (*types.Instance, error) {
	if err := sameRegion(node, c.cfg.region()); err != nil {
		return nil, err
	}
	if node.Spec.ProviderID != "" {
		id, err := instanceID(node.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		got, err := c.inst.Get(ctx, []string{id})
		if err != nil {
			return nil, err
		}
		return alive(got[id]), nil
	}
	// The private DNS name first, batched with other Nodes' look-ups.
	byName, err := c.dns.Find(ctx, node.Name)
	if err != nil {
		return nil, err
	}
	if in, err := only(node, "private-dns-name", byName); in != nil || err != nil {
		return in, err
	}
	var tries [][]types.Filter
	if t := c.cfg.Global.NodeNameTag; t != "" {
		tries = append(tries, []types.Filter{filter("tag:"+t, node.Name)})
	}
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	if len(ips) > 0 {
		tries = append(tries, []types.Filter{filter("network-interface.addresses.private-ip-address", ips...)})
	}
	for _, fs := range tries {
		fs = append(fs, filter("vpc-id", c.vpc()...))
		if len(c.vpc()) == 0 {
			fs = fs[:len(fs)-1]
		}
		found, err := c.inst.Find(ctx, fs...)
		if err != nil {
			return nil, err
		}
		if in, err := only(node, aws.ToString(fs[0].Name), found); in != nil || err != nil {
			return in, err
		}
	}
	// The searches were scoped to the configured VPC: they say nothing if it is not there (a
	// wrong VPC ID, or a region without it).
	if err := c.vpcExists(ctx); err != nil {
		return nil, fmt.Errorf("aws: no instance matches Node %q, but that says nothing: %w", node.Name, err)
	}
	return nil, nil
}

// vpcExists is nil when no VPC is configured or EC2 knows the configured one.
func (c *Cloud) vpcExists(ctx context.Context) error {
	vpc := c.vpc()
	if len(vpc) == 0 {
		return nil
	}
	_, err := c.api.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: vpc})
	if isCode(err, "InvalidVpcID.NotFound") {
		return fmt.Errorf("the configured VPC %s does not exist in region %s", vpc[0], c.cfg.region())
	}
	if err != nil {
		return fmt.Errorf("DescribeVpcs %s: %w", vpc[0], err)
	}
	return nil
}

// sameRegion is an error when node says it is in another region than region: the zone of its
// aws:///<zone>/<id> providerID, or its region and zone labels. EC2 in one region knows no
// instance of another, so its "not found" would say nothing about the Node's instance.
func sameRegion(node *v1.Node, region string) error {
	if region == "" {
		return nil
	}
	var claims [][2]string // what, region
	if rest, ok := strings.CutPrefix(node.Spec.ProviderID, "aws:///"); ok {
		if zone, _, ok := strings.Cut(rest, "/"); ok && zone != "" {
			claims = append(claims, [2]string{"providerID zone " + zone, zoneRegion(zone)})
		}
	}
	for _, l := range []string{v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion} {
		if r := node.Labels[l]; r != "" {
			claims = append(claims, [2]string{"label " + l + "=" + r, r})
		}
	}
	for _, l := range []string{v1.LabelTopologyZone, v1.LabelFailureDomainBetaZone} {
		if z := node.Labels[l]; z != "" {
			claims = append(claims, [2]string{"label " + l + "=" + z, zoneRegion(z)})
		}
	}
	for _, cl := range claims {
		if cl[1] != region {
			return fmt.Errorf("aws: Node %q is in another region than the configured %s (%s); not looking it up there", node.Name, region, cl[0])
		}
	}
	return nil
}

// zoneRegion is the region of an availability zone: the zone's words up to the first that
// starts with a digit, without the zone letter (us-east-1a and the local zone
// us-west-2-lax-1a are in us-east-1 and us-west-2; us-gov-west-1b in us-gov-west-1).
func zoneRegion(zone string) string {
	parts := strings.Split(zone, "-")
	for i, p := range parts {
		if p != "" && p[0] >= '0' && p[0] <= '9' {
			return strings.TrimRight(strings.Join(parts[:i+1], "-"), "abcdefghijklmnopqrstuvwxyz")
		}
	}
	return strings.TrimRight(zone, "abcdefghijklmnopqrstuvwxyz")
}

// only is the one live instance of found; nil when there is none, an error when there are
// several. A name or address may have belonged to a terminated instance before this one.
func only(node *v1.Node, by string, found []*types.Instance) (*types.Instance, error) {
	found = slices.DeleteFunc(slices.Clone(found), func(in *types.Instance) bool { return alive(in) == nil })
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("aws: %d instances match Node %q (%s); set its providerID", len(found), node.Name, by)
	}
}

func (c *Cloud) vpc() []string {
	if c.cfg.Global.VPC == "" {
		return nil
	}
	return []string{c.cfg.Global.VPC}
}

// alive is in unless it is nil or terminated (EC2 lists terminated instances for about an hour).
func alive(in *types.Instance) *types.Instance {
	if in == nil || in.State == nil || in.State.Name == types.InstanceStateNameTerminated || in.State.Name == types.InstanceStateNameShuttingDown {
		return nil
	}
	return in
}

// addresses lists the private IPs of every ENI in device order (primary address first), IPv6
// addresses when NodeIPFamilies asks, the public IP, then the DNS names.
func (c *Cloud) addresses(in *types.Instance) []v1.NodeAddress {
	var out []v1.NodeAddress
	add := func(t v1.NodeAddressType, a string) {
		if a != "" && !slices.Contains(out, v1.NodeAddress{Type: t, Address: a}) {
			out = append(out, v1.NodeAddress{Type: t, Address: a})
		}
	}
	enis := slices.Clone(in.NetworkInterfaces)
	slices.SortFunc(enis, func(a, b types.InstanceNetworkInterface) int {
		return cmp.Compare(deviceIndex(a), deviceIndex(b))
	})
	if c.cfg.wantIPv4() {
		add(v1.NodeInternalIP, aws.ToString(in.PrivateIpAddress))
		for _, e := range enis {
			ips := slices.Clone(e.PrivateIpAddresses)
			slices.SortStableFunc(ips, func(a, b types.InstancePrivateIpAddress) int {
				return cmp.Compare(boolRank(a.Primary), boolRank(b.Primary))
			})
			for _, ip := range ips {
				add(v1.NodeInternalIP, aws.ToString(ip.PrivateIpAddress))
			}
		}
	}
	if c.cfg.wantIPv6() {
		for _, e := range enis {
			for _, ip := range e.Ipv6Addresses {
				add(v1.NodeInternalIP, aws.ToString(ip.Ipv6Address))
			}
		}
	}
	if c.cfg.wantIPv4() {
		add(v1.NodeExternalIP, aws.ToString(in.PublicIpAddress))
	}
	add(v1.NodeInternalDNS, aws.ToString(in.PrivateDnsName))
	add(v1.NodeHostName, aws.ToString(in.PrivateDnsName))
	add(v1.NodeExternalDNS, aws.ToString(in.PublicDnsName))
	return out
}

func deviceIndex(e types.InstanceNetworkInterface) int32 {
	if e.Attachment == nil {
		return 1 << 30
	}
	return aws.ToInt32(e.Attachment.DeviceIndex)
}

func boolRank(b *bool) int {
	if aws.ToBool(b) {
		return 0
	}
	return 1
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// members maps the Nodes (filtered by target-node-labels) to instance IDs and returns the
// security groups of those instances. Nodes with a providerID cost no call beyond the shared,
// batched, cached DescribeInstances.
func (l *loadBalancers) members(ctx context.Context, opts *annotations.Options, nodes []*v1.Node) (ids, groups []string, err error) {
	var byID []string
	for _, n := range nodes {
		if !opts.NodeLabels.Selects(n.Labels) {
			continue
		}
		if n.Spec.ProviderID == "" {
			in, err := l.c.lookup(ctx, n)
			if err != nil {
				return nil, nil, err
			}
			if in != nil {
				byID = append(byID, aws.ToString(in.InstanceId))
			}
			continue
		}
		id, err := instanceID(n.Spec.ProviderID)
		if err != nil {
			return nil, nil, err
		}
		byID = append(byID, id)
	}
	got, err := l.c.inst.Get(ctx, byID)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range byID {
		in := alive(got[id])
		if in == nil {
			continue // gone: the node controller will remove its Node
		}
		ids = append(ids, id)
		if l.c.cfg.Global.DisableSecurityGroupIngress {
			continue
		}
		g, err := nodeGroupOf(id, instanceGroups(in), func(g string) bool {
			sg, _ := l.gsnap.Get(ctx, g, l.listGroups) // the cluster's tagged groups, listed once
			return sg != nil
		})
		if err != nil {
			return nil, nil, err
		}
		if g != "" && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	sort.Strings(groups)
	return ids, groups, nil
}

// nodeGroupOf picks, as upstream does, the instance's security group that ELB rules go to: the
// one tagged for the cluster (kubernetes.io/cluster/<id>); with none tagged, its only group.
// Several tagged, or several untagged and none tagged, is an error naming them: a rule must
// not land in a group another team or cluster relies on because it happens to be first.
// Pure; tagged is asked only when the instance has several groups.
func nodeGroupOf(instanceID string, groups []string, tagged func(string) bool) (string, error) {
	if len(groups) <= 1 {
		return strings.Join(groups, ""), nil
	}
	var yes []string
	for _, g := range groups {
		if tagged(g) {
			yes = append(yes, g)
		}
	}
	switch len(yes) {
	case 1:
		return yes[0], nil
	case 0:
		return "", fmt.Errorf("instance %s has several security groups (%s) and none is tagged %s<cluster id>: tag the one load balancer rules go to",
			instanceID, strings.Join(groups, ", "), ownership.ClusterTagPrefix)
	}
	return "", fmt.Errorf("instance %s has several security groups tagged for the cluster (%s): tag only the one load balancer rules go to",
		instanceID, strings.Join(yes, ", "))
}

// instanceGroups are the IDs of in's security groups, in EC2's order.
func instanceGroups(in *types.Instance) []string {
	var out []string
	for _, g := range in.SecurityGroups {
		if id := aws.ToString(g.GroupId); id != "" {
			out = append(out, id)
		}
	}
	return out
}
