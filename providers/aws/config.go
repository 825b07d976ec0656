package aws

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// Config is the aws provider's cloud-config. The [Global] keys are the upstream AWS CCM's, so
// an existing cloud.conf works unchanged; see docs/providers/aws.md.
type Config struct {
	Global struct {
		Region, Zone                string
		VPC                         string
		RouteTableID                string
		RoleARN                     string
		SourceARN                   string // sent with RoleARN's AssumeRole (confused-deputy condition keys)
		KubernetesClusterID         string
		KubernetesClusterTag        string // legacy spelling of KubernetesClusterID
		DisableSecurityGroupIngress bool
		ElbSecurityGroup            string
		NodeIPFamilies              []string // ipv4 (default), ipv6

		// Shared: a Service with externalTrafficPolicy Cluster is health-checked on kube-proxy's
		// health port (default 10256, path /healthz) instead of its traffic NodePort, so a
		// node whose kube-proxy is going away is drained first. ServiceNodePort or "": default.
		ClusterServiceLoadBalancerHealthProbeMode       string
		ClusterServiceSharedLoadBalancerHealthProbePort int32
		ClusterServiceSharedLoadBalancerHealthProbePath string

		// Managed: each new NLB gets a security group of its own (nlb.go). "": none.
		NLBSecurityGroupMode string
		// SupportedTopologyInstanceTypePattern: instance types whose topology labels are
		// required (topology.go); "": upstream's default.
		SupportedTopologyInstanceTypePattern string

		upstreamGlobal // upstream keys ccm accepts and reports (upstreamkeys.go)

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
		// Not upstream. NodeSecurityGroupRulesPerNamespace bounds the rules the NLBs of one
		// namespace may hold in a shared node security group (AWS's default quota is 60 per
		// group, for every Service of every tenant): 0 is the default, 40; -1 is no limit.
		NodeSecurityGroupRulesPerNamespace int
	}
	// ServiceOverride points one AWS service at another endpoint, as upstream:
	// [ServiceOverride "1"] Service = ec2, Region = ..., URL = ...
	ServiceOverride map[string]*ServiceOverride

	// notices are the start-up reports: upstream keys read but not used, and what will be
	// discovered from the instance metadata service; logged once when the config is valid.
	notices []string
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

// override returns the [ServiceOverride] section for the first of services (canonical names,
// see serviceNames) that has one for this region, as upstream matches them: a section whose
// Region is another region is not used. A section without Region applies to any region (ccm's
// own configs). ELB and ELBv2 share an endpoint, so one section may serve both.
func (c *Config) override(services ...string) *ServiceOverride {
	region := c.region()
	for _, svc := range services {
		for _, o := range c.ServiceOverride {
			if canonicalService(o.Service) == svc && (o.Region == "" || o.Region == region) {
				return o
			}
		}
	}
	return nil
}

// Validate implements config.Validator.
func (c *Config) Validate() config.Problems {
	var ps config.Problems
	var notes []string
	c.validateRegion(&ps, &notes)
	c.validateCluster(&ps, &notes)
	c.validateGlobalSettings(&ps)
	seen := map[[2]string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.ServiceOverride)) {
		c.validateOverride(&ps, &notes, name, c.ServiceOverride[name], seen)
	}
	upstreamNotes, ups := config.UpstreamReport(c, upstreamKeys)
	ps = append(ps, ups...)
	c.notices = append(upstreamNotes, notes...)
	if len(ps) == 0 {
		for _, n := range c.notices {
			logNotice(n)
		}
	}
	return ps
}

