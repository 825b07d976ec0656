package servicecontroller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
)

// syncService brings the load balancer of the Service under key in step with it.
func (c *Controller) syncService(ctx context.Context, key string) error {
	if old := c.takeGone(key); old != nil {
		if err := c.deleteGone(ctx, key, old); err != nil {
			c.mu.Lock()
			if _, again := c.gone[key]; !again {
				c.gone[key] = old
			}
			c.mu.Unlock()
			return err
		}
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	cl := c.opts.Classes
	wants, cleanup := cl.Wants(svc), cl.NeedsCleanup(svc)
	if wants && !cleanup {
		return c.ensure(ctx, key, svc)
	}
	if !cleanup && !c.ours(key, svc.UID) {
		// Not wanted and no finalizer to honour: ours only if we synced it in this process or
		// saw its type leave LoadBalancer; otherwise another implementation's.
		return nil
	}
	return c.cleanup(ctx, key, svc)
}

// failed records the library's Warning for a failed sync and returns err for a retry.
func (c *Controller) failed(svc *v1.Service, err error) error {
	c.recorder.Eventf(svc, v1.EventTypeWarning, reasonSyncFailed, formatSyncFailed, err)
	return err
}

// ensure makes or updates svc's load balancer. The first sync in this process of a Service that
// already has the finalizer is quiet: it records Events only if the provider's answer changes
// the status, so a restart that changes nothing writes nothing to the API.
func (c *Controller) ensure(ctx context.Context, key string, svc *v1.Service) error {
	st, known := c.stateOf(key)
	// A drift resync's sync (resync.go) is quiet too: it asks the provider to compare, nothing more.
	resync := c.takeResync(key)
	quiet := servicehelper.HasLBFinalizer(svc) && (resync || !(known && st.uid == svc.UID))
	if !quiet {
		c.recorder.Event(svc, v1.EventTypeNormal, reasonEnsuring, messageEnsuring)
	}
	// The finalizer goes on before anything is made in the cloud, so the Service cannot be
	// deleted without its load balancer being deleted first.
	if err := c.patchFinalizer(svc, true); err != nil {
		return c.failed(svc, fmt.Errorf("failed to add load balancer cleanup finalizer: %w", err))
	}
	set, err := c.memberSet()
	if err != nil {
		return c.failed(svc, err)
	}
	members := slices.Clone(set.nodes) // the provider's own: it may sort or filter it
	if len(members) == 0 && !quiet {
		c.recorder.Event(svc, v1.EventTypeWarning, reasonNoNodes, messageNoNodes)
	}
	// Recorded before the call, whatever its outcome: a failure is retried through the
	// Service queue, not by the next Node sync.
	c.remember(key, svc.UID, set.digest)
	status, err := c.balancer.EnsureLoadBalancer(ctx, c.opts.ClusterName, svc, members)
	if err == cloudprovider.ImplementedElsewhere {
		klog.V(4).InfoS("Load balancer implemented by another controller", "service", key, "provider", c.provider)
		return nil
	}
	if err != nil {
		// %w: a RetryError inside stays visible to processService.
		return c.failed(svc, fmt.Errorf("failed to ensure load balancer: %w", err))
	}
	if status == nil {
		return c.failed(svc, fmt.Errorf("service status returned by EnsureLoadBalancer is nil"))
	}
	changed := !servicehelper.LoadBalancerStatusEqual(&svc.Status.LoadBalancer, status)
	if quiet && changed {
		c.recorder.Event(svc, v1.EventTypeNormal, reasonEnsuring, messageEnsuring)
		if len(members) == 0 {
			c.recorder.Event(svc, v1.EventTypeWarning, reasonNoNodes, messageNoNodes)
		}
	}
	if !quiet || changed {
		c.recorder.Event(svc, v1.EventTypeNormal, reasonEnsured, messageEnsured)
	}
	if changed {
		if err := c.patchStatus(svc, status); err != nil && !apierrors.IsNotFound(err) {
			return c.failed(svc, fmt.Errorf("failed to update load balancer status: %w", err))
		}
	}
	return nil
}

// cleanup deletes svc's load balancer, then removes the finalizer and clears the status.
// Events are recorded only when something was there to remove.
func (c *Controller) cleanup(ctx context.Context, key string, svc *v1.Service) error {
	_, exists, err := c.balancer.GetLoadBalancer(ctx, c.opts.ClusterName, svc)
	if err != nil {
		return c.failed(svc, fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err))
	}
	if exists {
		klog.V(2).InfoS("Deleting load balancer", "service", key)
		c.recorder.Event(svc, v1.EventTypeNormal, reasonDeleting, messageDeleting)
		if err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil && err != cloudprovider.ImplementedElsewhere {
			return c.failed(svc, fmt.Errorf("failed to delete load balancer: %w", err))
		}
	}
	// Forgotten before the finalizer goes, so the deletion event that follows does not look
	// like a Service deleted behind our back.
	_, known := c.stateOf(key)
	c.forget(key)
	hadFinalizer := servicehelper.HasLBFinalizer(svc)
	if err := c.patchFinalizer(svc, false); err != nil {
		return c.failed(svc, fmt.Errorf("failed to remove load balancer cleanup finalizer: %w", err))
	}
	hadStatus := len(svc.Status.LoadBalancer.Ingress) > 0
	if exists || known || hadFinalizer || hadStatus {
		c.recorder.Event(svc, v1.EventTypeNormal, reasonDeleted, messageDeleted)
	}
	if hadStatus {
		// NotFound: the Service went away once its finalizer was removed.
		if err := c.patchStatus(svc, &v1.LoadBalancerStatus{}); err != nil && !apierrors.IsNotFound(err) {
			return c.failed(svc, fmt.Errorf("failed to update load balancer status: %w", err))
		}
	}
	return nil
}

