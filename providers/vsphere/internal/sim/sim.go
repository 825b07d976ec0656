// Package sim runs govmomi's vCenter simulator (vcsim) in-process for tests, the demo and the
// bench: a VPX model over TLS on 127.0.0.1 with a user and password, the vAPI tagging
// endpoints, zone/region tags, and helpers to add, power off and destroy VMs with VMware
// Tools NIC info. Everything the provider reads goes through the real govmomi client.
package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vapi/rest"
	_ "github.com/vmware/govmomi/vapi/simulator" // registers the vAPI (REST, tagging) endpoints
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Options shape the simulated vCenter.
type Options struct {
	User, Password string
	Datacenters    int // default 1
	Clusters       int // per datacenter, default 1
	// ZoneCategory and RegionCategory, when set, create tag categories of those names: each
	// datacenter gets region tag "region-<i>", each cluster zone tag "zone-<dc>-<c>".
	ZoneCategory, RegionCategory string
}

// Sim is a running vcsim.
type Sim struct {
	Model  *simulator.Model
	Server *simulator.Server
	Opts   Options
	admin  *vim25.Client
	rest   *rest.Client

	mu   sync.Mutex
	seq  int
	gate *gate
}

// NIC is one guest network adapter as VMware Tools reports it.
type NIC struct {
	Network string
	IPs     []string
}

// VM is a created VM.
type VM struct {
	Name, UUID, Datacenter, Cluster string
	Ref                             types.ManagedObjectReference
}