// validateRegion checks [Global] Zone and Region, and notes that neither is set.
func (c *Config) validateRegion(ps *config.Problems, notes *[]string) {
	g := c.Global
	if g.Zone != "" {
		if r, ok := regionOfZone(g.Zone); !ok {
			ps.Add("Global", "Zone", "%q is not an AWS availability zone name such as us-east-1a, us-west-2-lax-1a (Local Zone) or us-east-1-wl1-bos-wlz-1 (Wavelength Zone)", g.Zone)
		} else if g.Region != "" && r != g.Region {
			ps.Add("Global", "Zone", "%q is a zone of %s, not of Region %s (the upstream CCM takes the region from Zone); set one of them", g.Zone, r, g.Region)
		}
	}
	if r := c.region(); r != "" && !regionRE.MatchString(r) {
		ps.Add("Global", "Region", "%q is not an AWS region name such as us-east-1", r)
	}
	if g.Region == "" && g.Zone == "" {
		*notes = append(*notes, "[Global] Region: not set: ccm reads the region and zone from the instance metadata service (IMDSv2) at start-up, as the upstream CCM does; set Region (or Zone) when ccm does not run on an EC2 instance or cannot reach the metadata service")
	}
}

// validateCluster checks the [Global] keys that say which resources are the cluster's: the
// cluster ID, the allowed resources and the rules per namespace.
func (c *Config) validateCluster(ps *config.Problems, notes *[]string) {
	g := c.Global
	if g.KubernetesClusterID != "" && g.KubernetesClusterTag != "" && g.KubernetesClusterID != g.KubernetesClusterTag {
		ps.Add("Global", "KubernetesClusterTag", "differs from KubernetesClusterID; set only KubernetesClusterID")
	}
	if c.ClusterID() == "" {
		*notes = append(*notes, "[Global] KubernetesClusterID: not set: ccm reads it at start-up from the kubernetes.io/cluster/<id> (or legacy KubernetesCluster) tag of the EC2 instance it runs on, as the upstream CCM does; set KubernetesClusterID when ccm does not run on a tagged instance of the cluster")
	} else if !clusterIDRE.MatchString(c.ClusterID()) {
		ps.Add("Global", "KubernetesClusterID", "%q: use at most 128 letters, digits and . _ : / @ + = - (it goes into tags and security group rule descriptions)", c.ClusterID())
	}
	if _, err := ownership.ParseAllow(g.AllowedResourceNamespaces, g.AllowedResourceIDs); err != nil {
		ps.Add("Global", "AllowedResourceNamespaces", "%v", err)
	}
	if g.NodeSecurityGroupRulesPerNamespace < -1 {
		ps.Add("Global", "NodeSecurityGroupRulesPerNamespace", "must be -1 (no limit), 0 (the default, %d) or more, not %d", defaultRulesPerNamespace, g.NodeSecurityGroupRulesPerNamespace)
	}
}

// validateGlobalSettings checks the other [Global] values: node IP families, ARNs, the
// shared health probe, topology pattern, NLB group mode and instance cache TTL.
func (c *Config) validateGlobalSettings(ps *config.Problems) {
	g := c.Global
	for _, f := range g.NodeIPFamilies {
		if f != "ipv4" && f != "ipv6" {
			ps.Add("Global", "NodeIPFamilies", "must be ipv4 or ipv6, not %q", f)
		}
	}
	if g.RoleARN != "" && !strings.HasPrefix(g.RoleARN, "arn:") {
		ps.Add("Global", "RoleARN", "is not an ARN (arn:aws:iam::<account>:role/<name>)")
	}
	if g.SourceARN != "" && !strings.HasPrefix(g.SourceARN, "arn:") {
		ps.Add("Global", "SourceARN", "is not an ARN (the aws:SourceArn the role's trust policy expects)")
	}
	switch g.ClusterServiceLoadBalancerHealthProbeMode {
	case "", probeModeServiceNodePort, probeModeShared:
	default:
		ps.Add("Global", "ClusterServiceLoadBalancerHealthProbeMode", "must be %s or %s (as upstream, case-sensitive)", probeModeShared, probeModeServiceNodePort)
	}
	if _, err := topologyPattern(g.SupportedTopologyInstanceTypePattern); err != nil {
		ps.Add("Global", "SupportedTopologyInstanceTypePattern", "is not a regular expression (Go syntax, as upstream): %v", err)
	}
	if m := g.NLBSecurityGroupMode; m != "" && m != nlbGroupModeManaged {
		ps.Add("Global", "NLBSecurityGroupMode", "must be %s or empty (as upstream, case-sensitive), not %q", nlbGroupModeManaged, m)
	}
	if p := g.ClusterServiceSharedLoadBalancerHealthProbePort; p < 0 || p > 65535 {
		ps.Add("Global", "ClusterServiceSharedLoadBalancerHealthProbePort", "must be a port (1-65535), or 0 for kube-proxy's 10256")
	}
	if p := g.ClusterServiceSharedLoadBalancerHealthProbePath; p != "" && !strings.HasPrefix(p, "/") {
		ps.Add("Global", "ClusterServiceSharedLoadBalancerHealthProbePath", "must start with /")
	}
	if g.InstanceCacheTTL.Duration > maxInstanceTTL {
		ps.Add("Global", "InstanceCacheTTL", "must be at most %v: a longer cache hides shut down instances", maxInstanceTTL)
	}
}

