package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// vm is what the CCM needs of one VirtualMachine.
type vm struct {
	vc, dc   string // vCenter host, datacenter name
	dcRef    types.ManagedObjectReference
	ref      types.ManagedObjectReference
	name     string
	uuid     string // BIOS UUID (config.uuid), lower case: the providerID and the Node's SystemUUID
	guestID  string
	hostName string
	cpus     int32
	memMB    int32
	power    types.VirtualMachinePowerState
	host     *types.ManagedObjectReference
	nics     []types.GuestNicInfo
}

// snapshot is every VM and host of the configured datacenters, read in one PropertyCollector
// call per datacenter. It answers all node look-ups until it is older than cache-ttl, so the
// node controller's periodic refresh of N nodes costs one call per datacenter, not N.
type snapshot struct {
	started time.Time // when the read began: what it says is at least this fresh
	byUUID  map[string]*vm
	vms     []*vm
	hosts   map[string]types.ManagedObjectReference // "vcenter/host moref" -> parent compute resource
}

var vmProps = []string{"name", "config.uuid", "config.guestId", "config.template", "config.hardware.numCPU",
	"config.hardware.memoryMB", "guest.hostName", "guest.net", "runtime.powerState", "runtime.host"}

// inventory keeps the latest snapshot and coalesces concurrent reads.
type inventory struct {
	conns []*conn

	refreshMu sync.Mutex // one read at a time; waiters reuse its result
	mu        sync.RWMutex
	snap      *snapshot

	viewsMu sync.Mutex
	views   map[*conn]*dcViews
}

// dcViews are the datacenters of one vCenter and a ContainerView on each, created once per
// session (views live as long as the session that made them).
type dcViews struct {
	gen   int
	dcs   []mo.Datacenter
	views []types.ManagedObjectReference
}

func newInventory(conns []*conn) *inventory {
	return &inventory{conns: conns, views: map[*conn]*dcViews{}}
}

func (inv *inventory) current() *snapshot {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.snap
}

// fresh returns a snapshot that began no earlier than notBefore, reading one if needed. A
// failed read of any vCenter or datacenter is an error: a partial view must never make a VM
// look gone.
func (inv *inventory) fresh(ctx context.Context, notBefore time.Time) (*snapshot, error) {
	if s := inv.current(); s != nil && !s.started.Before(notBefore) {
		return s, nil
	}
	inv.refreshMu.Lock()
	defer inv.refreshMu.Unlock()
	if s := inv.current(); s != nil && !s.started.Before(notBefore) {
		return s, nil // another caller read it while we waited
	}
	s := &snapshot{started: time.Now(), byUUID: map[string]*vm{}, hosts: map[string]types.ManagedObjectReference{}}
	// Every vCenter is read even when one fails, so each failure is reported with its cause.
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(inv.conns))
	for i, c := range inv.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vms, hosts, err := inv.read(ctx, c)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range vms {
				s.vms = append(s.vms, v)
				s.byUUID[v.uuid] = v
			}
			for k, v := range hosts {
				s.hosts[k] = v
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	inv.mu.Lock()
	inv.snap = s
	inv.mu.Unlock()
	return s, nil
}

// read reads the VMs and hosts of every configured datacenter of one vCenter. Our views live
// in our session: when vCenter no longer knows one, the session state is gone (vcsim answers
// so after a session ends; vCenter after a restart), so it logs in again and retries once.
func (inv *inventory) read(ctx context.Context, c *conn) ([]*vm, map[string]types.ManagedObjectReference, error) {
	vms, hosts, gen, err := inv.readOnce(ctx, c)
	if err != nil && fault.Is(err, &types.ManagedObjectNotFound{}) {
		inv.viewsMu.Lock()
		delete(inv.views, c)
		inv.viewsMu.Unlock()
		c.expire(gen)
		vms, hosts, _, err = inv.readOnce(ctx, c)
	}
	return vms, hosts, err
}

