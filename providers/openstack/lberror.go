package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
)

// reasonLBError is the Warning about a Service's own load balancer in provisioning status
// ERROR.
const reasonLBError = "LoadBalancerError"

// syncErrored handles the Service's own load balancer lb (named name) in ERROR. One that failed
// at its creation never served: it is deleted, and the retry creates it again. One that
// serves the Service (its VIP or its floating IP is an address of the Service's status) is
// kept: a new one would have another VIP, and so another address for an internal Service, and
// a Service's address must not change because Octavia failed an update. Octavia's failover
// repairs it in place; ccm says so in a Warning, writes nothing, and returns an error so that
// the service controller tries again with its back-off.
func (r *svcRun) syncErrored(ctx context.Context, name string, lb *loadbalancers.LoadBalancer) error {
	l, cl, id, svc := r.l, r.cl, r.id, r.svc
	serving, err := l.serves(ctx, cl, svc, lb, r.rep.seen)
	if err != nil {
		return err
	}
	if serving {
		msg := fmt.Sprintf("load balancer %s (%s) is in ERROR and serves the Service: it is kept so that its address does not change; "+
			"an operator should fail it over (openstack loadbalancer failover %s) or delete it to have it made again", name, lb.ID, lb.ID)
		l.c.event(svc, v1.EventTypeWarning, reasonLBError, msg)
		return errors.New(msg)
	}
	if err := lbOwned(id, lb); err != nil {
		return err // found as the Service's own; its tags, read in this sync, say so before the delete
	}
	l.c.event(svc, v1.EventTypeWarning, reasonLBError, fmt.Sprintf("load balancer %s (%s) is in ERROR and has not served the Service yet; deleting it to create it again", name, lb.ID))
	if err := loadbalancers.Delete(ctx, cl.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, err)
	}
	l.forget(name)
	return l.retry(fmt.Sprintf("load balancer %s was in ERROR and is being recreated", name))
}

// serves: an address of the Service's status is lb's VIP or the floating IP on its VIP port
// (from the snapshot when it shows lb, else read; only when the VIP is not one).
func (l *loadBalancers) serves(ctx context.Context, cl *clients, svc *v1.Service, lb *loadbalancers.LoadBalancer, seen *snapshot) (bool, error) {
	addrs := statusAddrs(svc)
	if len(addrs) == 0 {
		return false, nil
	}
	if inStatus(addrs, lb.VipAddress) {
		return true, nil
	}
	if seen.has(lb.ID) {
		f := seen.fips[lb.VipPortID]
		return f != nil && inStatus(addrs, f.FloatingIP), nil
	}
	f, err := l.portFIP(ctx, cl, lb.VipPortID)
	if err != nil {
		return false, err
	}
	return f != nil && inStatus(addrs, f.FloatingIP), nil
}

// inStatus: addr is one of the status addresses. Pure.
func inStatus(addrs []netip.Addr, addr string) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && slices.Contains(addrs, a.Unmap())
}