// validateOverride checks [ServiceOverride name] (o, its Service and Region trimmed in place);
// seen holds the service and region of the sections checked before, to find a duplicate.
func (c *Config) validateOverride(ps *config.Problems, notes *[]string, name string, o *ServiceOverride, seen map[[2]string]string) {
	o.Service, o.Region = strings.TrimSpace(o.Service), strings.TrimSpace(o.Region)
	svc := canonicalService(o.Service)
	switch {
	case o.Service == "":
		ps.AddSub("ServiceOverride", name, "Service", "is required (%s)", serviceNamesHelp)
	case svc == "":
		ps.AddSub("ServiceOverride", name, "Service", "%q is not a service the upstream CCM or ccm calls (%s)", o.Service, serviceNamesHelp)
	case unusedServices[svc] != "":
		*notes = append(*notes, config.Problem{Section: "ServiceOverride", Subsection: name, Key: "Service",
			Msg: config.UpstreamNotice + unusedServices[svc] + "; remove the section"}.String())
	}
	if r := c.region(); svc != "" && svc != serviceIMDS && o.Region != "" && r != "" && o.Region != r {
		*notes = append(*notes, config.Problem{Section: "ServiceOverride", Subsection: name, Key: "Region",
			Msg: fmt.Sprintf("%s is not this cloud's region %s, so the section is not used (as upstream, which applies an override only in its Region); remove it or fix Region", o.Region, r)}.String())
	}
	if svc != "" {
		key := [2]string{svc, o.Region}
		if other, dup := seen[key]; dup {
			ps.AddSub("ServiceOverride", name, "Service", "%s is overridden for region %q by [ServiceOverride %q] too; keep one", o.Service, o.Region, other)
		}
		seen[key] = name
	}
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		ps.AddSub("ServiceOverride", name, "URL", "must be an http(s) URL")
	} else if u.Scheme == "http" && !loopback(u.Hostname()) && !(svc == serviceIMDS && linkLocal(u.Hostname())) {
		ps.AddSub("ServiceOverride", name, "URL", "%q: http:// would send signed requests and STS credentials in clear text; use https:// (plain http is accepted only for a loopback host such as 127.0.0.1, for simulators, and for the metadata service's link-local address)", o.URL)
	}
	if m := strings.TrimSpace(o.SigningMethod); m != "" && !strings.EqualFold(m, "v4") {
		// Upstream has the field but never reads it (its own example is "signing_method"):
		// a config it runs with must load here too. The value is not repeated.
		*notes = append(*notes, config.Problem{Section: "ServiceOverride", Subsection: name, Key: "SigningMethod",
			Msg: config.UpstreamNotice + signingMethodNote}.String())
	}
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

// region is Region, or the region of Zone (upstream's rule, Local and Wavelength Zones
// included), or "" before discovery.
func (c *Config) region() string {
	if c.Global.Region != "" {
		return c.Global.Region
	}
	r, _ := regionOfZone(c.Global.Zone)
	return r
}

