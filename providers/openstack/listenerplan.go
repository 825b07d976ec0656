package openstack

import (
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/ccm-project/ccm/common/ownership"
)

// listenerPlan is the difference between the listeners a spec asks for and those a load
// balancer holds: which are kept (and compared further by planPool), which get the current
// ownership mark first, which go, which pools without a listener go, and which are created.
type listenerPlan struct {
	Keep map[string]listeners.Listener // by key
	// Relabel are kept and updated in place, with the current mark and fingerprint written
	// into their description in the same listener update: an earlier ccm's or the upstream
	// CCM's listener, or the Service's own whose spec changed in fields Octavia updates in
	// place (allowed CIDRs, members' ports, algorithm, monitor), so the port never closes.
	Relabel map[string]listeners.Listener // by key
	Delete  []listenerDelete              // replaced or no longer wanted
	// DeletePools are the Service's pools that lost their listener and serve no wanted one.
	DeletePools []pools.Pool
	Create      []listenerSpec
	// Reuse: by key, the Service's pool that lost its listener (deleted out of band, or a
	// replacement that failed half-way) and is that listener's: the listener is created again
	// on it, with its members and monitor, which are then compared as a kept listener's.
	Reuse map[string]pools.Pool
	// Repairs name the out-of-band changes among the differences; SpecChanged says a listener
	// is created or replaced because the spec asks for it.
	Repairs     []string
	SpecChanged bool
	// Recreated name the listeners replaced on the same port because their protocol changed
	// (Octavia cannot change a listener's protocol): a short interruption on that port.
	Recreated []string
	// Left are the listeners on the Service's own load balancer that neither ccm nor the
	// upstream CCM made (by hand, or by another tool): never changed or deleted, a Warning
	// each.
	Left []listeners.Listener
}

type listenerDelete struct {
	Listener listeners.Listener
	WithPool bool // its default pool is the Service's and goes with it
}

func listenerKey(h listeners.Listener) string {
	return fmt.Sprintf("%s/%d", h.Protocol, h.ProtocolPort)
}

// planListeners compares the wanted listeners (spec's) with the load balancer's (have, with
// its pools allPools). Pure. On a load balancer the Service does not own (adopted), only
// listeners and pools whose description proves they are the Service's are changed or deleted;
// on its own, listeners marked as another Service's are left alone too. A wanted port held by a
// listener the Service does not own is an error.
//
// spec.name is the Service's load balancer name: the upstream CCM tags each listener with the
// name of the Service that made it, which tells the listeners of Services sharing one load
// balancer apart (shared.go). An unmarked listener tagged with another Service's name is never
// ours; one tagged with spec.name (or upstream's literal name for id, where ccm's differs) is,
// on a shared load balancer too. On the Service's own load balancer, an unmarked listener no CCM
// made (madeByACCM) is left alone (Left), and a wanted port it holds is an error.
func planListeners(id ownership.Identity, spec *lbSpec, have []listeners.Listener, allPools []pools.Pool, adopted bool) (listenerPlan, error) {
	name, want := spec.name, spec.listeners
	p := listenerPlan{Keep: map[string]listeners.Listener{}, Relabel: map[string]listeners.Listener{}, Reuse: map[string]pools.Pool{}}
	sc := listenerScan{id: id, name: name, adopted: adopted, poolByID: map[string]*pools.Pool{}, wanted: map[string]listenerSpec{},
		gone: map[string]bool{}, errored: map[string]bool{}}
	for i := range allPools {
		sc.poolByID[allPools[i].ID] = &allPools[i]
	}
	for _, ls := range want {
		sc.wanted[ls.key()] = ls
	}
	for _, h := range have {
		if err := p.planListener(&sc, h); err != nil {
			return p, err
		}
	}
	p.planPoolsWithoutListener(&sc, want, allPools)
	p.planCreates(want, sc.errored)
	p.noteRecreated()
	return p, nil
}

