package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
)

// loadBalancers implements cloudprovider.LoadBalancer over Octavia and Neutron floating IPs.
//
// Provisioning never holds a worker: a load balancer that is PENDING_* makes Ensure return a
// RetryError, and the service controller comes back after [LoadBalancer] pending-retry. Short
// waits happen only between the writes of one update (Octavia refuses a write while the load
// balancer is PENDING_UPDATE), bounded by updateWait.
type loadBalancers struct {
	c *Cloud

	mu  sync.Mutex
	ids map[string]string // Service key -> load balancer ID we created: list results may lag
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// updateWait bounds the wait for PENDING_UPDATE between two writes of one reconcile.
const updateWait = 20 * time.Second

func newLoadBalancers(c *Cloud) *loadBalancers {
	return &loadBalancers{c: c, ids: map[string]string{}}
}

func svcKey(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// GetLoadBalancerName implements cloudprovider.LoadBalancer: kube_service_<cluster>_<ns>_<name>.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, clusterName string, svc *v1.Service) string {
	return lbname.Octavia.Name(clusterName, svc.Namespace, svc.Name)
}

// description is the upstream provider's, so load balancers it created are recognised as ours.
func description(clusterName string, svc *v1.Service) string {
	return fmt.Sprintf("Kubernetes external service %s/%s from cluster %s", svc.Namespace, svc.Name, clusterName)
}

func ownerTags(clusterName string, svc *v1.Service) []string {
	var out []string
	for k, v := range lbname.Tags(clusterName, svc.Namespace, svc.Name) {
		out = append(out, k+"="+v)
	}
	return out
}

// tagMap reads Octavia's string tags written as key=value.
func tagMap(tags []string) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		if k, v, ok := strings.Cut(t, "="); ok {
			m[k] = v
		}
	}
	return m
}

// owned: tagged by this cluster for this Service, or described as the upstream provider did.
func owned(lb *loadbalancers.LoadBalancer, clusterName string, svc *v1.Service) bool {
	ns, name, ok := lbname.Owner(clusterName, tagMap(lb.Tags))
	if ok {
		return ns == svc.Namespace && name == svc.Name
	}
	return lb.Description == description(clusterName, svc)
}

// find returns svc's load balancer or nil: the adopted one (load-balancer-id), the one we
// created (by ID, as a new load balancer may be missing from lists for a while), else by name.
func (l *loadBalancers) find(ctx context.Context, cl *clients, clusterName string, svc *v1.Service) (*loadbalancers.LoadBalancer, error) {
	id := svc.Annotations[annLoadBalancerID]
	if id == "" {
		l.mu.Lock()
		id = l.ids[svcKey(svc)]
		l.mu.Unlock()
	}
	if id != "" {
		lb, err := loadbalancers.Get(ctx, cl.lb, id).Extract()
		if err == nil {
			return lb, nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("getting load balancer %s: %w", id, err)
		}
		if svc.Annotations[annLoadBalancerID] != "" {
			return nil, fmt.Errorf("annotation %s: load balancer %s does not exist", annLoadBalancerID, id)
		}
		l.forget(svc)
	}
	name := l.GetLoadBalancerName(ctx, clusterName, svc)
	pages, err := loadbalancers.List(cl.lb, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing load balancers named %s: %w", name, err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Name == name && owned(&all[i], clusterName, svc) {
			l.remember(svc, all[i].ID)
			return &all[i], nil
		}
	}
	if len(all) > 0 {
		return nil, fmt.Errorf("a load balancer named %s exists but is not tagged as owned by cluster %s for %s; not touching it", name, clusterName, svcKey(svc))
	}
	return nil, nil
}

func (l *loadBalancers) remember(svc *v1.Service, id string) {
	l.mu.Lock()
	l.ids[svcKey(svc)] = id
	l.mu.Unlock()
}

func (l *loadBalancers) forget(svc *v1.Service) {
	l.mu.Lock()
	delete(l.ids, svcKey(svc))
	l.mu.Unlock()
}

// GetLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := l.find(ctx, cl, clusterName, svc)
	if err != nil || lb == nil {
		return nil, false, err
	}
	addr := lb.VipAddress
	if fip, err := l.portFIP(ctx, cl, lb.VipPortID); err != nil {
		return nil, true, err
	} else if fip != nil {
		addr = fip.FloatingIP
	}
	return status(addr, svc), true, nil
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (_ *v1.LoadBalancerStatus, err error) {
	defer observe("ensure", time.Now(), &err)
	return l.sync(ctx, clusterName, svc, nodes, false)
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: the same reconcile, which writes
// only the pools whose members changed (one batch call each).
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (err error) {
	defer observe("update", time.Now(), &err)
	_, err = l.sync(ctx, clusterName, svc, nodes, true)
	return err
}

func (l *loadBalancers) retry(msg string) error {
	return api.NewRetryError(msg, l.c.cfg.LoadBalancer.PendingRetry.Duration)
}

func (l *loadBalancers) sync(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node, mustExist bool) (*v1.LoadBalancerStatus, error) {
	name := l.GetLoadBalancerName(ctx, clusterName, svc)
	spec, err := l.spec(name, svc)
	if err != nil {
		l.c.event(svc, v1.EventTypeWarning, "InvalidLoadBalancerConfig", err.Error())
		return nil, err
	}
	for _, w := range spec.warnings {
		l.c.event(svc, v1.EventTypeWarning, "UnsupportedAnnotation", w)
	}
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	lb, err := l.find(ctx, cl, clusterName, svc)
	if err != nil {
		return nil, err
	}
	if lb == nil {
		if mustExist {
			return nil, fmt.Errorf("load balancer %s does not exist yet", name)
		}
		members, err := l.members(ctx, nodes, spec)
		if err != nil {
			return nil, err
		}
		if lb, err = l.create(ctx, cl, clusterName, svc, spec, members); err != nil {
			return nil, err
		}
	}
	switch st := lb.ProvisioningStatus; {
	case st == "ACTIVE":
	case st == "ERROR" && spec.existingID == "":
		// A failed provisioning does not heal: replace it. The retry creates a new one.
		l.c.event(svc, v1.EventTypeWarning, "LoadBalancerError", fmt.Sprintf("load balancer %s (%s) is in ERROR; deleting it to create it again", name, lb.ID))
		if err := loadbalancers.Delete(ctx, cl.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("deleting load balancer %s in ERROR: %w", lb.ID, err)
		}
		l.forget(svc)
		return nil, l.retry(fmt.Sprintf("load balancer %s was in ERROR and is being recreated", name))
	default:
		return nil, l.retry(fmt.Sprintf("load balancer %s is %s", name, st))
	}
	members, err := l.members(ctx, nodes, spec)
	if err != nil {
		return nil, err
	}
	if err := l.syncListeners(ctx, cl, lb.ID, spec, members); err != nil {
		return nil, err
	}
	addr := lb.VipAddress
	if !spec.internal {
		fip, err := l.ensureFIP(ctx, cl, clusterName, svc, spec, lb)
		if err != nil {
			return nil, err
		}
		addr = fip
	}
	return status(addr, svc), nil
}

// create makes the load balancer with its listeners, pools, members and monitors in one call
// (Octavia's fully populated create) and returns it, usually PENDING_CREATE.
func (l *loadBalancers) create(ctx context.Context, cl *clients, clusterName string, svc *v1.Service, spec *lbSpec, members []member) (*loadbalancers.LoadBalancer, error) {
	if spec.existingID != "" {
		return nil, fmt.Errorf("annotation %s: load balancer %s not found", annLoadBalancerID, spec.existingID)
	}
	opts := loadbalancers.CreateOpts{
		Name: spec.name, Description: description(clusterName, svc), Provider: spec.provider,
		VipSubnetID: spec.subnetID, Tags: ownerTags(clusterName, svc),
	}
	if spec.subnetID == "" {
		opts.VipNetworkID = spec.networkID
	}
	for _, ls := range spec.listeners {
		opts.Listeners = append(opts.Listeners, listenerCreateOpts(spec, ls, members))
	}
	lb, err := loadbalancers.Create(ctx, cl.lb, opts).Extract()
	if err != nil {
		return nil, fmt.Errorf("creating load balancer %s: %w", spec.name, err)
	}
	l.remember(svc, lb.ID)
	klog.InfoS("Created load balancer", "service", klog.KObj(svc), "name", spec.name, "id", lb.ID, "status", lb.ProvisioningStatus)
	// One look right away, no waiting: fast providers (OVN) may be ACTIVE already.
	if now, err := loadbalancers.Get(ctx, cl.lb, lb.ID).Extract(); err == nil {
		lb = now
	}
	return lb, nil
}

// waitActive polls a load balancer between the writes of one update; still pending after
// updateWait is a RetryError, never a blocked worker for minutes.
func (l *loadBalancers) waitActive(ctx context.Context, cl *clients, id string) error {
	deadline := time.Now().Add(updateWait)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		lb, err := loadbalancers.Get(ctx, cl.lb, id).Extract()
		if err != nil {
			return fmt.Errorf("getting load balancer %s: %w", id, err)
		}
		switch {
		case lb.ProvisioningStatus == "ACTIVE":
			return nil
		case !strings.HasPrefix(lb.ProvisioningStatus, "PENDING_"):
			return fmt.Errorf("load balancer %s went %s during an update", id, lb.ProvisioningStatus)
		case time.Now().After(deadline):
			return l.retry(fmt.Sprintf("load balancer %s is still %s", id, lb.ProvisioningStatus))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// conflict turns Octavia's 409 (the load balancer is busy) into a RetryError.
func (l *loadBalancers) conflict(err error, what string) error {
	if gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		return l.retry(fmt.Sprintf("%s: load balancer busy (409), retrying", what))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer. It deletes the floating IP
// only if we created it and keep-floatingip is not set, then the load balancer with its
// children, and returns nil only once Octavia no longer has it.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) (err error) {
	defer observe("delete", time.Now(), &err)
	cl, err := l.c.sess.get(ctx)
	if err != nil {
		return err
	}
	lb, err := l.find(ctx, cl, clusterName, svc)
	if err != nil || lb == nil {
		return err
	}
	if svc.Annotations[annLoadBalancerID] != "" && !owned(lb, clusterName, svc) {
		klog.InfoS("Not deleting an adopted load balancer", "service", klog.KObj(svc), "id", lb.ID)
		return nil
	}
	if strings.HasPrefix(lb.ProvisioningStatus, "PENDING_") {
		return l.retry(fmt.Sprintf("load balancer %s is %s", lb.Name, lb.ProvisioningStatus))
	}
	keep := false
	if v, ok := svc.Annotations[annKeepFloatingIP]; ok {
		keep = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	if err := l.releaseFIP(ctx, cl, clusterName, svc, lb.VipPortID, keep); err != nil {
		return err
	}
	err = loadbalancers.Delete(ctx, cl.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return l.conflict(err, "deleting load balancer "+lb.Name)
	}
	_, err = loadbalancers.Get(ctx, cl.lb, lb.ID).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		l.forget(svc)
		klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "id", lb.ID)
		return nil
	}
	if err != nil {
		return err
	}
	return l.retry(fmt.Sprintf("load balancer %s is being deleted", lb.Name))
}

func status(addr string, svc *v1.Service) *v1.LoadBalancerStatus {
	vip := v1.LoadBalancerIPModeVIP
	var ports []v1.PortStatus
	for _, p := range svc.Spec.Ports {
		ports = append(ports, v1.PortStatus{Port: p.Port, Protocol: p.Protocol})
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: addr, IPMode: &vip, Ports: ports}}}
}

func observe(op string, start time.Time, err *error) {
	e := *err
	var retry *api.RetryError
	if errors.As(e, &retry) {
		e = nil // waiting for Octavia is not a failure
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", op, start, e)
}
