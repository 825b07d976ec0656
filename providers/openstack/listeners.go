package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
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

func (ls listenerSpec) memberOpts(spec *lbSpec, ms []member) []pools.CreateMemberOpts {
	var out []pools.CreateMemberOpts
	var keys []memberKey
	for _, m := range ms {
		o := pools.CreateMemberOpts{Name: m.Node, Address: m.Address, ProtocolPort: ls.NodePort, SubnetID: spec.memberSubnetID}
		mp := 0
		if ls.Monitor != nil && ls.Monitor.Port != 0 {
			o.MonitorPort, mp = &ls.Monitor.Port, ls.Monitor.Port
		}
		keys = append(keys, memberKey{o.Address, o.SubnetID, o.ProtocolPort, mp})
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
		Members: ls.memberOpts(spec, ms),
	}
	if m := ls.Monitor; m != nil {
		pool.Monitor = monitors.CreateOpts{Type: m.Type, Delay: m.Delay, Timeout: m.Timeout, MaxRetries: m.MaxRetries, URLPath: m.URLPath}
	}
	return listeners.CreateOpts{
		Name: ls.name(), Description: desc, Protocol: listeners.Protocol(ls.Protocol), ProtocolPort: ls.Port,
		AllowedCIDRs: ls.SourceRanges, DefaultPool: pool,
	}
}