// listenerScan is what planListeners compares each of the load balancer's listeners with,
// and what it learns on the way.
type listenerScan struct {
	id       ownership.Identity
	name     string
	adopted  bool
	poolByID map[string]*pools.Pool
	wanted   map[string]listenerSpec
	gone     map[string]bool // pools of deleted listeners
	errored  map[string]bool // keys of the Service's listeners replaced for being in ERROR
}

// planListener decides what becomes of the load balancer's listener h: left alone, kept,
// relabelled or deleted; an error when a wanted port is held by one the Service may not change.
func (p *listenerPlan) planListener(sc *listenerScan, h listeners.Listener) error {
	id, name, adopted, poolByID := sc.id, sc.name, sc.adopted, sc.poolByID
	key := listenerKey(h)
	ls, isWanted := sc.wanted[key]
	owner, role, marked := ownership.ParseDescription(h.Description)
	mine := marked && ownership.DescribedBy(id, h.Description)
	tagMine, tagOther := upstreamListenerTags(id, h.Tags, name)
	switch {
	case !marked && tagOther:
		// The upstream CCM's listener of another Service sharing the load balancer.
		if isWanted {
			return fmt.Errorf("port %s of the load balancer is taken by a listener of another Service sharing it", key)
		}
		return nil
	case adopted && !mine && !(tagMine && !marked):
		if isWanted {
			return fmt.Errorf("port %s of the load balancer named by annotation %s is taken by a listener this Service does not own", key, annLoadBalancerID)
		}
		return nil
	case !mine && marked && owner.Cluster != "":
		// Another Service's (or cluster's) listener on this Service's load balancer (an
		// operator allowed it there): never ours to change.
		if isWanted {
			return fmt.Errorf("port %s of this Service's load balancer is taken by a listener it does not own", key)
		}
		return nil
	case !marked && !tagMine && !madeByACCM(id, name, h):
		// Added by hand (or by another tool): no CCM made it, so none deletes it (listenerorigin.go).
		if isWanted {
			return fmt.Errorf("port %s of this Service's load balancer is taken by listener %s, which neither ccm nor the upstream CCM made: ccm does not delete it; "+
				"delete it by hand or give the Service another port", key, listenerLabel(h))
		}
		p.Left = append(p.Left, h)
		return nil
	case isWanted && mine && inError(h, poolByID[h.DefaultPoolID]):
		// A failed update leaves a listener or pool in ERROR; Octavia lets it be deleted,
		// and it is created again.
		sc.errored[key] = true
		p.Repairs = append(p.Repairs, fmt.Sprintf("listener %s was in ERROR; replaced", key))
	case isWanted && mine && role == ls.fingerprint() && h.DefaultPoolID != "":
		p.Keep[key] = h
		return nil
	case isWanted && mine && h.DefaultPoolID != "" && samePoolProtocol(poolByID[h.DefaultPoolID], ls):
		// The spec changed, but only in what Octavia updates in place: a listener
		// replaced would close the port for the length of a delete and a create.
		p.Relabel[key] = h
		p.SpecChanged = true
		return nil
	case isWanted && !marked && h.DefaultPoolID != "" && relabels(h, ls, poolByID[h.DefaultPoolID]):
		// On the Service's own load balancer, a listener of an earlier ccm (its old
		// "ccm:<fingerprint>" description) or of the upstream CCM (before a migration)
		// gets the current mark instead of being replaced, so traffic is not interrupted.
		p.Relabel[key] = h
		return nil
	}
	if isWanted && !sc.errored[key] {
		p.SpecChanged = true
	}
	d := listenerDelete{Listener: h, WithPool: h.DefaultPoolID != ""}
	if adopted && d.WithPool && !tagMine {
		pool := poolByID[h.DefaultPoolID]
		d.WithPool = pool != nil && ownership.DescribedBy(id, pool.Description)
	}
	p.Delete = append(p.Delete, d)
	sc.gone[h.DefaultPoolID] = true
	return nil
}

