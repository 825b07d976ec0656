package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Orphan collection (common/servicecontroller): a load balancer here is a record, one tag of
// category ccm-load-balancers. A listing is one ListTagsForCategory plus one GetTag per tag
// this process has not read yet (none in the steady state: records already known are kept
// up to date by the syncs, and a delete reads its record again).

var _ servicecontroller.OwnedLister = (*Cloud)(nil)

// OwnedLoadBalancers implements servicecontroller.OwnedLister.
func (c *Cloud) OwnedLoadBalancers(ctx context.Context, cluster string) ([]servicecontroller.OwnedLoadBalancer, error) {
	l := c.lb
	if l.store == nil {
		return nil, errors.New("no vCenter configured: no load balancer records to list")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.loaded {
		err = l.refresh(ctx)
	} else {
		err = l.load(ctx, cluster)
	}
	if err != nil {
		return nil, eventSafe("listing", err)
	}
	var out []servicecontroller.OwnedLoadBalancer
	for name, r := range l.records {
		if owner, ok := ownership.Owner(cluster, r.tags()); ok {
			out = append(out, servicecontroller.OwnedLoadBalancer{Owner: owner, ID: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteOwnedLoadBalancer implements servicecontroller.OwnedLister: the record is read again
// from vCenter (one GetTag) and must still name lb's owner; then the Service's delete path
// removes it and frees its addresses.
func (c *Cloud) DeleteOwnedLoadBalancer(ctx context.Context, cluster string, lb servicecontroller.OwnedLoadBalancer) error {
	l := c.lb
	if l.store == nil {
		return errors.New("no vCenter configured")
	}
	svc := lb.Service()
	name := names.Name(cluster, svc.Namespace, svc.Name)
	if lb.ID != name {
		return fmt.Errorf("load balancer record %q is not where ccm keeps the record of %s (%q): not deleting it", lb.ID, lb.Owner.Service(), name)
	}
	l.mu.Lock()
	if err := l.load(ctx, cluster); err != nil {
		l.mu.Unlock()
		return eventSafe("reading", err)
	}
	known, ok := l.records[name]
	if !ok {
		l.mu.Unlock()
		return nil
	}
	got, found, err := l.store.getOne(ctx, known.tagID)
	switch {
	case err != nil:
		l.mu.Unlock()
		return eventSafe("reading", err)
	case !found || got.name != name:
		// Gone or renamed in vCenter since the listing: forget it; the next listing tells.
		delete(l.records, name)
		delete(l.byID, known.tagID)
		l.reindex()
		l.mu.Unlock()
		return nil
	}
	l.records[name] = got.lbRecord
	delete(l.fresh, name)
	l.mu.Unlock()
	if err := owns(ownership.Of(cluster, svc), name, got.lbRecord); err != nil {
		return err
	}
	return l.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}