// deleteGone deletes the load balancer of a Service that was deleted without the finalizer
// (removed by hand), from its last known copy.
func (c *Controller) deleteGone(ctx context.Context, key string, svc *v1.Service) error {
	if !c.opts.Classes.Wants(svc) {
		return nil
	}
	klog.V(2).InfoS("Service deleted without its finalizer; deleting its load balancer", "service", key)
	c.recorder.Event(svc, v1.EventTypeNormal, reasonDeleting, messageDeleting)
	if err := c.balancer.EnsureLoadBalancerDeleted(ctx, c.opts.ClusterName, svc); err != nil {
		c.recorder.Eventf(svc, v1.EventTypeWarning, reasonDeleteFailed, formatDeleteFailed, err)
		return err
	}
	c.recorder.Event(svc, v1.EventTypeNormal, reasonDeleted, messageDeleted)
	c.mu.Lock()
	if st, ok := c.state[key]; ok && st.uid == svc.UID {
		delete(c.state, key)
	}
	c.mu.Unlock()
	return nil
}

// patchFinalizer adds (or removes) the cleanup finalizer if it is missing (or present).
func (c *Controller) patchFinalizer(svc *v1.Service, add bool) error {
	if servicehelper.HasLBFinalizer(svc) == add {
		return nil
	}
	updated := svc.DeepCopy() // never change the informer's copy
	if add {
		updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	} else {
		updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool {
			return f == servicehelper.LoadBalancerCleanupFinalizer
		})
	}
	_, err := servicehelper.PatchService(c.client.CoreV1(), svc, updated)
	return err
}

func (c *Controller) patchStatus(svc *v1.Service, status *v1.LoadBalancerStatus) error {
	if servicehelper.LoadBalancerStatusEqual(&svc.Status.LoadBalancer, status) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *status
	_, err := servicehelper.PatchService(c.client.CoreV1(), svc, updated)
	return err
}

