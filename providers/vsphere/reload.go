package vsphere

import (
	"bytes"
	"errors"
	"reflect"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/livecfg"
	"github.com/ccm-project/ccm/common/poollb"
)

var _ livecfg.Reloader = (*Cloud)(nil)

// Reload implements livecfg.Reloader: a changed vsphere.conf (INI or YAML) is read and checked
// as at start-up; its pools apply at once (setPools), the other sections (vCenters,
// credentials, labels, node rules) at the next start. A config that does not pass leaves the
// pools as they were.
func (c *Cloud) Reload(data []byte) (bool, error) {
	cfg, err := readConfig(bytes.NewReader(data))
	if err != nil {
		// The error becomes a log line and an Event: no configured user or password in it.
		return false, errors.New(c.redact(err.Error()))
	}
	if !reflect.DeepEqual(c.cfg.Global, cfg.Global) || !reflect.DeepEqual(c.cfg.VirtualCenter, cfg.VirtualCenter) ||
		c.cfg.Labels != cfg.Labels || c.cfg.Nodes != cfg.Nodes {
		klog.InfoS("The cloud config's sections other than the pools changed: they apply at the next start (only pools apply while ccm runs)")
	}
	pools, err := ippool.All(cfg.Pool)
	if err != nil {
		return false, err
	}
	return c.lb.setPools(cfg.Pool, pools, c.ClusterName()), nil
}

// setPools puts pools (of config cfg) in use for the next address a Service gets, if cfg
// differs from the running pools. Addresses already handed out stay: a Service of cluster
// whose address no pool serving its namespace holds any more keeps it, and is told
// (poollb.WarnStranded).
func (l *loadBalancers) setPools(cfg map[string]*PoolConfig, pools []*ippool.Pool, cluster string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !poollb.Replace(ProviderName, &l.poolCfg, &l.pools, cfg, pools) {
		return false
	}
	if l.loaded {
		var hs []poollb.Holding
		for _, r := range l.records {
			if h, ok := poollb.HoldingOf(cluster, r.tags(), r.IPs); ok {
				hs = append(hs, h)
			}
		}
		poollb.WarnStranded(l.rec, pools, hs)
		l.poolMetrics()
	}
	return true
}