// Start starts vcsim on 127.0.0.1 (free port) over TLS.
func Start(ctx context.Context, o Options) (*Sim, error) {
	if o.Datacenters == 0 {
		o.Datacenters = 1
	}
	if o.Clusters == 0 {
		o.Clusters = 1
	}
	m := simulator.VPX()
	m.Datacenter, m.Cluster, m.ClusterHost, m.Host, m.Machine = o.Datacenters, o.Clusters, 1, 0, 0
	if err := m.Create(); err != nil {
		return nil, err
	}
	m.Service.TLS = new(tls.Config)
	m.Service.RegisterEndpoints = true
	m.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(o.User, o.Password)}
	s := &Sim{Model: m, Server: m.Service.NewServer(), Opts: o}
	// NewServer starts serving; the gate goes in before the first request is made.
	s.gate = &gate{next: s.Server.Config.Handler, calls: map[string]int{}}
	s.Server.Config.Handler = s.gate
	u := *s.Server.URL
	u.User = url.UserPassword(o.User, o.Password)
	sc := soap.NewClient(&u, true)
	sc.Client.Transport = adminTransport{sc.Client.Transport}
	c, err := vim25.NewClient(ctx, sc)
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := session.NewManager(c).Login(ctx, u.User); err != nil {
		s.Close()
		return nil, err
	}
	s.admin = c
	s.rest = rest.NewClient(c)
	s.rest.Client.Client.Transport = adminTransport{s.rest.Client.Client.Transport}
	if err := s.rest.Login(ctx, u.User); err != nil {
		s.Close()
		return nil, err
	}
	if o.ZoneCategory != "" || o.RegionCategory != "" {
		if err := s.tagTopology(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close stops the server and removes the model's files.
func (s *Sim) Close() {
	s.Server.Close()
	s.Model.Remove()
}

// Host and Port of the server.
func (s *Sim) Host() string { h, _, _ := net.SplitHostPort(s.Server.URL.Host); return h }

// Port of the server.
func (s *Sim) Port() string { _, p, _ := net.SplitHostPort(s.Server.URL.Host); return p }

// Admin is the test's own logged-in client.
func (s *Sim) Admin() *vim25.Client { return s.admin }

// DatacenterName is the name of datacenter i (0-based).
func DatacenterName(i int) string { return fmt.Sprintf("DC%d", i) }

// ClusterPath is the inventory path of cluster c in datacenter dc.
func ClusterPath(dc, c int) string { return fmt.Sprintf("/DC%d/host/DC%d_C%d", dc, dc, c) }

func (s *Sim) tagTopology(ctx context.Context) error {
	m := tags.NewManager(s.rest)
	mkCat := func(name string) (string, error) {
		if name == "" {
			return "", nil
		}
		return m.CreateCategory(ctx, &tags.Category{Name: name, Cardinality: "SINGLE"})
	}
	zc, err := mkCat(s.Opts.ZoneCategory)
	if err != nil {
		return err
	}
	rc, err := mkCat(s.Opts.RegionCategory)
	if err != nil {
		return err
	}
	finder := find.NewFinder(s.admin)
	for d := 0; d < s.Opts.Datacenters; d++ {
		dc, err := finder.Datacenter(ctx, DatacenterName(d))
		if err != nil {
			return err
		}
		if rc != "" {
			id, err := m.CreateTag(ctx, &tags.Tag{Name: fmt.Sprintf("region-%d", d), CategoryID: rc})
			if err != nil {
				return err
			}
			if err := m.AttachTag(ctx, id, dc.Reference()); err != nil {
				return err
			}
		}
		if zc == "" {
			continue
		}
		for c := 0; c < s.Opts.Clusters; c++ {
			cl, err := finder.ClusterComputeResource(ctx, ClusterPath(d, c))
			if err != nil {
				return err
			}
			id, err := m.CreateTag(ctx, &tags.Tag{Name: fmt.Sprintf("zone-%d-%d", d, c), CategoryID: zc})
			if err != nil {
				return err
			}
			if err := m.AttachTag(ctx, id, cl.Reference()); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddVM creates a powered-on VM named name in cluster c of datacenter dc with the given guest
// NICs, hostname and size.
func (s *Sim) AddVM(ctx context.Context, name string, dc, c int, nics []NIC) (*VM, error) {
	finder := find.NewFinder(s.admin)
	dco, err := finder.Datacenter(ctx, DatacenterName(dc))
	if err != nil {
		return nil, err
	}
	finder.SetDatacenter(dco)
	cl, err := finder.ClusterComputeResource(ctx, ClusterPath(dc, c))
	if err != nil {
		return nil, err
	}
	pool, err := cl.ResourcePool(ctx)
	if err != nil {
		return nil, err
	}
	folders, err := dco.Folders(ctx)
	if err != nil {
		return nil, err
	}
	ds, err := finder.DefaultDatastore(ctx)
	if err != nil {
		return nil, err
	}
	spec := types.VirtualMachineConfigSpec{Name: name, GuestId: "ubuntu64Guest", NumCPUs: 2, MemoryMB: 4096,
		Files: &types.VirtualMachineFileInfo{VmPathName: "[" + ds.Name() + "]"}}
	task, err := folders.VmFolder.CreateVM(ctx, spec, pool, nil)
	if err != nil {
		return nil, err
	}
	info, err := task.WaitForResult(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("create VM %s: %w", name, err)
	}
	ref := info.Result.(types.ManagedObjectReference)
	vm := object.NewVirtualMachine(s.admin, ref)
	if t, err := vm.PowerOn(ctx); err != nil {
		return nil, err
	} else if err := t.Wait(ctx); err != nil {
		return nil, err
	}
	s.SetGuest(ref, name, nics)
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, ref, []string{"config.uuid"}, &o); err != nil {
		return nil, err
	}
	return &VM{Name: name, UUID: strings.ToLower(o.Config.Uuid), Datacenter: DatacenterName(dc), Cluster: ClusterPath(dc, c), Ref: ref}, nil
}

// SetGuest sets what VMware Tools reports: the hostname and the NICs with their addresses.
// (vcsim has no guest to run Tools; the simulator's own object is updated, as Tools would.)
func (s *Sim) SetGuest(ref types.ManagedObjectReference, hostname string, nics []NIC) {
	var net []types.GuestNicInfo
	for i, n := range nics {
		net = append(net, types.GuestNicInfo{Network: n.Network, IpAddress: n.IPs, Connected: true,
			MacAddress: fmt.Sprintf("00:50:56:00:%02x:%02x", i, len(n.IPs)), DeviceConfigId: int32(4000 + i)})
	}
	ctx := s.Model.Service.Context
	obj := s.Model.Map().Get(ref)
	changes := []types.PropertyChange{{Name: "guest.net", Val: net}, {Name: "guest.hostName", Val: hostname}}
	if len(nics) > 0 && len(nics[0].IPs) > 0 {
		changes = append(changes, types.PropertyChange{Name: "guest.ipAddress", Val: nics[0].IPs[0]})
	}
	s.Model.Map().AtomicUpdate(ctx, obj, changes)
}

// PowerOff powers the VM off.
func (s *Sim) PowerOff(ctx context.Context, ref types.ManagedObjectReference) error {
	t, err := object.NewVirtualMachine(s.admin, ref).PowerOff(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}

// Destroy powers the VM off and deletes it.
func (s *Sim) Destroy(ctx context.Context, ref types.ManagedObjectReference) error {
	vm := object.NewVirtualMachine(s.admin, ref)
	if t, err := vm.PowerOff(ctx); err == nil {
		_ = t.Wait(ctx)
	}
	t, err := vm.Destroy(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}

// FailReads makes every PropertyCollector read fail with a server fault, as a vCenter in
// trouble does, until the returned func is called.
func (s *Sim) FailReads() (restore func()) {
	rule := &simulator.FaultInjectionRule{MethodName: "RetrievePropertiesEx", ObjectType: "*", ObjectName: "*",
		Probability: 1, FaultType: simulator.FaultTypeGeneric, Message: "simulated vCenter failure", Enabled: true}
	s.Model.Service.AddFaultRule(rule)
	return func() { s.Model.Service.ClearFaultRules() }
}

// ExpireSessions ends every session but the admin's, as vCenter's idle timeout or a restart
// does, and returns how many it ended.
func (s *Sim) ExpireSessions(ctx context.Context) (int, error) {
	sm := session.NewManager(s.admin)
	own, err := sm.UserSession(ctx)
	if err != nil {
		return 0, err
	}
	var o mo.SessionManager
	if err := object.NewCommon(s.admin, *s.admin.ServiceContent.SessionManager).Properties(ctx, *s.admin.ServiceContent.SessionManager, []string{"sessionList"}, &o); err != nil {
		return 0, err
	}
	var ids []string
	for _, us := range o.SessionList {
		if us.Key != own.Key {
			ids = append(ids, us.Key)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return len(ids), sm.TerminateSession(ctx, ids)
}

// TagsInCategory returns the tags of a category by name, with their descriptions (nil, nil
// when the category does not exist).
func (s *Sim) TagsInCategory(ctx context.Context, category string) (map[string]string, error) {
	m := tags.NewManager(s.rest)
	cats, err := m.GetCategories(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range cats {
		if c.Name != category {
			continue
		}
		ts, err := m.GetTagsForCategory(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, t := range ts {
			out[t.Name] = t.Description
		}
		return out, nil
	}
	return nil, nil
}

// PutTag creates tag name with description in category (made if missing) through the
// simulator's own vAPI session, as a vSphere admin or another tool would, and returns its ID.
func (s *Sim) PutTag(ctx context.Context, category, name, description string) (string, error) {
	m := tags.NewManager(s.rest)
	cat, err := m.GetCategory(ctx, category)
	var catID string
	if err == nil {
		catID = cat.ID
	} else if catID, err = m.CreateCategory(ctx, &tags.Category{Name: category, Cardinality: "MULTIPLE"}); err != nil {
		return "", err
	}
	return m.CreateTag(ctx, &tags.Tag{Name: name, CategoryID: catID, Description: description})
}

// tagNamed finds tag name of category through the simulator's own vAPI session.
func (s *Sim) tagNamed(ctx context.Context, m *tags.Manager, category, name string) (*tags.Tag, error) {
	cat, err := m.GetCategory(ctx, category)
	if err != nil {
		return nil, err
	}
	ts, err := m.GetTagsForCategory(ctx, cat.ID)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i], nil
		}
	}
	return nil, fmt.Errorf("no tag %q in category %q", name, category)
}

// EditTag rewrites the description of tag name in category with edit, as a vSphere admin
// editing it in the vSphere Client would (the simulator's own session, not counted).
func (s *Sim) EditTag(ctx context.Context, category, name string, edit func(description string) string) error {
	m := tags.NewManager(s.rest)
	t, err := s.tagNamed(ctx, m, category, name)
	if err != nil {
		return err
	}
	return m.UpdateTag(ctx, &tags.Tag{ID: t.ID, Name: t.Name, Description: edit(t.Description)})
}

// DeleteTag deletes tag name of category, as a vSphere admin would.
func (s *Sim) DeleteTag(ctx context.Context, category, name string) error {
	m := tags.NewManager(s.rest)
	t, err := s.tagNamed(ctx, m, category, name)
	if err != nil {
		return err
	}
	return m.DeleteTag(ctx, t)
}
