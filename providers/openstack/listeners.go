package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

// member is one backend: a node address of the load balancer's family.
type member struct {
	Node, Address string
}

// nodeIPs caches node name -> addresses found through the cloud, for Nodes whose status has
// none yet (the node controller fills it in later).
var nodeIPs sync.Map

// members picks each node's InternalIP of the load balancer's family, sorted.
func (l *loadBalancers) members(ctx context.Context, nodes []*v1.Node, spec *lbSpec) ([]member, error) {
	var out []member
	for _, n := range nodes {
		addrs := n.Status.Addresses
		if len(addrs) == 0 {
			if v, ok := nodeIPs.Load(n.Name); ok {
				addrs = v.([]v1.NodeAddress)
			} else {
				md, err := (&instances{c: l.c}).InstanceMetadata(ctx, n)
				if err != nil {
					return nil, fmt.Errorf("addresses of node %s: %w", n.Name, err)
				}
				addrs = md.NodeAddresses
				nodeIPs.Store(n.Name, addrs)
			}
		}
		found := false
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != v1.NodeInternalIP || err != nil || ip.Is6() != (spec.family == v1.IPv6Protocol) {
				continue
			}
			out = append(out, member{Node: n.Name, Address: ip.String()})
			found = true
			break
		}
		if !found {
			klog.InfoS("Node has no internal address of the load balancer's family; not a member", "node", n.Name, "family", spec.family)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

func (ls listenerSpec) name() string { return fmt.Sprintf("listener_%s_%d", ls.Protocol, ls.Port) }

// memberOpts are the members of ls for ms, on the spec's member subnet except where kept
// (address -> subnet: a member already on a subnet that also satisfies the default, see
// keptSubnets). The set's tag is computed as if all were on the member subnet, as planPool
// compares them.
func (ls listenerSpec) memberOpts(spec *lbSpec, ms []member, kept map[string]string) []pools.CreateMemberOpts {
	var out []pools.CreateMemberOpts
	var keys []memberKey
	for _, m := range ms {
		o := pools.CreateMemberOpts{Name: m.Node, Address: m.Address, ProtocolPort: ls.NodePort, SubnetID: spec.memberSubnetID}
		mp := 0
		if ls.Monitor != nil && ls.Monitor.Port != 0 {
			o.MonitorPort, mp = &ls.Monitor.Port, ls.Monitor.Port
		}
		keys = append(keys, memberKey{o.Address, o.SubnetID, o.ProtocolPort, mp})
		if sub, ok := kept[m.Address]; ok {
			o.SubnetID = sub
		}
		out = append(out, o)
	}
	tag := membersTag(keys) // each member carries the fingerprint of the set (see planPool)
	for i := range out {
		out[i].Tags = []string{tag}
	}
	return out
}

func listenerCreateOpts(spec *lbSpec, ls listenerSpec, ms []member, desc string) listeners.CreateOpts {
	pool := &pools.CreateOpts{
		Name: "pool_" + ls.name(), Description: desc, LBMethod: pools.LBMethod(ls.Method), Protocol: pools.Protocol(ls.PoolProtocol),
		Members: ls.memberOpts(spec, ms, nil),
	}
	if ls.Persistence != "" {
		pool.Persistence = persistenceOpts(ls.Persistence)
	}
	if m := ls.Monitor; m != nil {
		pool.Monitor = monitorCreateOpts(m)
	}
	opts := listeners.CreateOpts{
		Name: ls.name(), Description: desc, Protocol: listeners.Protocol(ls.Protocol), ProtocolPort: ls.Port,
		AllowedCIDRs: ls.SourceRanges, DefaultPool: pool,
	}
	opts.ConnLimit, opts.TimeoutClientData, opts.TimeoutMemberConnect, opts.TimeoutMemberData, opts.TimeoutTCPInspect = ls.Limits.opts()
	if ls.InsertXFF {
		opts.InsertHeaders = withXFF(nil, true)
	}
	opts.DefaultTlsContainerRef = ls.TLSRef
	return opts
}

// syncListeners makes the load balancer's listeners match spec: observe (the listeners and
// pools of the load balancer, listed once; members and monitor of each kept listener), plan
// (per listener: keep, update in place, replace or create; per kept listener: planPool),
// apply. A listener of the Service whose description (its ownership mark with the fingerprint
// of its spec) differs is updated in place and given the current description; it is replaced
// only when its pool's protocol must change, which Octavia cannot do. A missing one is created
// with its pool, members and monitor. A kept one is compared with Octavia all the same, and
// only its differences are written. Nothing is written when nothing differs. Out-of-band
// changes found are added to the run's report. Children Octavia left stuck (stuck.go) stop the
// sync before any write to them.
//
// On a load balancer the Service does not own (adopted: named by load-balancer-id and allowed
// by the operator), only listeners whose description proves they are this Service's are
// changed or deleted; every other listener, pool and monitor is left as it is. On the
// Service's own load balancer, listeners marked as another Service's are left alone too, and
// so are those no CCM made (listenerorigin.go), with a Warning.
func (r *svcRun) syncListeners(ctx context.Context, lbID string, spec *lbSpec, ms []member, adopted bool) error {
	l, cl, rep := r.l, r.cl, r.rep
	have, allPools, err := l.listenersAndPools(ctx, cl, lbID, rep.seen)
	if err != nil {
		return err
	}
	plan, err := planListeners(r.id, spec, have, allPools, adopted)
	if err != nil {
		return err
	}
	if err := l.checkStuck(ctx, cl, lbID, stuckChildren(plan, allPools), rep); err != nil {
		return err
	}
	rep.specChanged = rep.specChanged || plan.SpecChanged
	rep.recreated = append(rep.recreated, plan.Recreated...)
	for _, h := range plan.Left {
		rep.left = append(rep.left, leftMessage(spec.name, h))
	}
	for _, d := range plan.Delete {
		if err := l.deleteListener(ctx, cl, lbID, d.Listener, d.WithPool); err != nil {
			return err
		}
	}
	for _, p := range plan.DeletePools {
		if err := pools.Delete(ctx, cl.lb, p.ID).ExtractErr(); err != nil {
			return l.conflict(err, "deleting pool "+p.Name+" without a listener")
		}
		if err := l.waitActive(ctx, cl, lbID); err != nil {
			return err
		}
	}
	poolByID := map[string]*pools.Pool{}
	for i := range allPools {
		poolByID[allPools[i].ID] = &allPools[i]
	}
	s := &listenerSync{run: r, lbID: lbID, spec: spec, ms: ms}
	for _, ls := range spec.listeners {
		if err := s.syncKept(ctx, ls, plan, poolByID); err != nil {
			return err
		}
	}
	for _, ls := range plan.Create {
		var reuse *pools.Pool
		if p, ok := plan.Reuse[ls.key()]; ok {
			reuse = &p
		}
		if err := s.addListener(ctx, ls, reuse); err != nil {
			return err
		}
	}
	rep.repairs = append(rep.repairs, plan.Repairs...)
	return nil
}

// listenerSync is the listener sync of one of the Service's load balancers: the load balancer,
// the spec of its family and the members its pools are to have, the same for each of its
// listeners.
type listenerSync struct {
	run  *svcRun
	lbID string
	spec *lbSpec
	ms   []member
}

// syncKept compares a kept (or relabelled) listener of ls with Octavia and writes only the
// differences, with the current description on a relabelled one.
func (s *listenerSync) syncKept(ctx context.Context, ls listenerSpec, plan listenerPlan, poolByID map[string]*pools.Pool) error {
	l, cl, lbID, spec, ms, rep := s.run.l, s.run.cl, s.lbID, s.spec, s.ms, s.run.rep
	h, kept := plan.Keep[ls.key()]
	hr, relabelled := plan.Relabel[ls.key()]
	if relabelled {
		h = hr
	}
	if !kept && !relabelled {
		return nil
	}
	obs, err := l.observePool(ctx, cl, h, poolByID[h.DefaultPoolID], rep.seen)
	if err != nil {
		return err
	}
	if err := l.checkStuck(ctx, cl, lbID, stuckMembers(ls.key(), obs), rep); err != nil {
		return err
	}
	pp := planPool(ls.key(), wantedPool(spec, ls, ms), obs)
	if relabelled {
		desc := listenerDescription(s.run.id, ls)
		pp.Description = &desc
	}
	if pp.writes() == 0 {
		return nil
	}
	if err := s.applyPool(ctx, ls, h, obs, pp); err != nil {
		return err
	}
	if relabelled {
		klog.InfoS("Updated listener in place", "loadBalancer", spec.name, "listener", h.ID, "port", ls.key())
	} else { // a relabelled listener is taken over or its spec changed: its differences are not drift
		rep.repairs = append(rep.repairs, pp.Repairs...)
	}
	if pp.SetMembers {
		klog.InfoS("Updated load balancer members", "loadBalancer", spec.name, "listener", ls.key(), "members", len(ms))
	}
	return nil
}

// wantedPool is the state a listener of ls with members ms should have.
func wantedPool(spec *lbSpec, ls listenerSpec, ms []member) poolState {
	return poolState{Protocol: ls.Protocol, InsertXFF: ls.InsertXFF, TLSRef: ls.TLSRef, Method: ls.Method, Persistence: ls.Persistence,
		CIDRs: ls.SourceRanges, Monitor: wantedMonitor(ls.Monitor), Members: wantedMembers(spec, ls, ms),
		MemberSubnetAlts: spec.memberSubnetAlts, Limits: ls.Limits, MonitorByAnnotation: ls.Monitor != nil && ls.Monitor.Overridden,
		ListenerUp: wantedUp, PoolUp: wantedUp, MemberSettings: wantedMemberSettings}
}

// addListener creates the listener of ls on an existing load balancer: the listener, then its
// pool, then the pool's monitor and members (applyPool). Octavia builds a listener together
// with its pool only within a load balancer's fully populated create: a listener POST with an
// inline default_pool is answered 500. With reuse (the Service's pool of this listener, left
// without it), the listener is created on that pool, whose members and monitor are then
// compared as a kept listener's.
func (s *listenerSync) addListener(ctx context.Context, ls listenerSpec, reuse *pools.Pool) error {
	l, cl, lbID, spec, ms := s.run.l, s.run.cl, s.lbID, s.spec, s.ms
	opts := listenerCreateOpts(spec, ls, ms, listenerDescription(s.run.id, ls))
	po := opts.DefaultPool
	opts.DefaultPool, opts.LoadbalancerID = nil, lbID
	if reuse != nil {
		opts.DefaultPoolID = reuse.ID
	}
	h, err := listeners.Create(ctx, cl.lb, opts).Extract()
	if err != nil {
		return l.conflict(err, "creating listener "+ls.key())
	}
	if err := l.waitActive(ctx, cl, lbID); err != nil {
		return err
	}
	// What the listener and a new pool were just created with (Octavia's default admin_state_up).
	empty := poolState{CIDRs: ls.SourceRanges, InsertXFF: ls.InsertXFF, TLSRef: ls.TLSRef, Method: ls.Method, Persistence: ls.Persistence, Limits: ls.Limits,
		ListenerUp: wantedUp, PoolUp: wantedUp}
	have := empty
	if reuse != nil {
		obs, err := l.observePool(ctx, cl, *h, reuse, nil)
		if err != nil {
			return err
		}
		// The listener itself was just written as wanted.
		have = obs
		have.CIDRs, have.InsertXFF, have.TLSRef, have.Limits, have.ListenerUp = empty.CIDRs, empty.InsertXFF, empty.TLSRef, empty.Limits, empty.ListenerUp
	} else {
		pool, err := pools.Create(ctx, cl.lb, pools.CreateOpts{ListenerID: h.ID, Name: po.Name, Description: po.Description,
			LBMethod: po.LBMethod, Protocol: po.Protocol, Persistence: po.Persistence}).Extract()
		if err != nil {
			return l.conflict(err, "creating the pool of listener "+ls.key())
		}
		if err := l.waitActive(ctx, cl, lbID); err != nil {
			return err
		}
		h.DefaultPoolID = pool.ID
	}
	pp := planPool(ls.key(), wantedPool(spec, ls, ms), have)
	if pp.writes() == 0 {
		return nil
	}
	if reuse != nil {
		s.run.rep.repairs = append(s.run.rep.repairs, pp.Repairs...)
	}
	return s.applyPool(ctx, ls, *h, have, pp)
}

// listenersAndPools are the load balancer's listeners and pools: from the snapshot if it shows
// the load balancer, else listed.
func (l *loadBalancers) listenersAndPools(ctx context.Context, cl *clients, lbID string, seen *snapshot) ([]listeners.Listener, []pools.Pool, error) {
	if seen.has(lbID) {
		return seen.listeners[lbID], seen.pools[lbID], nil
	}
	pages, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing listeners of %s: %w", lbID, err)
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return nil, nil, err
	}
	ppages, err := pools.List(cl.lb, pools.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing pools of %s: %w", lbID, err)
	}
	ps, err := pools.ExtractPools(ppages)
	return have, ps, err
}

// deleteListener deletes a listener of the Service, with its default pool (and the pool's
// members and monitor) when withPool (planListeners decides: on a load balancer the Service
// does not own, only a pool whose description proves it is the Service's).
func (l *loadBalancers) deleteListener(ctx context.Context, cl *clients, lbID string, h listeners.Listener, withPool bool) error {
	key := listenerKey(h)
	if withPool {
		if err := pools.Delete(ctx, cl.lb, h.DefaultPoolID).ExtractErr(); err != nil {
			return l.conflict(err, "deleting pool of listener "+key)
		}
		if err := l.waitActive(ctx, cl, lbID); err != nil {
			return err
		}
	}
	if err := listeners.Delete(ctx, cl.lb, h.ID).ExtractErr(); err != nil {
		return l.conflict(err, "deleting listener "+key)
	}
	return l.waitActive(ctx, cl, lbID)
}

// ourListeners counts the listeners of load balancer lbID whose description proves they are
// id's.
func (l *loadBalancers) ourListeners(ctx context.Context, cl *clients, lbID string, id ownership.Identity) (int, error) {
	pages, err := listeners.List(cl.lb, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing listeners of %s: %w", lbID, err)
	}
	have, err := listeners.ExtractListeners(pages)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range have {
		if ownership.DescribedBy(id, h.Description) {
			n++
		}
	}
	return n, nil
}

type memberKey struct {
	Address, Subnet   string
	Port, MonitorPort int
}
