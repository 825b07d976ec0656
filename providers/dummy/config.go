package dummy

import (
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ippool"
)

// Config is the dummy provider's cloud-config (INI). See docs/providers/dummy.md.
type Config struct {
	Global struct {
		// Inventory is an optional file holding more [Instance] sections; it is re-read when it
		// changes, so instances can come, go and shut down while the CCM runs.
		Inventory        string
		InventoryRefresh config.Duration `gcfg:"inventory-refresh"`
		Region           string          // default region for instances that name none
		Zone             string          // default zone
		InstanceType     string          `gcfg:"instance-type"` // default instance type
	}
	Instance map[string]*InstanceConfig // [Instance "node-name"]
	Pool     map[string]*PoolConfig     // [Pool "name"]
}

// InstanceConfig is one machine of the inventory, keyed by its node name.
type InstanceConfig struct {
	ProviderID   string   `gcfg:"provider-id"`
	InternalIP   []string `gcfg:"internal-ip"`
	ExternalIP   []string `gcfg:"external-ip"`
	Hostname     string
	InstanceType string `gcfg:"instance-type"`
	Zone         string
	Region       string
	State        string   // running (default), shutdown, gone, error (look-ups fail, as in a cloud outage)
	Label        []string // extra Node labels, key=value

}

// PoolConfig is a pool of load balancer addresses.
type PoolConfig = ippool.Config

// Instance states.
const (
	StateRunning  = "running"
	StateShutdown = "shutdown"
	StateGone     = "gone"
	StateError    = "error"
)

// SetDefaults implements config.Defaulter.
func (c *Config) SetDefaults() {
	c.Global.InventoryRefresh = config.Duration{Duration: 5 * time.Second}
	c.Global.Region = "dummy-region"
	c.Global.Zone = "dummy-zone"
	c.Global.InstanceType = "dummy.standard"
}

// Validate implements config.Validator.
func (c *Config) Validate() config.Problems {
	var ps config.Problems
	if c.Global.Inventory != "" {
		if err := config.StatReferenced("[Global] inventory", c.Global.Inventory); err != nil {
			ps.Add("Global", "inventory", "cannot read inventory file: %v", err)
		}
	}
	if c.Global.InventoryRefresh.Duration < time.Second {
		ps.Add("Global", "inventory-refresh", "must be at least 1s")
	}
	validateInstances(c.Instance, &ps)
	for name, p := range c.Pool {
		if len(p.CIDR) == 0 && len(p.Range) == 0 {
			ps.AddSub("Pool", name, "cidr", "a pool needs at least one cidr or range")
		}
		if _, err := ippool.New(name, p); err != nil {
			ps.AddSub("Pool", name, err.Key, "%s", err.Msg)
		}
	}
	return ps
}

func validateInstances(instances map[string]*InstanceConfig, ps *config.Problems) {
	for name, in := range instances {
		for _, key := range []struct {
			name string
			ips  []string
		}{{"internal-ip", in.InternalIP}, {"external-ip", in.ExternalIP}} {
			for _, ip := range key.ips {
				if _, err := netip.ParseAddr(ip); err != nil {
					ps.AddSub("Instance", name, key.name, "%q is not an IP address", ip)
				}
			}
		}
		for _, l := range in.Label {
			k, v, ok := strings.Cut(l, "=")
			errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
			if !ok || len(errs) > 0 {
				ps.AddSub("Instance", name, "label", "%q is not a label key=value: %s", l, strings.Join(errs, "; "))
			}
		}
		switch strings.ToLower(in.State) {
		case "", StateRunning, StateShutdown, StateGone, StateError:
		default:
			ps.AddSub("Instance", name, "state", "must be running, shutdown, gone or error, not %q", in.State)
		}
	}
}
