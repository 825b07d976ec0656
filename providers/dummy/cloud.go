// Package dummy is the bare-metal provider: machines come from a static inventory and load
// balancer addresses from configured pools. It needs no cloud, which also makes it the
// provider of the local demo and the reference a new provider copies.
package dummy

import (
	"io"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
	ccmmetrics "github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/common/svcevents"
)

// ProviderName is what --cloud-provider selects and the build tag that compiles this in.
const ProviderName = "dummy"

func init() {
	// check-config runs the Factory: it reads and validates everything and touches nothing.
	provider.MustRegister(provider.Provider{Name: ProviderName, Factory: Factory})
}

var registerMetrics sync.Once

var inventoryReloadErrors = metrics.NewCounter(&metrics.CounterOpts{
	Namespace:      "ccm",
	Subsystem:      "dummy",
	Name:           "inventory_reload_errors_total",
	Help:           "Failed re-reads of the dummy inventory file; the previous inventory is kept.",
	StabilityLevel: metrics.ALPHA,
})

// Cloud is the dummy cloudprovider.Interface.
type Cloud struct {
	// ClusterScope holds the checked --cluster-name ccm hands over before Initialize; records
	// are owned per cluster, so without one there is no cluster ID.
	ownership.ClusterScope
	cfg       Config
	inventory *inventory
	lb        *loadBalancers
	client    kubernetes.Interface
	meta      metadata.Interface // the store's writes, answered with metadata only
	// store, when set before the first load balancer call, replaces the default: ConfigMaps in
	// kube-system with an API client, memory without one.
	store Store
	rec   *svcevents.Recorder // Events on Services (repairs); logs only until Initialize
}

var (
	_ cloudprovider.Interface     = (*Cloud)(nil)
	_ ownership.ClusterNameScoped = (*Cloud)(nil)
)

// Factory reads and validates the config. It does no I/O beyond reading the inventory file
// and starts nothing: Initialize does that.
func Factory(r io.Reader) (cloudprovider.Interface, error) {
	return New(r)
}

// New is Factory with the concrete type, for tests.
func New(r io.Reader) (*Cloud, error) {
	c := &Cloud{rec: svcevents.New(nil)} // no secrets in this provider's messages
	if err := config.ReadINI(r, &c.cfg); err != nil {
		return nil, err
	}
	inv, err := newInventory(&c.cfg)
	if err != nil {
		return nil, err
	}
	c.inventory = inv
	c.lb = newLoadBalancers(c)
	registerMetrics.Do(func() {
		ccmmetrics.Register()
		legacyregistry.MustRegister(inventoryReloadErrors)
	})
	return c, nil
}

// Initialize implements cloudprovider.Interface: it gets the API client and starts the
// inventory watcher, tied to stop.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	client, err := b.Client("dummy-cloud-provider")
	if err != nil {
		klog.ErrorS(err, "No API client; load balancer addresses will not be learned from Services")
	} else {
		c.client = client
		if cfg, err := b.Config("dummy-cloud-provider"); err == nil {
			c.meta, err = metadata.NewForConfig(cfg)
			if err != nil {
				klog.ErrorS(err, "No metadata client; the load balancer store's writes are answered with whole ConfigMaps")
			}
		}
	}
	c.rec.Start(b, "dummy-cloud-provider", stop)
	go c.inventory.watch(c.cfg.Global.InventoryRefresh.Duration, stop)
	klog.InfoS("Dummy cloud ready", "pools", len(c.cfg.Pool), "inventory", c.cfg.Global.Inventory)
}

// UseStore makes the cloud keep load balancer records in s (tests and the conformance suite).
func (c *Cloud) UseStore(s Store) { c.store = s }

func (c *Cloud) newStore(clusterName string) Store {
	switch {
	case c.store != nil:
		return c.store
	case c.client != nil:
		s := newConfigMapStore(c.client, "kube-system", clusterName)
		s.meta = c.meta
		return s
	default:
		return NewMemStore()
	}
}

// LoadBalancer implements cloudprovider.Interface; there is one when ccm started with pools
// (the service controller starts or not then: a first pool added live needs a restart).
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, len(c.cfg.Pool) > 0 }

// Instances implements cloudprovider.Interface: not supported, InstancesV2 is.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 implements cloudprovider.Interface.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return instances{c}, true }

// Zones implements cloudprovider.Interface: not used with InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters implements cloudprovider.Interface.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes implements cloudprovider.Interface: bare metal has no route tables to program.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface: true once ccm has handed over a checked
// cluster name (UseClusterName); the library then refuses to run without --allow-untagged-cloud.
func (c *Cloud) HasClusterID() bool { return c.ClusterScope.HasClusterID() }
