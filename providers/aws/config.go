package aws

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ownership"
)

// Config is the aws provider's cloud-config. The [Global] keys are the upstream AWS CCM's, so
// an existing cloud.conf works unchanged; see docs/providers/aws.md.
type Config struct {
	Global struct {
		Region, Zone                string
		VPC                         string
		SubnetID                    string
		RouteTableID                string
		RoleARN                     string
		KubernetesClusterID         string
		KubernetesClusterTag        string // legacy spelling of KubernetesClusterID
		DisableSecurityGroupIngress bool
		ElbSecurityGroup            string
		NodeIPFamilies              []string // ipv4 (default), ipv6

		// Not upstream. NodeNameTag names an instance tag whose value is the Node name: a
		// second way to find an instance when the Node has no providerID yet.
		NodeNameTag string
		// Not upstream. CredentialsFile is a shared credentials file (profile "default") used
		// instead of the SDK's default chain, for clouds that are not AWS and for tests.
		CredentialsFile string
		// Not upstream. InstanceCacheTTL bounds how old an instance answer may be (default 10s).
		InstanceCacheTTL config.Duration
		// Not upstream. The operator's exceptions to "a Service may name only what it owns"
		// (comma lists): Services in AllowedResourceNamespaces may name any security group or
		// subnet in their annotations; any Service may name the IDs in AllowedResourceIDs.
		AllowedResourceNamespaces string
		AllowedResourceIDs        string
	}
	// ServiceOverride points one AWS service at another endpoint, as upstream:
	// [ServiceOverride "1"] Service = ec2, Region = ..., URL = ...
	ServiceOverride map[string]*ServiceOverride
}

// ServiceOverride is one [ServiceOverride "n"] section.
type ServiceOverride struct {
	Service, Region, URL string
	SigningRegion        string
	SigningMethod        string
	SigningName          string
}

var regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)

// clusterIDRE: the cluster ID is written into tag keys and into security group rule
// descriptions (ownership.Description), whose characters EC2 limits.
var clusterIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$`)

// SetDefaults implements config.Defaulter.
func (c *Config) SetDefaults() {
	c.Global.InstanceCacheTTL.Duration = defaultInstanceTTL
}

// ClusterID is KubernetesClusterID or the legacy KubernetesClusterTag.
func (c *Config) ClusterID() string {
	if c.Global.KubernetesClusterID != "" {
		return c.Global.KubernetesClusterID
	}
	return c.Global.KubernetesClusterTag
}

// endpoint returns the overridden URL for service ("ec2", "elasticloadbalancing"), if any.
func (c *Config) endpoint(service string) string {
	if o := c.override(service); o != nil {
		return o.URL
	}
	return ""
}

// override returns the [ServiceOverride] section for the first of services that has one
// (ELB and ELBv2 share an endpoint, so one section may serve both).
func (c *Config) override(services ...string) *ServiceOverride {
	for _, svc := range services {
		for _, o := range c.ServiceOverride {
			if strings.EqualFold(o.Service, svc) {
				return o
			}
		}
	}
	return nil
}

// Validate implements config.Validator.
func (c *Config) Validate() config.Problems {
	var ps config.Problems
	g := c.Global
	if g.Region == "" && g.Zone == "" {
		ps.Add("Global", "Region", "set Region (or Zone, from which the region is derived); the aws provider does not ask the instance metadata service")
	}
	if r := c.region(); r != "" && !regionRE.MatchString(r) {
		ps.Add("Global", "Region", "%q is not an AWS region name such as us-east-1", r)
	}
	if g.KubernetesClusterID != "" && g.KubernetesClusterTag != "" && g.KubernetesClusterID != g.KubernetesClusterTag {
		ps.Add("Global", "KubernetesClusterTag", "differs from KubernetesClusterID; set only KubernetesClusterID")
	}
	if c.ClusterID() == "" {
		ps.Add("Global", "KubernetesClusterID", "is required: it scopes every resource this cluster owns (tag kubernetes.io/cluster/<id>)")
	} else if !clusterIDRE.MatchString(c.ClusterID()) {
		ps.Add("Global", "KubernetesClusterID", "%q: use at most 128 letters, digits and . _ : / @ + = - (it goes into tags and security group rule descriptions)", c.ClusterID())
	}
	if _, err := ownership.ParseAllow(g.AllowedResourceNamespaces, g.AllowedResourceIDs); err != nil {
		ps.Add("Global", "AllowedResourceNamespaces", "%v", err)
	}
	for _, f := range g.NodeIPFamilies {
		if f != "ipv4" && f != "ipv6" {
			ps.Add("Global", "NodeIPFamilies", "must be ipv4 or ipv6, not %q", f)
		}
	}
	if g.RoleARN != "" && !strings.HasPrefix(g.RoleARN, "arn:") {
		ps.Add("Global", "RoleARN", "is not an ARN (arn:aws:iam::<account>:role/<name>)")
	}
	if g.InstanceCacheTTL.Duration > maxInstanceTTL {
		ps.Add("Global", "InstanceCacheTTL", "must be at most %v: a longer cache hides shut down instances", maxInstanceTTL)
	}
	for name, o := range c.ServiceOverride {
		switch strings.ToLower(o.Service) {
		case "ec2", "elasticloadbalancing", "elb", "elasticloadbalancingv2", "sts":
		case "":
			ps.AddSub("ServiceOverride", name, "Service", "is required (ec2, elasticloadbalancing, sts)")
		default:
			ps.AddSub("ServiceOverride", name, "Service", "%q is not a service this provider calls (ec2, elasticloadbalancing, sts)", o.Service)
		}
		if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			ps.AddSub("ServiceOverride", name, "URL", "must be an http(s) URL")
		} else if u.Scheme == "http" && !loopback(u.Hostname()) {
			ps.AddSub("ServiceOverride", name, "URL", "%q: http:// would send signed requests and STS credentials in clear text; use https:// (plain http is accepted only for a loopback host such as 127.0.0.1, for simulators)", o.URL)
		}
		if o.SigningMethod != "" && !strings.EqualFold(o.SigningMethod, "v4") {
			ps.AddSub("ServiceOverride", name, "SigningMethod", "only v4 is supported")
		}
	}
	return ps
}

// loopback reports whether host is localhost or a loopback IP: the only endpoints that may be
// plain http (the fake and the simulator listen on 127.0.0.1).
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// region is Region, or Zone without its letter.
func (c *Config) region() string {
	if c.Global.Region != "" {
		return c.Global.Region
	}
	if z := c.Global.Zone; len(z) > 1 {
		return z[:len(z)-1]
	}
	return ""
}

func (c *Config) wantIPv6() bool {
	for _, f := range c.Global.NodeIPFamilies {
		if f == "ipv6" {
			return true
		}
	}
	return false
}

func (c *Config) wantIPv4() bool {
	if len(c.Global.NodeIPFamilies) == 0 {
		return true
	}
	for _, f := range c.Global.NodeIPFamilies {
		if f == "ipv4" {
			return true
		}
	}
	return false
}
