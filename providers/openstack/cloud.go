// Package openstack is the OpenStack provider: Nova servers as Nodes and Octavia load
// balancers with Neutron floating IPs, through gophercloud. It reads the upstream OpenStack
// CCM's cloud.conf and keeps its annotations and names, so a migration is a drop-in.
package openstack

import (
	"bytes"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
	ccmmetrics "github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/common/routes"
	"github.com/ccm-project/ccm/common/svcevents"
)

// ProviderName is what --cloud-provider selects and the build tag that compiles this in.
const ProviderName = "openstack"

func init() {
	provider.MustRegister(provider.Provider{Name: ProviderName, Factory: Factory})
}

// Cloud is the OpenStack cloudprovider.Interface.
type Cloud struct {
	// ClusterScope holds the --cluster-name ccm hands over (UseClusterName) before Initialize.
	ownership.ClusterScope

	cfg  Config
	sess *session
	// annotator writes load-balancer-id and load-balancer-address onto Services (svcannotations.go).
	annotator serviceAnnotator
	lb        *loadBalancers
	events    *svcevents.Recorder // logs only until Initialize connects it; messages redacted
	// rt is the router whose routes ccm manages ([Route] router-id), nil without one.
	rt *routeTable
	// regionalIDs: OS_CCM_REGIONAL=true, new Nodes get openstack://<region>/<server-id> (instances.go).
	regionalIDs bool
}

var (
	_ cloudprovider.Interface     = (*Cloud)(nil)
	_ ownership.ClusterNameScoped = (*Cloud)(nil)
	_ routes.ClusterCIDRScoped    = (*Cloud)(nil)
	_ cloudprovider.InformerUser  = (*Cloud)(nil)
)

// Factory reads and validates cloud.conf. No network I/O: the first cloud call authenticates.
func Factory(r io.Reader) (cloudprovider.Interface, error) { return New(r) }

// New is Factory with the concrete type, for tests.
func New(r io.Reader) (*Cloud, error) {
	c := &Cloud{regionalIDs: os.Getenv(regionalProviderIDEnv) == "true"}
	if r != nil {
		src, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		c.cfg.lineOf, r = config.LineOf(src), bytes.NewReader(src)
	}
	if err := config.ReadINI(r, &c.cfg); err != nil {
		return nil, err
	}
	c.sess = newSession(&c.cfg)
	c.events = svcevents.New(c.cfg.redact)
	c.lb = newLoadBalancers(c)
	if id := c.cfg.Route.RouterID; id != nil && *id != "" {
		c.rt = &routeTable{c: c, routerID: *id}
	}
	ccmmetrics.Register()
	return c, nil
}

// Initialize implements cloudprovider.Interface: it sets up Service events.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.events.Start(b, "openstack-cloud-provider", stop)
	c.annotator.start(b)
	klog.InfoS("OpenStack cloud ready", "authURL", c.cfg.Global.AuthURL, "region", c.cfg.Global.Region, "loadBalancer", c.cfg.LoadBalancer.Enabled,
		"regionalProviderIDs", c.regionalIDs)
}

// event records an event on svc (redacted), and logs it either way.
func (c *Cloud) event(svc *v1.Service, typ, reason, msg string) {
	c.events.Event(svc, typ, reason, msg)
}

// LoadBalancer implements cloudprovider.Interface.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	return c.lb, c.cfg.LoadBalancer.Enabled
}

// Instances implements cloudprovider.Interface: InstancesV2 is used instead.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 implements cloudprovider.Interface.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return &instances{c: c}, true }

// Zones implements cloudprovider.Interface: not used with InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters implements cloudprovider.Interface.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface: true once ccm has handed over a checked
// --cluster-name, which scopes every load balancer, floating IP and security group.
func (c *Cloud) HasClusterID() bool { return c.ClusterScope.HasClusterID() }
