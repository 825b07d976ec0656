package dummy

import (
	"context"
	"fmt"
	"sort"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Orphan collection (common/servicecontroller): the dummy cloud lists its load balancers with
// one Load of the store (eight ConfigMap reads with the ConfigMap store) and keeps the records
// whose ownership tags name this cluster.

var _ servicecontroller.OwnedLister = (*Cloud)(nil)

// OwnedLoadBalancers implements servicecontroller.OwnedLister.
func (c *Cloud) OwnedLoadBalancers(ctx context.Context, cluster string) ([]servicecontroller.OwnedLoadBalancer, error) {
	store := c.lbStore(cluster)
	recs, err := store.Load(ctx)
	if err != nil {
		return nil, err
	}
	var out []servicecontroller.OwnedLoadBalancer
	for k, r := range recs {
		if owner, ok := ownership.Owner(cluster, r.Tags); ok {
			out = append(out, servicecontroller.OwnedLoadBalancer{Owner: owner, ID: k})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteOwnedLoadBalancer implements servicecontroller.OwnedLister: the record is read again
// and must still carry lb's owner, then it goes the way a Service's deletion takes it
// (EnsureLoadBalancerDeleted, which checks once more under the Service's lock and frees the
// addresses).
func (c *Cloud) DeleteOwnedLoadBalancer(ctx context.Context, cluster string, lb servicecontroller.OwnedLoadBalancer) error {
	svc := lb.Service()
	c.lbStore(cluster)
	if k := recordKey(cluster, svc); k != lb.ID {
		return fmt.Errorf("load balancer record %q is not where ccm keeps the record of %s (%q): not deleting it", lb.ID, lb.Owner.Service(), k)
	}
	rec, found, err := c.lb.readRecord(ctx, lb.ID)
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := ownership.Check(ownership.Of(cluster, svc), "load balancer", lb.ID, rec.Tags); err != nil {
		return err
	}
	return c.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

// lbStore is the store the load balancers use (made now if no load balancer call made it yet).
func (c *Cloud) lbStore(cluster string) Store {
	c.lb.mu.Lock()
	defer c.lb.mu.Unlock()
	if c.lb.store == nil {
		c.lb.store = c.newStore(cluster)
	}
	return c.lb.store
}
