package openstack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
)

// A snapshot is the observed state of a cluster's load balancers read in bulk: the cluster's
// load balancers (one list, kept by lbOfCluster), and the project's listeners, pools, health
// monitors and floating IPs (one list each). A resync of N unchanged Services then costs these
// five lists plus one member list per listener, instead of five reads per Service.
//
// A sync uses a snapshot only if it was read after the Service's previous sync ended (so it
// shows that sync's writes, and any change made since then by hand is either in it or found by
// the next sync) and is younger than snapshotMaxAge; else it reads a new one. Anything a
// snapshot lacks (a load balancer created since, one not tagged for the cluster, a load
// balancer not ACTIVE) is read object by object as before, and what a repair acts on is read
// again first.
type snapshot struct {
	at        time.Time
	lbs       map[string]*loadbalancers.LoadBalancer // ACTIVE, cluster-tagged, by name
	lbIDs     map[string]bool
	named     map[string]bool                    // the names of the cluster's load balancers in any state (repoint.go)
	listeners map[string][]listeners.Listener    // by load balancer ID
	pools     map[string][]pools.Pool            // by load balancer ID
	monitors  map[string]*monitors.Monitor       // by ID
	fips      map[string]*floatingips.FloatingIP // by port ID
	// With manage-security-groups: the project's groups and their ingress rules.
	withSG bool
	groups map[string][]groups.SecGroup    // by name
	rules  map[string][]rules.SecGroupRule // ingress, by group ID
}

// snapshotMaxAge bounds how stale a snapshot a sync may use.
const snapshotMaxAge = 30 * time.Second

// snapshots is the per-cluster snapshot and when each Service's last sync ended.
type snapshots struct {
	mu    sync.Mutex
	by    map[string]*snapshot // cluster -> latest
	ended map[string]time.Time // cluster/ns/name -> end of its last sync
}

func (s *snapshots) syncEnded(cluster, svc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = map[string]time.Time{}
	}
	s.ended[cluster+"/"+svc] = time.Now()
}

// get returns a snapshot the Service's sync may use, reading a new one if needed. Reads are
// serialised per process: concurrent syncs wait for one bulk read instead of each making one.
func (s *snapshots) get(ctx context.Context, cl *clients, cluster, svc string, withSG bool) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.by[cluster]
	if cur != nil && cur.withSG == withSG && cur.at.After(s.ended[cluster+"/"+svc]) && time.Since(cur.at) < snapshotMaxAge {
		return cur, nil
	}
	next, err := readSnapshot(ctx, cl, cluster, withSG)
	if err != nil {
		return nil, err
	}
	if s.by == nil {
		s.by = map[string]*snapshot{}
	}
	s.by[cluster] = next
	return next, nil
}

func readSnapshot(ctx context.Context, cl *clients, cluster string, withSG bool) (*snapshot, error) {
	s := &snapshot{at: time.Now(), lbs: map[string]*loadbalancers.LoadBalancer{}, listeners: map[string][]listeners.Listener{},
		lbIDs: map[string]bool{}, named: map[string]bool{}, pools: map[string][]pools.Pool{}, monitors: map[string]*monitors.Monitor{}, fips: map[string]*floatingips.FloatingIP{}}
	// Every load balancer of the project, kept if it is the cluster's: ccm's cluster tag, or
	// the upstream CCM's name and description for this cluster (a takeover then reads in bulk
	// too; upstream's tags cannot be filtered on).
	lp, err := loadbalancers.List(cl.lb, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the load balancers: %w", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(lp)
	if err != nil {
		return nil, err
	}
	for i := range lbs {
		if !lbOfCluster(cluster, &lbs[i]) {
			continue
		}
		s.named[lbs[i].Name] = true
		if lbs[i].ProvisioningStatus == "ACTIVE" {
			s.lbs[lbs[i].Name] = &lbs[i]
			s.lbIDs[lbs[i].ID] = true
		}
	}
	lsp, err := listeners.List(cl.lb, listeners.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing listeners: %w", err)
	}
	ls, err := listeners.ExtractListeners(lsp)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		for _, lb := range l.Loadbalancers {
			s.listeners[lb.ID] = append(s.listeners[lb.ID], l)
		}
	}
	pp, err := pools.List(cl.lb, pools.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pools: %w", err)
	}
	ps, err := pools.ExtractPools(pp)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for _, lb := range p.Loadbalancers {
			s.pools[lb.ID] = append(s.pools[lb.ID], p)
		}
	}
	mp, err := monitors.List(cl.lb, monitors.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing health monitors: %w", err)
	}
	ms, err := monitors.ExtractMonitors(mp)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		s.monitors[ms[i].ID] = &ms[i]
	}
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{})
	if err != nil {
		return nil, err
	}
	for i := range fips {
		if fips[i].PortID != "" {
			s.fips[fips[i].PortID] = &fips[i]
		}
	}
	if !withSG {
		return s, nil
	}
	s.withSG, s.groups, s.rules = true, map[string][]groups.SecGroup{}, map[string][]rules.SecGroupRule{}
	gp, err := groups.List(cl.network, groups.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing security groups: %w", err)
	}
	gs, err := groups.ExtractGroups(gp)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		s.groups[g.Name] = append(s.groups[g.Name], g)
	}
	rp, err := rules.List(cl.network, rules.ListOpts{Direction: "ingress"}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing security group rules: %w", err)
	}
	rs, err := rules.ExtractRules(rp)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		s.rules[r.SecGroupID] = append(s.rules[r.SecGroupID], r)
	}
	return s, nil
}

// group returns the snapshot's groups named name, and whether the snapshot has groups at all.
func (s *snapshot) group(name string) ([]groups.SecGroup, bool) {
	if s == nil || !s.withSG {
		return nil, false
	}
	return s.groups[name], true
}

// has: the snapshot shows load balancer lbID (so its listeners, pools and floating IP too).
func (s *snapshot) has(lbID string) bool {
	return s != nil && s.lbIDs[lbID]
}

// monitor is the health monitor id from the snapshot, or nil.
func (s *snapshot) monitor(id string) *monitors.Monitor {
	if s == nil {
		return nil
	}
	return s.monitors[id]
}
