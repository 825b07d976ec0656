package dummy

import (
	"bytes"
	"reflect"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/livecfg"
	"github.com/ccm-project/ccm/common/poollb"
)

var _ livecfg.Reloader = (*Cloud)(nil)

// Reload implements livecfg.Reloader: a changed cloud config is read and checked as at
// start-up; its [Pool] sections apply at once (setPools), the other sections at the next start.
// A config that does not pass leaves the pools as they were.
func (c *Cloud) Reload(data []byte) (bool, error) {
	var cfg Config
	if err := config.ReadINI(bytes.NewReader(data), &cfg); err != nil {
		return false, err
	}
	if !reflect.DeepEqual(c.cfg.Global, cfg.Global) || !reflect.DeepEqual(c.cfg.Instance, cfg.Instance) {
		klog.InfoS("The cloud config's [Global] or [Instance] sections changed: they apply at the next start (only [Pool] sections apply while ccm runs)")
	}
	pools, err := ippool.All(cfg.Pool)
	if err != nil {
		return false, err
	}
	return c.lb.setPools(cfg.Pool, pools), nil
}

// setPools puts pools (of config cfg) in use for the next address a Service gets, if cfg
// differs from the running pools. Addresses already handed out stay: a Service whose address
// no pool serving its namespace holds any more keeps it, and is told (poollb.WarnStranded).
func (l *loadBalancers) setPools(cfg map[string]*PoolConfig, pools []*ippool.Pool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !poollb.Replace(ProviderName, &l.poolCfg, &l.pools, cfg, pools) {
		return false
	}
	if l.loaded {
		poollb.WarnStranded(l.c.rec, pools, l.holdings())
		l.updatePoolMetrics()
	}
	return true
}

// holdings are the addresses of this cluster's records, by Service. Callers hold l.mu.
func (l *loadBalancers) holdings() []poollb.Holding {
	var out []poollb.Holding
	for k := range l.records.m {
		r, _ := l.records.get(k)
		if h, ok := poollb.HoldingOf(l.c.ClusterName(), r.Tags, r.IPs); ok {
			out = append(out, h)
		}
	}
	return out
}
