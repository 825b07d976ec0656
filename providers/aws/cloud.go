// Package aws is the AWS provider, on aws-sdk-go-v2: EC2 instances for Nodes, classic Elastic
// Load Balancers and Network Load Balancers (the type annotation) for Services, with their
// security groups and node group rules, and VPC route tables for Pod routes. Its cloud-config
// keeps the upstream AWS CCM's [Global] keys and [ServiceOverride] sections, so a migration is a
// drop-in.
package aws

import (
	"context"
	"io"
	"net/netip"
	"sync"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
	ccmmetrics "github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

// ProviderName is what --cloud-provider selects and the build tag that compiles this in.
const ProviderName = "aws"

const (
	defaultInstanceTTL = 10 * time.Second
	maxInstanceTTL     = 5 * time.Minute
)

func init() {
	provider.MustRegister(provider.Provider{Name: ProviderName, Factory: Factory})
}

// Cloud is the aws cloudprovider.Interface.
type Cloud struct {
	cfg Config

	once    sync.Once
	initErr error
	api     *clients
	inst    *awsread.InstanceCache
	dns     *awsread.DNSBatcher
	lb      *loadBalancers
	topo    *nodeTopology       // the topology.k8s.aws/* Node labels
	events  *svcevents.Recorder // Service Events: drift repairs, recreations
	retry   retryPolicy         // the SDK's retries (defaultRetry; tests shorten the back-off)

	// What makes a route this cluster's (routes.go): --cluster-cidr's CIDRs (UseClusterCIDRs)
	// and the cluster's Nodes (SetInformers; nil until the library hands the informers over).
	clusterCIDRs []netip.Prefix
	nodes        corelisters.NodeLister
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// Factory reads and validates the config; it does no network I/O and starts nothing.
func Factory(r io.Reader) (cloudprovider.Interface, error) { return New(r) }

// New is Factory with the concrete type, for tests.
func New(r io.Reader) (*Cloud, error) {
	c := &Cloud{events: svcevents.New(redactText), retry: defaultRetry}
	if err := config.ReadINI(r, &c.cfg); err != nil {
		return nil, err
	}
	ccmmetrics.Register()
	return c, nil
}

// useRetry sets the SDK's retry policy; it must come before the clients are built (Initialize).
func (c *Cloud) useRetry(p retryPolicy) { c.retry = p }

// Initialize implements cloudprovider.Interface: it builds the SDK clients (no call is made
// yet; the first API call happens when a controller asks).
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.events.Start(b, "cloud-controller-manager", stop)
	if err := c.init(); err != nil {
		klog.ErrorS(err, "AWS clients not ready; every cloud call will fail until the config is fixed")
		return
	}
	table := c.cfg.Global.RouteTableID
	if table == "" {
		table = "tagged kubernetes.io/cluster/" + c.cfg.ClusterID()
	}
	klog.InfoS("AWS cloud ready", "region", c.cfg.region(), "zone", c.cfg.Global.Zone, "cluster", c.cfg.ClusterID(),
		"ec2Endpoint", c.cfg.endpoint(serviceEC2), "routeTable", table+" (used only with --configure-cloud-routes and --cluster-cidr)")
}

// Prepare implements provider.Preparer: before the controllers start, it asks IMDS and EC2
// for what the config leaves out (region and zone, cluster ID), so a failure stops ccm with a
// clear error instead of a cloud that is never ready.
func (c *Cloud) Prepare(context.Context) error { return c.init() }

func (c *Cloud) init() error {
	c.once.Do(func() {
		pattern, err := topologyPattern(c.cfg.Global.SupportedTopologyInstanceTypePattern)
		if err != nil {
			c.initErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
		defer cancel()
		self, err := c.discoverRegion(ctx)
		if err != nil {
			c.initErr = err
			return
		}
		api, err := newClients(context.Background(), &c.cfg, c.retry)
		if err != nil {
			c.initErr = err
			return
		}
		if self != "" {
			if err := c.discoverCluster(ctx, api.ec2, self); err != nil {
				c.initErr = err
				return
			}
		}
		c.api = api
		c.inst = awsread.NewInstanceCache(api.ec2, c.cfg.Global.InstanceCacheTTL.Duration)
		c.dns = awsread.NewDNSBatcher(c.inst, c.vpc())
		c.lb = newLoadBalancers(c)
		c.topo = newNodeTopology(api.ec2, c.cfg.region(), pattern)
	})
	return c.initErr
}

// LoadBalancer implements cloudprovider.Interface.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.init() != nil {
		return nil, false
	}
	return c.lb, true
}

// Instances implements cloudprovider.Interface: InstancesV2 is used instead.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 implements cloudprovider.Interface.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if c.init() != nil {
		return nil, false
	}
	return instances{c}, true
}

// Zones implements cloudprovider.Interface: not used with InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters implements cloudprovider.Interface.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes implements cloudprovider.Interface. The library starts the route controller only
// with --configure-cloud-routes and a --cluster-cidr; otherwise routes stay untouched.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.init() != nil {
		return nil, false
	}
	return vpcRoutes{c}, true
}

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface. Without KubernetesClusterID in the config
// the ID is the running instance's cluster tag, read by init.
func (c *Cloud) HasClusterID() bool {
	if c.init() != nil {
		return false
	}
	return c.cfg.ClusterID() != ""
}