func (inv *inventory) readOnce(ctx context.Context, c *conn) ([]*vm, map[string]types.ManagedObjectReference, int, error) {
	client, gen, err := c.get(ctx)
	if err != nil {
		return nil, nil, gen, err
	}
	dv, err := inv.dcViews(ctx, c, client, gen)
	if err != nil {
		return nil, nil, gen, err
	}
	var out []*vm
	hosts := map[string]types.ManagedObjectReference{}
	pc := property.DefaultCollector(client)
	for i, dc := range dv.dcs {
		req := types.RetrieveProperties{SpecSet: []types.PropertyFilterSpec{{
			ObjectSet: []types.ObjectSpec{{Obj: dv.views[i], Skip: types.NewBool(true),
				SelectSet: []types.BaseSelectionSpec{&types.TraversalSpec{Type: "ContainerView", Path: "view"}}}},
			PropSet: []types.PropertySpec{{Type: "VirtualMachine", PathSet: vmProps}, {Type: "HostSystem", PathSet: []string{"parent"}}},
		}}}
		res, err := pc.RetrieveProperties(ctx, req)
		if err != nil {
			return nil, nil, gen, fmt.Errorf("vCenter %s, datacenter %s: reading VMs: %w", c.vc.Server, dc.Name, err)
		}
		for _, oc := range res.Returnval {
			obj, err := mo.ObjectContentToType(oc)
			if err != nil {
				return nil, nil, gen, fmt.Errorf("vCenter %s: decoding %s: %w", c.vc.Server, oc.Obj, err)
			}
			switch o := obj.(type) {
			case mo.HostSystem:
				if o.Parent != nil {
					hosts[c.vc.Server+"/"+o.Self.Value] = *o.Parent
				}
			case mo.VirtualMachine:
				if v := toVM(o); v != nil {
					v.vc, v.dc, v.dcRef = c.vc.Server, dc.Name, dc.Self
					out = append(out, v)
				}
			}
		}
	}
	return out, hosts, gen, nil
}

func toVM(o mo.VirtualMachine) *vm {
	if o.Config == nil || o.Config.Uuid == "" || o.Config.Template {
		return nil // templates and inaccessible VMs are no Nodes
	}
	v := &vm{ref: o.Self, name: o.Name, uuid: strings.ToLower(o.Config.Uuid), guestID: o.Config.GuestId,
		cpus: o.Config.Hardware.NumCPU, memMB: o.Config.Hardware.MemoryMB, power: o.Runtime.PowerState, host: o.Runtime.Host}
	if o.Guest != nil {
		v.hostName, v.nics = o.Guest.HostName, o.Guest.Net
	}
	return v
}

// dcViews finds the configured datacenters and makes a view on each, once per session.
func (inv *inventory) dcViews(ctx context.Context, c *conn, client *vim25.Client, gen int) (*dcViews, error) {
	inv.viewsMu.Lock()
	defer inv.viewsMu.Unlock()
	if dv := inv.views[c]; dv != nil && dv.gen == gen {
		return dv, nil
	}
	m := view.NewManager(client)
	all, err := m.CreateContainerView(ctx, client.ServiceContent.RootFolder, []string{"Datacenter"}, true)
	if err != nil {
		return nil, fmt.Errorf("vCenter %s: listing datacenters: %w", c.vc.Server, err)
	}
	var dcs []mo.Datacenter
	err = all.Retrieve(ctx, []string{"Datacenter"}, []string{"name"}, &dcs)
	_ = all.Destroy(ctx)
	if err != nil {
		return nil, fmt.Errorf("vCenter %s: listing datacenters: %w", c.vc.Server, err)
	}
	dv := &dcViews{gen: gen}
	if len(c.vc.Datacenters) == 0 {
		dv.dcs = dcs
	}
	for _, want := range c.vc.Datacenters {
		name := want[strings.LastIndex(want, "/")+1:] // upstream accepts paths such as /DC0
		found := false
		for _, dc := range dcs {
			if dc.Name == name {
				dv.dcs, found = append(dv.dcs, dc), true
			}
		}
		if !found {
			return nil, fmt.Errorf("vCenter %s: datacenter %q not found (check datacenters in the config)", c.vc.Server, want)
		}
	}
	for _, dc := range dv.dcs {
		v, err := m.CreateContainerView(ctx, dc.Self, []string{"VirtualMachine", "HostSystem"}, true)
		if err != nil {
			return nil, fmt.Errorf("vCenter %s, datacenter %s: %w", c.vc.Server, dc.Name, err)
		}
		dv.views = append(dv.views, v.Reference())
	}
	inv.views[c] = dv
	return dv, nil
}