// syncNodes gives the current member set to every load balancer synced with another one. The
// stale ones are found with one set; each update then reads the set again (a map read unless
// a Node changed meanwhile), so a Node added during a long pass reaches the load balancers
// updated after it, never an older set. A Service whose digest matches costs a map read.
func (c *Controller) syncNodes(ctx context.Context, workers int) error {
	c.nodeSyncMu.Lock()
	defer c.nodeSyncMu.Unlock()
	defer func(start time.Time) { nodeSyncLatency.Observe(time.Since(start).Seconds()) }(time.Now())
	set, err := c.memberSet()
	if err != nil {
		nodeSyncErrorCount.Inc()
		return err
	}
	d := set.digest
	var stale []string
	c.mu.Lock()
	for key, st := range c.state {
		if st.nodes != d {
			stale = append(stale, key)
		}
	}
	c.mu.Unlock()
	if len(stale) == 0 {
		return nil
	}
	klog.V(2).InfoS("Updating load balancer members", "loadBalancers", len(stale), "nodes", len(set.nodes))
	var mu sync.Mutex
	var retry []string
	workqueue.ParallelizeUntil(ctx, max(workers, 1), len(stale), func(i int) {
		if c.updateMembers(ctx, stale[i]) {
			mu.Lock()
			retry = append(retry, stale[i])
			mu.Unlock()
		}
	})
	for _, key := range retry {
		c.enqueueKey(key) // a full sync, as the library retries
	}
	return nil
}

// updateMembers calls UpdateLoadBalancer for one Service with the member set as it is now, in
// a slice of the call's own; true asks for a retry.
func (c *Controller) updateMembers(ctx context.Context, key string) bool {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil || !c.opts.Classes.Wants(svc) || c.opts.Classes.NeedsCleanup(svc) {
		return false // gone or going: the Service queue deals with it
	}
	set, err := c.memberSet()
	if err != nil {
		nodeSyncErrorCount.Inc()
		return true
	}
	c.mu.Lock()
	st, ok := c.state[key]
	if !ok || st.uid != svc.UID || st.nodes == set.digest {
		c.mu.Unlock()
		return false // not ours, or already synced with this set (by its own sync, say)
	}
	// Recorded before the call: a failure is retried by a Service sync.
	c.state[key] = syncedWith{uid: svc.UID, nodes: set.digest}
	c.mu.Unlock()
	members := slices.Clone(set.nodes)
	loadBalancerSyncCount.Inc()
	start := time.Now()
	err = c.balancer.UpdateLoadBalancer(ctx, c.opts.ClusterName, svc, members)
	updateLoadBalancerHostLatency.Observe(time.Since(start).Seconds())
	switch {
	case err == nil && len(members) == 0:
		c.recorder.Event(svc, v1.EventTypeWarning, reasonNoNodes, messageNoNodes)
		return false
	case err == nil:
		c.recorder.Event(svc, v1.EventTypeNormal, reasonUpdated, messageUpdated)
		return false
	case err == cloudprovider.ImplementedElsewhere:
		return false
	}
	// A failure matters only while the load balancer exists.
	if _, exists, gerr := c.balancer.GetLoadBalancer(ctx, c.opts.ClusterName, svc); gerr == nil && !exists {
		return false
	}
	nodeSyncErrorCount.Inc()
	c.recorder.Eventf(svc, v1.EventTypeWarning, reasonUpdateFailed, formatUpdateFailed, nodeNamesForEvent(members), len(members), err)
	klog.ErrorS(err, "Updating load balancer members failed", "service", key)
	return true
}

func nodeNamesForEvent(nodes []*v1.Node) []string {
	names := make([]string, 0, min(len(nodes), maxNodeNamesInEvent)+1)
	for _, n := range nodes[:min(len(nodes), maxNodeNamesInEvent)] {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if len(nodes) > maxNodeNamesInEvent {
		names = append(names, fmt.Sprintf("<%d more>", len(nodes)-maxNodeNamesInEvent))
	}
	return names
}