// syncListeners makes the load balancer's listeners match spec: observe (the listeners and
// pools of the load balancer, listed once; members and monitor of each kept listener), plan
// (per listener: keep, replace or create; per kept listener: planPool), apply. A listener
// whose description (the Service's ownership mark with the fingerprint of its spec) differs
// is replaced; a missing one is created with its pool, members and monitor in one call; a
// kept one is compared with Octavia all the same, and only its differences are written.
// Nothing is written when nothing differs. Out-of-band changes found are added to rep.
//
// On a load balancer the Service does not own (adopted: named by load-balancer-id and allowed
// by the operator), only listeners whose description proves they are this Service's are
// changed or deleted; every other listener, pool and monitor is left as it is. On the
// Service's own load balancer, listeners marked as another Service's are left alone too.
func (l *loadBalancers) syncListeners(ctx context.Context, cl *clients, lbID string, id ownership.Identity, spec *lbSpec, ms []member, adopted bool, rep *syncReport) error {
	if rep == nil {
		rep = &syncReport{}
	}
	have, allPools, err := l.listenersAndPools(ctx, cl, lbID, rep.seen)
	if err != nil {
		return err
	}
	poolByID := map[string]*pools.Pool{}
	for i := range allPools {
		poolByID[allPools[i].ID] = &allPools[i]
	}
	want := map[string]listenerSpec{}
	for _, ls := range spec.listeners {
		want[ls.key()] = ls
	}
	kept := map[string]listeners.Listener{}
	for _, h := range have {
		key := fmt.Sprintf("%s/%d", h.Protocol, h.ProtocolPort)
		ls, wanted := want[key]
		owner, role, marked := ownership.ParseDescription(h.Description)
		mine := marked && ownership.DescribedBy(id, h.Description)
		switch {
		case adopted && !mine:
			if wanted {
				return fmt.Errorf("port %s of the load balancer named by annotation %s is taken by a listener this Service does not own", key, annLoadBalancerID)
			}
			continue
		case !mine && marked && owner.Cluster != "":
			// Another Service's (or cluster's) listener on this Service's load balancer (an
			// operator allowed it there): never ours to change.
			if wanted {
				return fmt.Errorf("port %s of this Service's load balancer is taken by a listener it does not own", key)
			}
			continue
		case wanted && mine && role == ls.fingerprint() && h.DefaultPoolID != "":
			kept[key] = h
			continue
		case wanted && !marked && h.DefaultPoolID != "":
			// On the Service's own load balancer, a listener of an earlier ccm (its old
			// "ccm:<fingerprint>" description) or of the upstream CCM (before a migration)
			// gets the current mark instead of being replaced, so traffic is not interrupted.
			relabelled, err := l.relabel(ctx, cl, lbID, id, h, ls)
			if err != nil {
				return err
			}
			if relabelled {
				kept[key] = h
				continue
			}
		}
		if wanted {
			rep.specChanged = true
		}
		if err := l.deleteListener(ctx, cl, lbID, id, h, adopted); err != nil {
			return err
		}
		delete(poolByID, h.DefaultPoolID)
	}
	// A pool of the Service without a listener: its listener was deleted out of band (or a
	// replacement failed half-way). It is deleted; the listener is created again below.
	orphaned := map[string]bool{} // descriptions of the orphaned pools
	for _, p := range allPools {
		if len(p.Listeners) > 0 || poolByID[p.ID] == nil || !ownership.DescribedBy(id, p.Description) {
			continue
		}
		if err := pools.Delete(ctx, cl.lb, p.ID).ExtractErr(); err != nil {
			return l.conflict(err, "deleting pool "+p.Name+" without a listener")
		}
		if err := l.waitActive(ctx, cl, lbID); err != nil {
			return err
		}
		orphaned[p.Description] = true
	}
	for _, ls := range spec.listeners {
		if h, ok := kept[ls.key()]; ok {
			obs, err := l.observePool(ctx, cl, h, poolByID[h.DefaultPoolID], rep.seen)
			if err != nil {
				return err
			}
			wantState := poolState{Method: ls.Method, CIDRs: ls.SourceRanges, Monitor: wantedMonitor(ls.Monitor), Members: wantedMembers(spec, ls, ms)}
			plan := planPool(ls.key(), wantState, obs)
			if plan.writes() == 0 {
				continue
			}
			if err := l.applyPool(ctx, cl, lbID, spec, ls, ms, h, obs, plan); err != nil {
				return err
			}
			rep.repairs = append(rep.repairs, plan.Repairs...)
			if plan.SetMembers {
				klog.InfoS("Updated load balancer members", "loadBalancer", spec.name, "listener", ls.key(), "members", len(ms))
			}
			continue
		}
		desc := listenerDescription(id, ls)
		opts := listenerCreateOpts(spec, ls, ms, desc)
		opts.LoadbalancerID = lbID
		if _, err := listeners.Create(ctx, cl.lb, opts).Extract(); err != nil {
			return l.conflict(err, "creating listener "+ls.key())
		}
		if orphaned[desc] {
			rep.repairs = append(rep.repairs, fmt.Sprintf("listener %s was deleted", ls.key()))
		} else {
			rep.specChanged = true
		}
		if err := l.waitActive(ctx, cl, lbID); err != nil {
			return err
		}
	}
	return nil
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

// deleteListener deletes a listener of the Service with its default pool (and the pool's
// members and monitor). On a load balancer the Service does not own, the pool goes only if
// its description proves it is the Service's too.
func (l *loadBalancers) deleteListener(ctx context.Context, cl *clients, lbID string, id ownership.Identity, h listeners.Listener, adopted bool) error {
	key := fmt.Sprintf("%s/%d", h.Protocol, h.ProtocolPort)
	if h.DefaultPoolID != "" {
		ours := !adopted
		if adopted {
			p, err := pools.Get(ctx, cl.lb, h.DefaultPoolID).Extract()
			if err != nil {
				return fmt.Errorf("getting pool %s: %w", h.DefaultPoolID, err)
			}
			ours = ownership.DescribedBy(id, p.Description)
		}
		if ours {
			if err := pools.Delete(ctx, cl.lb, h.DefaultPoolID).ExtractErr(); err != nil {
				return l.conflict(err, "deleting pool of listener "+key)
			}
			if err := l.waitActive(ctx, cl, lbID); err != nil {
				return err
			}
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

// relabel gives a listener of an earlier ccm or of the upstream CCM on the Service's own load
// balancer the current mark when it already is what the spec asks: an earlier ccm's with the
// same fingerprint, or an unmarked one whose pool has the wanted protocol and algorithm. Its
// health monitor is left as it is.
func (l *loadBalancers) relabel(ctx context.Context, cl *clients, lbID string, id ownership.Identity, h listeners.Listener, ls listenerSpec) (bool, error) {
	switch {
	case h.Description == legacyListenerPrefix+ls.fingerprint():
	case strings.HasPrefix(h.Description, legacyListenerPrefix):
		return false, nil // an earlier ccm's listener with another spec: replace it
	default:
		p, err := pools.Get(ctx, cl.lb, h.DefaultPoolID).Extract()
		if err != nil {
			return false, fmt.Errorf("getting pool %s: %w", h.DefaultPoolID, err)
		}
		if p.Protocol != ls.PoolProtocol || p.LBMethod != ls.Method {
			return false, nil
		}
	}
	desc := listenerDescription(id, ls)
	if _, err := listeners.Update(ctx, cl.lb, h.ID, listeners.UpdateOpts{Description: &desc}).Extract(); err != nil {
		return false, l.conflict(err, "adopting listener "+ls.key())
	}
	klog.InfoS("Adopted listener", "listener", h.ID, "port", ls.key())
	return true, l.waitActive(ctx, cl, lbID)
}

type memberKey struct {
	Address, Subnet   string
	Port, MonitorPort int
}
