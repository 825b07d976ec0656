// Package vsphere is the vSphere provider: Nodes are VMs found through govmomi with one
// session per vCenter and one PropertyCollector read per datacenter for all of them; zones
// and regions come from vSphere tags; load balancer addresses come from IP pools configured
// in vsphere.conf (vSphere without NSX has no load balancer of its own).
package vsphere

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	ccmmetrics "github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/provider"
)

// ProviderName is what --cloud-provider selects and the build tag that compiles this in.
const ProviderName = "vsphere"

func init() {
	provider.MustRegister(provider.Provider{Name: ProviderName, Factory: Factory})
}

// Cloud is the vSphere cloudprovider.Interface.
type Cloud struct {
	// ClusterScope holds --cluster-name as ccm checked it (ownership.ClusterNameScoped): the
	// load balancer records carry it, so two clusters sharing a vCenter never take each
	// other's.
	ownership.ClusterScope

	cfg     *Config
	conns   []*conn
	inv     *inventory
	zones   *zoner
	rules   addressRules
	secrets *secretCreds
	lb      *loadBalancers

	// stopped is closed once the logouts after stop are done; ccm waits for it before it exits
	// (provider.Stopper). Set by Initialize.
	stopped atomic.Pointer[chan struct{}]
}

var (
	_ cloudprovider.Interface     = (*Cloud)(nil)
	_ ownership.ClusterNameScoped = (*Cloud)(nil)
	_ provider.Stopper            = (*Cloud)(nil)
)

// Factory reads and validates vsphere.conf (INI or YAML). It opens no connection.
func Factory(r io.Reader) (cloudprovider.Interface, error) { return New(r) }

// New is Factory with the concrete type, for tests.
func New(r io.Reader) (*Cloud, error) {
	cfg, err := readConfig(r)
	if err != nil {
		return nil, err
	}
	c := &Cloud{cfg: cfg, zones: newZoner(cfg), rules: newAddressRules(cfg)}
	c.secrets = newSecretCreds(func(host string) {
		if cn := c.conn(host); cn != nil {
			cn.reset()
		}
	})
	for _, vc := range cfg.vcenters() {
		primary, fallback := c.credsFor(vc)
		c.conns = append(c.conns, &conn{vc: vc, creds: primary, fallback: fallback})
	}
	c.inv = newInventory(c.conns)
	c.lb = newLoadBalancers(c)
	ccmmetrics.Register()
	return c, nil
}

// credsFor returns where a vCenter's credentials come from, in the upstream CCM's order: the
// file's user and password first, and the Secret (or secrets directory) when the file has
// none or vCenter refuses them (fallback is nil when there is nothing to fall back to).
func (c *Cloud) credsFor(vc vcenter) (primary, fallback func() (string, string, error)) {
	switch {
	case vc.SecretName != "":
		fallback = func() (string, string, error) { return c.secrets.lookup(vc.Server, vc.SecretNamespace, vc.SecretName) }
	case vc.SecretsDirectory != "":
		fallback = func() (string, string, error) { return lookupDir(vc.SecretsDirectory, vc.Server) }
	}
	if vc.User == "" || vc.Password == "" {
		return fallback, nil
	}
	return func() (string, string, error) { return vc.User, vc.Password, nil }, fallback
}

func (c *Cloud) conn(server string) *conn {
	for _, cn := range c.conns {
		if cn.vc.Server == server {
			return cn
		}
	}
	return nil
}

// Initialize implements cloudprovider.Interface: it starts the Secret watches and the
// session keep-alive, tied to stop. The first vCenter call logs in; when stop closes the
// provider logs out of every vCenter (logout.go).
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	cfg, err := b.Config("vsphere-cloud-provider")
	if err != nil {
		klog.ErrorS(err, "No API client: credentials from Secrets cannot be read")
	} else {
		for _, cn := range c.conns {
			if cn.vc.SecretName != "" {
				c.secrets.watch(cfg, cn.vc.SecretNamespace, cn.vc.SecretName, stop)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	c.stopped.Store(&stopped)
	go func() { <-stop; cancel(); c.logoutAll(); close(stopped) }()
	go func() {
		t := time.NewTicker(5 * time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, cn := range c.conns {
					cn.keepAlive(ctx, 5*time.Minute)
				}
			}
		}
	}()
	if client, err := b.Client("vsphere-cloud-provider"); err == nil {
		c.lb.client = client // before the first load balancer call, which learns the statuses
	}
	c.lb.rec.Start(b, "vsphere-cloud-provider", stop)
	klog.InfoS("vSphere cloud ready", "vcenters", len(c.conns), "pools", len(c.cfg.Pool))
}

// LoadBalancer implements cloudprovider.Interface: addresses from [Pool] sections; without
// pools there is none (vSphere without NSX has no load balancer). It is the pools ccm started
// with: the service controller starts or not then, so a first pool added live needs a restart.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	return c.lb, len(c.cfg.Pool) > 0
}

// Instances implements cloudprovider.Interface: InstancesV2 is used instead.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 implements cloudprovider.Interface.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return instances{c}, true }

// Zones implements cloudprovider.Interface: not used with InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters implements cloudprovider.Interface.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes implements cloudprovider.Interface: VM networks need no routes from the CCM.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID implements cloudprovider.Interface: true once ccm handed over a checked
// --cluster-name (UseClusterName).
func (c *Cloud) HasClusterID() bool { return c.ClusterScope.HasClusterID() }

// redact hides the configured vCenter users and passwords in a Service Event's text.
func (c *Cloud) redact(s string) string {
	for _, cn := range c.conns {
		for _, secret := range []string{cn.vc.User, cn.vc.Password} {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "***")
			}
		}
	}
	return s
}

// String never shows credentials (a %v of the Cloud in a log line must be safe).
func (c *Cloud) String() string { return fmt.Sprintf("vsphere(%d vCenters)", len(c.conns)) }

// Stopped implements provider.Stopper: closed when the logouts after stop are done; nil before
// Initialize.
func (c *Cloud) Stopped() <-chan struct{} {
	if p := c.stopped.Load(); p != nil {
		return *p
	}
	return nil
}