// zoneRegionRE is the region at the start of a zone name: letters-dashes, then the region's
// number. us-east-1a, us-west-2-lax-1a (Local Zone) and us-east-1-wl1-bos-wlz-1 (Wavelength
// Zone) all start with their region; the upstream CCM derives it the same way.
var zoneRegionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+`)

// regionOfZone is the region of an availability, Local or Wavelength Zone name.
func regionOfZone(zone string) (string, bool) {
	// A region name alone passes as well: the upstream CCM accepts Zone = us-east-1.
	r := zoneRegionRE.FindString(zone)
	return r, r != ""
}

// linkLocal is whether host is a link-local address (the metadata service's 169.254.169.254
// or fd00:ec2::254 is reached without leaving the instance).
func linkLocal(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLinkLocalUnicast() || ip == netip.MustParseAddr("fd00:ec2::254"))
}

// Services a [ServiceOverride] may name, by their canonical (SDK v1 endpoint) name. The upstream
// CCM, on aws-sdk-go-v2, compares Service with the SDK's service IDs ("EC2", "Elastic Load
// Balancing", ...); earlier versions and ccm's own configs use the endpoint names ("ec2",
// "elasticloadbalancing"). Both are accepted, case-insensitively.
const (
	serviceEC2   = "ec2"
	serviceELB   = "elasticloadbalancing"
	serviceELBv2 = "elasticloadbalancingv2"
	serviceSTS   = "sts"
	serviceIMDS  = "ec2imds"
)

var serviceNames = map[string]string{
	serviceEC2: serviceEC2, strings.ToLower(ec2.ServiceID): serviceEC2,
	serviceELB: serviceELB, "elb": serviceELB, strings.ToLower(elb.ServiceID): serviceELB,
	serviceELBv2: serviceELBv2, strings.ToLower(elbv2.ServiceID): serviceELBv2,
	serviceSTS: serviceSTS, strings.ToLower(sts.ServiceID): serviceSTS,
	serviceIMDS: serviceIMDS,
	// Services the upstream CCM (or the in-tree provider before it) has clients for and ccm
	// does not call: accepted and reported (unusedServices).
	"kms": "kms", "autoscaling": "autoscaling", "auto scaling": "autoscaling", "s3": "s3",
}

var unusedServices = map[string]string{
	"kms":         "ccm does not call KMS (the upstream CCM has a KMS client for volume encryption checks)",
	"autoscaling": "ccm does not call Auto Scaling (the in-tree provider did, for instance groups)",
	"s3":          "ccm does not call S3 (the upstream config's own example names it)",
}

const serviceNamesHelp = `EC2 or ec2, "Elastic Load Balancing" or elasticloadbalancing, "Elastic Load Balancing v2" or elasticloadbalancingv2, STS or sts, ec2imds; KMS, "Auto Scaling" and S3 are accepted and not used`

// canonicalService is the canonical name of a [ServiceOverride] Service, or "" if unknown.
func canonicalService(name string) string {
	return serviceNames[strings.ToLower(strings.TrimSpace(name))]
}

const (
	probeModeShared          = "Shared"
	probeModeServiceNodePort = "ServiceNodePort"
	defaultSharedProbePort   = 10256
	defaultSharedProbePath   = "/healthz"
)

// sharedProbe is the kube-proxy health check port and path that Services with
// externalTrafficPolicy Cluster use in the Shared health probe mode; ok is false otherwise.
func (c *Config) sharedProbe() (port int32, path string, ok bool) {
	g := c.Global
	if g.ClusterServiceLoadBalancerHealthProbeMode != probeModeShared {
		return 0, "", false
	}
	port, path = defaultSharedProbePort, defaultSharedProbePath
	if g.ClusterServiceSharedLoadBalancerHealthProbePort != 0 {
		port = g.ClusterServiceSharedLoadBalancerHealthProbePort
	}
	if g.ClusterServiceSharedLoadBalancerHealthProbePath != "" {
		path = g.ClusterServiceSharedLoadBalancerHealthProbePath
	}
	return port, path, true
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

// checker is the table's checks that need no cloud call; the shared kube-proxy probe port is
// the operator's, so a health check may name it.
func (c *Config) checker() *reach.Checker {
	ch := &reach.Checker{Table: annotations.Table, Prefixes: []string{annotations.Prefix}, Words: []string{annotations.TrafficPort}}
	if p, _, ok := c.sharedProbe(); ok {
		ch.ExtraPorts = []int32{p}
	}
	return ch
}
