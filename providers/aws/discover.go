package aws

// Start-up without a config file, as the upstream CCM: its chart and examples pass no
// --cloud-config, so the region comes from the instance metadata service (IMDSv2) and the
// cluster ID from the tags of the EC2 instance ccm runs on. Only what the config leaves out
// is asked; a config with Region (or Zone) and KubernetesClusterID never reaches IMDS.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// discoveryTimeout bounds the start-up questions to IMDS and EC2: off EC2 the metadata
// address does not answer at all, and the operator should hear why within seconds.
const discoveryTimeout = 30 * time.Second

const clusterTagPrefix = "kubernetes.io/cluster/"

// metadataClient is the SDK's IMDS client: IMDSv2 (a token PUT, then GETs with the token),
// at AWS_EC2_METADATA_SERVICE_ENDPOINT if set, else a [ServiceOverride] for ec2imds (any
// Region, as upstream), else 169.254.169.254.
func (c *Cloud) metadataClient() (*imds.Client, string) {
	var opts imds.Options
	for _, o := range c.cfg.ServiceOverride {
		if canonicalService(o.Service) == serviceIMDS {
			opts.Endpoint = o.URL
		}
	}
	where := opts.Endpoint
	if where == "" {
		where = os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT")
	}
	if where == "" {
		where = "http://169.254.169.254"
	}
	return imds.New(opts), where
}

// discoverRegion fills Region and Zone from IMDS when the config has neither, and returns the
// running instance's ID when the config has no cluster ID (discoverCluster needs it).
func (c *Cloud) discoverRegion(ctx context.Context) (instanceID string, err error) {
	g := &c.cfg.Global
	needRegion, needCluster := c.cfg.region() == "", c.cfg.ClusterID() == ""
	if !needRegion && !needCluster {
		return "", nil
	}
	md, where := c.metadataClient()
	fail := func(what string, err error) error {
		set := "[Global] KubernetesClusterID"
		if needRegion {
			set = "[Global] Region (or Zone)"
			if needCluster {
				set += " and KubernetesClusterID"
			}
		}
		return fmt.Errorf("aws: the cloud-config does not set %s, so ccm asks the instance metadata service (IMDSv2 at %s) for %s, which failed: %w. "+
			"Set %s in --cloud-config when ccm does not run on an EC2 instance; on EC2, a Pod reaches IMDSv2 only with the instance's metadata option HttpPutResponseHopLimit at 2 or more",
			set, where, what, errorText(err), set)
	}
	if needRegion {
		zone, err := metadataText(ctx, md, "placement/availability-zone")
		if err != nil {
			return "", fail("the availability zone", err)
		}
		out, err := md.GetRegion(ctx, &imds.GetRegionInput{})
		if err != nil {
			return "", fail("the region", err)
		}
		region := out.Region
		if r, ok := regionOfZone(zone); region == "" && ok {
			region = r
		}
		if !regionRE.MatchString(region) {
			return "", fmt.Errorf("aws: the instance metadata service (%s) says the region is %q, which is not an AWS region name; set [Global] Region", where, region)
		}
		g.Region, g.Zone = region, zone
		klog.InfoS("AWS region from the instance metadata service", "region", region, "zone", zone, "endpoint", where)
	}
	if !needCluster {
		return "", nil
	}
	id, err := metadataText(ctx, md, "instance-id")
	if err != nil {
		return "", fail("the instance ID (whose cluster tag names the cluster)", err)
	}
	return id, nil
}

// discoverCluster sets the cluster ID from the running instance's tags.
func (c *Cloud) discoverCluster(ctx context.Context, api *ec2.Client, instanceID string) error {
	out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID}})
	if err != nil {
		return fmt.Errorf("aws: the cloud-config does not set [Global] KubernetesClusterID, so ccm reads the cluster tag of the instance it runs on (%s), which failed: %w. "+
			"Set KubernetesClusterID, or allow ec2:DescribeInstances", instanceID, err)
	}
	var tags []types.Tag
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if aws.ToString(in.InstanceId) == instanceID {
				tags = in.Tags
			}
		}
	}
	id, legacy, err := clusterIDFromTags(tags)
	if err != nil {
		return fmt.Errorf("aws: instance %s (where ccm runs): %w; set [Global] KubernetesClusterID to this cluster's ID", instanceID, err)
	}
	if id == "" {
		return fmt.Errorf("aws: the cloud-config does not set [Global] KubernetesClusterID, and instance %s (where ccm runs) has neither a %s<id> tag nor a %s tag to take it from. "+
			"Set KubernetesClusterID to the <id> of the %s<id> tags on the cluster's subnets and security groups, or tag the instance", instanceID, clusterTagPrefix, upstream.LegacyClusterTag, clusterTagPrefix)
	}
	if !clusterIDRE.MatchString(id) {
		return fmt.Errorf("aws: the cluster tag of instance %s names cluster %q: use at most 128 letters, digits and . _ : / @ + = -, or set [Global] KubernetesClusterID", instanceID, id)
	}
	if legacy {
		c.cfg.Global.KubernetesClusterTag = id
	} else {
		c.cfg.Global.KubernetesClusterID = id
	}
	klog.InfoS("AWS cluster ID from the running instance's tag", "cluster", id, "instance", instanceID, "legacyTag", legacy)
	return nil
}

// clusterIDFromTags is the cluster ID an instance's tags name, as upstream reads them: the <id>
// of its one kubernetes.io/cluster/<id> tag (any value), or the value of its KubernetesCluster
// tag (legacy). Two cluster tags, or a legacy tag naming another cluster, are an error.
func clusterIDFromTags(tags []types.Tag) (id string, legacy bool, err error) {
	var current, old []string
	for _, t := range tags {
		k := aws.ToString(t.Key)
		if rest, ok := strings.CutPrefix(k, clusterTagPrefix); ok && rest != "" {
			current = append(current, rest)
		}
		if k == upstream.LegacyClusterTag && aws.ToString(t.Value) != "" {
			old = append(old, aws.ToString(t.Value))
		}
	}
	switch {
	case len(current) > 1:
		return "", false, fmt.Errorf("it has %d %s<id> tags (%s): which cluster it belongs to is ambiguous", len(current), clusterTagPrefix, strings.Join(current, ", "))
	case len(old) > 1:
		return "", false, fmt.Errorf("it has several %s tags", upstream.LegacyClusterTag)
	case len(current) == 1 && len(old) == 1 && current[0] != old[0]:
		return "", false, fmt.Errorf("its tags %s%s and %s=%s name different clusters", clusterTagPrefix, current[0], upstream.LegacyClusterTag, old[0])
	case len(current) == 1:
		return current[0], false, nil
	case len(old) == 1:
		return old[0], true, nil
	}
	return "", false, nil
}

// metadataText is one IMDS metadata item as text.
func metadataText(ctx context.Context, md *imds.Client, path string) (string, error) {
	out, err := md.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 4096))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", errors.New(path + " is empty")
	}
	return v, nil
}

// errorText shortens the SDK's nested operation errors to what the operator can act on.
func errorText(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v", discoveryTimeout)
	}
	return err
}
