package vsphere

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// tagTTL is how long the tags attached to hosts, clusters and datacenters are reused. Zones
// change rarely; a host moved to another zone shows within this time.
const tagTTL = 5 * time.Minute

// zoner finds a VM's zone and region from the vSphere tags on its host's ancestors (host,
// then its cluster, then its datacenter: the nearest wins) whose category is the one
// [Labels] names. It reads the tags of every host of a vCenter in one call and remembers
// tag and category names, so a node costs no tagging call of its own.
type zoner struct {
	zoneCat, regionCat string

	mu       sync.Mutex
	attached map[string][]string // "vcenter/moref" -> tag IDs
	readAt   map[string]time.Time
	tagNames map[string]tags.Tag // tag ID -> tag
	catNames map[string]string   // category ID -> name
}

func newZoner(c *Config) *zoner {
	return &zoner{zoneCat: c.Labels.Zone, regionCat: c.Labels.Region, attached: map[string][]string{},
		readAt: map[string]time.Time{}, tagNames: map[string]tags.Tag{}, catNames: map[string]string{}}
}

func (z *zoner) enabled() bool { return z.zoneCat != "" || z.regionCat != "" }

// zoneOf returns the zone and region of v, reading tags for every host of its vCenter in
// snap when v's are unknown or stale.
func (z *zoner) zoneOf(ctx context.Context, c *conn, snap *snapshot, v *vm) (zone, region string, err error) {
	if !z.enabled() || v.host == nil {
		return "", "", nil
	}
	chain := []types.ManagedObjectReference{*v.host}
	if p, ok := snap.hosts[v.vc+"/"+v.host.Value]; ok {
		chain = append(chain, p)
	}
	chain = append(chain, v.dcRef)
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.stale(v.vc, chain) {
		if err := z.read(ctx, c, snap, chain); err != nil {
			return "", "", err
		}
	}
	for _, ref := range chain { // nearest ancestor first
		for _, id := range z.attached[v.vc+"/"+ref.Value] {
			t := z.tagNames[id]
			switch cat := z.catNames[t.CategoryID]; {
			case cat == z.zoneCat && zone == "" && z.zoneCat != "":
				zone = t.Name
			case cat == z.regionCat && region == "" && z.regionCat != "":
				region = t.Name
			}
		}
	}
	return zone, region, nil
}

func (z *zoner) stale(vc string, chain []types.ManagedObjectReference) bool {
	for _, ref := range chain {
		if at, ok := z.readAt[vc+"/"+ref.Value]; !ok || time.Since(at) > tagTTL {
			return true
		}
	}
	return false
}

// read fetches the tags attached to every host, compute resource and datacenter of c's VMs
// in snap (plus chain), then the names of tags and categories not seen before.
func (z *zoner) read(ctx context.Context, c *conn, snap *snapshot, chain []types.ManagedObjectReference) error {
	seen := map[types.ManagedObjectReference]bool{}
	var objs []mo.Reference
	add := func(r types.ManagedObjectReference) {
		if !seen[r] {
			seen[r] = true
			objs = append(objs, r)
		}
	}
	for _, r := range chain {
		add(r)
	}
	for _, v := range snap.vms {
		if v.vc != c.vc.Server || v.host == nil {
			continue
		}
		add(*v.host)
		if p, ok := snap.hosts[v.vc+"/"+v.host.Value]; ok {
			add(p)
		}
		add(v.dcRef)
	}
	var res []tags.AttachedTags
	err := z.withRest(ctx, c, func(m *tags.Manager) (err error) {
		res, err = m.ListAttachedTagsOnObjects(ctx, objs)
		return err
	})
	if err != nil {
		return fmt.Errorf("vCenter %s: reading zone/region tags: %w", c.vc.Server, err)
	}
	now := time.Now()
	for _, r := range objs {
		key := c.vc.Server + "/" + r.Reference().Value
		z.attached[key], z.readAt[key] = nil, now
	}
	for _, a := range res {
		key := c.vc.Server + "/" + a.ObjectID.Reference().Value
		z.attached[key] = a.TagIDs
		for _, id := range a.TagIDs {
			if _, ok := z.tagNames[id]; ok {
				continue
			}
			if err := z.withRest(ctx, c, func(m *tags.Manager) error {
				t, err := m.GetTag(ctx, id)
				if err == nil {
					z.tagNames[id] = *t
				}
				return err
			}); err != nil {
				return fmt.Errorf("vCenter %s: reading tag %s: %w", c.vc.Server, id, err)
			}
			cat := z.tagNames[id].CategoryID
			if _, ok := z.catNames[cat]; ok {
				continue
			}
			if err := z.withRest(ctx, c, func(m *tags.Manager) error {
				k, err := m.GetCategory(ctx, cat)
				if err == nil {
					z.catNames[cat] = k.Name
				}
				return err
			}); err != nil {
				return fmt.Errorf("vCenter %s: reading tag category %s: %w", c.vc.Server, cat, err)
			}
		}
	}
	return nil
}

// withRest runs f with a logged-in vAPI client, logging in again once on a 401.
func (z *zoner) withRest(ctx context.Context, c *conn, f func(*tags.Manager) error) error {
	for try := 0; ; try++ {
		rc, err := c.restClient(ctx)
		if err != nil {
			return err
		}
		err = f(tags.NewManager(rc))
		if try == 0 && rest.IsStatusError(err, 401) {
			c.dropRest(rc)
			continue
		}
		return err
	}
}