// planPoolsWithoutListener: a pool of the Service without a listener: its listener was deleted
// out of band (or a replacement failed half-way). A wanted listener missing is created again on
// it; any other goes.
func (p *listenerPlan) planPoolsWithoutListener(sc *listenerScan, want []listenerSpec, allPools []pools.Pool) {
	for _, pool := range allPools {
		if len(pool.Listeners) > 0 || sc.gone[pool.ID] || !ownership.DescribedBy(sc.id, pool.Description) {
			continue
		}
		ls, ok := sc.wanted[poolListenerKey(pool, want)]
		if _, taken := p.Reuse[ls.key()]; ok && !taken && samePoolProtocol(&pool, ls) && pool.ProvisioningStatus != "ERROR" {
			p.Reuse[ls.key()] = pool
			continue
		}
		p.DeletePools = append(p.DeletePools, pool)
	}
}

// noteRecreated names each port whose listener is replaced by one of another protocol on the
// same transport.
func (p *listenerPlan) noteRecreated() {
	for _, d := range p.Delete {
		for _, ls := range p.Create {
			if ls.Port == d.Listener.ProtocolPort && ls.Protocol != d.Listener.Protocol && sameTransport(ls.Protocol, d.Listener.Protocol) {
				p.Recreated = append(p.Recreated, fmt.Sprintf("port %d: listener %s replaced by %s", ls.Port, d.Listener.Protocol, ls.Protocol))
			}
		}
	}
}

// poolListenerKey is the key of the wanted listener whose pool is named as pool is ("" if
// none): ccm names a listener's pool after the listener.
func poolListenerKey(pool pools.Pool, want []listenerSpec) string {
	for _, ls := range want {
		if pool.Name == "pool_"+ls.name() {
			return ls.key()
		}
	}
	return ""
}

// planCreates adds the wanted listeners neither kept nor relabelled to p.Create: a repair when
// the listener was deleted out of band (its pool is reused) or replaced for being in ERROR,
// else the spec's change.
func (p *listenerPlan) planCreates(want []listenerSpec, errored map[string]bool) {
	for _, ls := range want {
		if _, ok := p.Keep[ls.key()]; ok {
			continue
		}
		if _, ok := p.Relabel[ls.key()]; ok {
			continue
		}
		p.Create = append(p.Create, ls)
		switch {
		case errored[ls.key()]:
		case p.Reuse[ls.key()].ID != "":
			p.Repairs = append(p.Repairs, fmt.Sprintf("listener %s was deleted", ls.key()))
		default:
			p.SpecChanged = true
		}
	}
}

// inError: Octavia holds the listener or its pool in ERROR.
func inError(h listeners.Listener, pool *pools.Pool) bool {
	return h.ProvisioningStatus == "ERROR" || (pool != nil && pool.ProvisioningStatus == "ERROR")
}

// sameTransport: two listener protocols that share Octavia's port space (every TCP-based one;
// UDP and SCTP each have their own).
func sameTransport(a, b string) bool {
	tr := func(p string) string {
		if p == "UDP" || p == "SCTP" {
			return p
		}
		return "TCP"
	}
	return tr(a) == tr(b)
}

// relabels: an unmarked listener on the Service's own load balancer is kept with the current
// mark: an earlier ccm's whose pool has the wanted protocol (its other differences are
// updated in place), or the upstream CCM's whose pool has the wanted protocol and algorithm.
func relabels(h listeners.Listener, ls listenerSpec, pool *pools.Pool) bool {
	if strings.HasPrefix(h.Description, legacyListenerPrefix) {
		return h.Description == legacyListenerPrefix+ls.fingerprint() || samePoolProtocol(pool, ls)
	}
	return samePoolProtocol(pool, ls) && pool.LBMethod == ls.Method
}

// samePoolProtocol: the listener's pool has the protocol ls wants. Octavia cannot change a
// pool's protocol (proxy-protocol switches it between TCP and PROXY): the listener is then
// replaced.
func samePoolProtocol(pool *pools.Pool, ls listenerSpec) bool {
	return pool != nil && pool.Protocol == ls.PoolProtocol
}
