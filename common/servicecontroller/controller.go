// Package servicecontroller is ccm's service controller: it gives Services of type
// LoadBalancer a cloud load balancer through a provider's cloudprovider.LoadBalancer, with the
// contract of k8s.io/cloud-provider v0.37's controller (the load-balancer-cleanup finalizer,
// status patches, the same Event reasons and messages, Node predicates, retries with backoff)
// and three differences:
//   - spec.loadBalancerClass: it serves the classes it is configured with (see Classes);
//   - memory: per Service it keeps a 16-byte digest of the member set it was synced with, not
//     the Nodes, and a Node change reaches only the load balancers whose digest differs;
//   - quiet restarts: the first sync of a Service that already carries the finalizer (after a
//     restart or a failover) writes nothing and records no Event unless the provider's answer
//     changes the status. The provider still compares with the cloud and repairs drift.
//
// Around it: a drift resync that never delays a change (resync.go, fairqueue.go) and Node
// changes coalesced into one member pass (coalesce.go).
//
// Pure decisions live in classes.go, nodes.go, changes.go and coalesce.go's passDue; this file
// and sync.go are the edge.
package servicecontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/klog/v2"
)

// Timings of the library's controller, kept so that behaviour under load and failure is the same.
const (
	serviceResync = 30 * time.Second  // informer resync of Services (an identical copy syncs nothing)
	nodeResync    = 100 * time.Second // informer resync of Nodes (likewise)
	minRetry      = 5 * time.Second   // first retry of a failed sync, doubling ...
	maxRetry      = 300 * time.Second // ... up to this
	// Name is the controller's name in metrics and logs, as the library's.
	Name = "service"
	// nodesKey is the one key of the Node queue: every Node event asks the same question (which
	// load balancers' member sets changed?), answered from the lister, so events coalesce.
	nodesKey = "nodes"
)

// Options configure a Controller.
type Options struct {
	ClusterName string
	Classes     Classes
	// NodeSyncDelay coalesces Node changes: the member pass starts once no Node change has come
	// for this long (at the latest maxWaitFactor times it after the first), so a burst of Nodes
	// costs one update per load balancer. 0 starts a pass at each change, as the library does.
	NodeSyncDelay time.Duration
	// Recorder, when set, records Events instead of a broadcaster to the API (unit tests).
	Recorder record.EventRecorder
}

// Controller keeps load balancers in step with Services and Nodes.
type Controller struct {
	balancer  cloudprovider.LoadBalancer
	provider  string
	client    kubernetes.Interface
	opts      Options
	services  corelisters.ServiceLister
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	nodeQueue workqueue.TypedRateLimitingInterface[string]
	// resyncQueue holds the drift resync's keys until the feed admits them to queue (fairqueue.go).
	resyncQueue workqueue.TypedInterface[string]
	fair        fairness // which keys are queued, being synced or admitted from the resync
	coalesce    *nodeCoalescer
	recorder    record.EventRecorder
	broadcast   record.EventBroadcaster
	mu          sync.Mutex
	state       map[string]syncedWith  // Service key -> what its load balancer was last synced with
	gone        map[string]*v1.Service // Services deleted without the finalizer whose load balancer we made
	resync      map[string]struct{}    // Services queued by a drift resync (resync.go): their next sync is quiet
	leaving     map[string]types.UID   // Services whose type left LoadBalancer: their load balancer is looked for and deleted
	nodeSyncMu  sync.Mutex             // one Node sync at a time (tests call syncNodes directly)
	members     memberCache            // the member set, listed again only after a Node changed
}

// syncedWith is all that is kept per Service: its UID (a Service deleted and created again
// under the same name is another Service) and the digest of the member set.
type syncedWith struct {
	uid   types.UID
	nodes Digest
}

// New builds the controller and registers its event handlers on the informers. It fails, as
// the library's does, when the cloud has no load balancers.
func New(cloud cloudprovider.Interface, client kubernetes.Interface, services coreinformers.ServiceInformer,
	nodes coreinformers.NodeInformer, opts Options) (*Controller, error) {
	if cloud == nil {
		return nil, errors.New("no cloud provider: Services of type LoadBalancer will not be served")
	}
	lb, ok := cloud.LoadBalancer()
	if !ok {
		return nil, fmt.Errorf("cloud provider %q does not support load balancers", cloud.ProviderName())
	}
	if err := opts.Classes.Validate(); err != nil {
		return nil, err
	}
	register()
	c := &Controller{
		balancer: lb,
		provider: cloud.ProviderName(),
		client:   client,
		opts:     opts,
		services: services.Lister(),
		nodes:    nodes.Lister(),
		synced:   []cache.InformerSynced{services.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minRetry, maxRetry),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service"}),
		nodeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](minRetry, maxRetry),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node"}),
		resyncQueue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "service-resync"}),
		fair:        newFairness(),
		recorder:    opts.Recorder,
		state:       map[string]syncedWith{},
		gone:        map[string]*v1.Service{},
		resync:      map[string]struct{}{},
		leaving:     map[string]types.UID{},
	}
	c.coalesce = newNodeCoalescer(opts.NodeSyncDelay, func() { c.nodeQueue.Add(nodesKey) })
	if c.recorder == nil {
		c.broadcast = record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: eventCacheSize}))
		c.recorder = c.broadcast.NewRecorder(scheme.Scheme, v1.EventSource{Component: eventSource})
	}
	classes := opts.Classes
	_, err := services.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			// A Service that needs cleanup is queued too: the deletion may have begun while
			// no ccm ran.
			if s, ok := obj.(*v1.Service); ok && (classes.Wants(s) || classes.NeedsCleanup(s)) {
				c.enqueue(s)
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Service)
			s, ok2 := cur.(*v1.Service)
			if ok1 && ok2 && (classes.NeedsSync(o, s) || classes.NeedsCleanup(s)) {
				if classes.Wants(o) && !classes.Wants(s) {
					c.markLeaving(s) // its load balancer is ours to delete, whether or not synced here
				}
				c.changed(s.Namespace + "/" + s.Name) // a real change: its sync records the usual Events
			}
		},
		// A Service deleted with the finalizer was handled on the update that set its deletion
		// timestamp; one whose finalizer was removed by hand is handled here, from its last copy.
		DeleteFunc: c.deleted,
	}, serviceResync)
	if err != nil {
		return nil, err
	}
	_, err = nodes.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			c.members.invalidate()
			c.coalesce.changed()
		},
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*v1.Node)
			n, ok2 := cur.(*v1.Node)
			if !ok1 || !ok2 {
				return
			}
			if NodeChanged(o, n) {
				c.members.invalidate()
			}
			if NodeUpdateMatters(o, n) {
				c.coalesce.changed()
			}
		},
		DeleteFunc: func(any) {
			c.members.invalidate()
			c.coalesce.changed()
		},
	}, nodeResync)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(s *v1.Service) {
	key, err := cache.MetaNamespaceKeyFunc(s)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.enqueueKey(key)
}

func (c *Controller) deleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*v1.Service)
	if !ok {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(s)
	if err != nil {
		return
	}
	c.mu.Lock()
	st, known := c.state[key]
	if known && st.uid == s.UID {
		c.gone[key] = s
	}
	c.mu.Unlock()
	if known {
		c.enqueueKey(key)
	}
}

// Run starts the workers and blocks until ctx is done. Call it once.
func (c *Controller) Run(ctx context.Context, workers int, metrics *controllersmetrics.ControllerManagerMetrics) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()
	defer c.resyncQueue.ShutDown()
	if c.broadcast != nil {
		c.broadcast.StartStructuredLogging(0)
		c.broadcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer c.broadcast.Shutdown()
	}
	klog.InfoS("Starting service controller", "classes", c.opts.Classes.Names, "unclassed", c.opts.Classes.Unclassed)
	defer klog.InfoS("Shutting down service controller")
	if metrics != nil {
		metrics.ControllerStarted(Name)
		defer metrics.ControllerStopped(Name)
	}
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	if workers < 1 {
		workers = 1
	}
	c.fair.setLimit(resyncLimit(workers))
	go c.runResyncFeed(ctx)
	go c.coalesce.run(ctx)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processService(ctx) {
			}
		}, time.Second)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for c.processNodes(ctx, workers) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (c *Controller) processService(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	c.fair.take(key)
	defer c.fair.done(key) // before Done: a key queued meanwhile is seen as queued
	err := c.syncService(ctx, key)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	c.fair.markQueued(key) // a retry is the Service's own sync, as an event's is
	var re *api.RetryError
	if errors.As(err, &re) {
		klog.InfoS("Load balancer not ready, checking again", "service", key, "after", re.RetryAfter(), "reason", err.Error())
		c.queue.AddAfter(key, re.RetryAfter())
	} else {
		utilruntime.HandleError(fmt.Errorf("syncing Service %s (retrying with backoff): %w", key, err))
		c.queue.AddRateLimited(key)
	}
	return true
}

func (c *Controller) processNodes(ctx context.Context, workers int) bool {
	key, quit := c.nodeQueue.Get()
	if quit {
		return false
	}
	defer c.nodeQueue.Done(key)
	if err := c.syncNodes(ctx, workers); err != nil {
		utilruntime.HandleError(fmt.Errorf("syncing load balancer members: %w", err))
		c.nodeQueue.AddRateLimited(key)
		return true
	}
	c.nodeQueue.Forget(key)
	return true
}

// memberSet returns the current member set (see memberCache).
func (c *Controller) memberSet() (memberSet, error) {
	return c.members.get(func() ([]*v1.Node, error) { return c.nodes.List(labels.Everything()) })
}

func (c *Controller) stateOf(key string) (syncedWith, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.state[key]
	return s, ok
}

func (c *Controller) remember(key string, uid types.UID, d Digest) {
	c.mu.Lock()
	c.state[key] = syncedWith{uid: uid, nodes: d}
	delete(c.leaving, key) // it wants a load balancer again
	c.mu.Unlock()
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.state, key)
	delete(c.resync, key)
	delete(c.leaving, key)
	c.mu.Unlock()
}

// markLeaving notes that svc's type left LoadBalancer (for this controller's classes), so its
// next sync looks for its load balancer and deletes it, as the library does, even when this
// process never synced it (it was still queued, or ccm restarted in between).
func (c *Controller) markLeaving(svc *v1.Service) {
	c.mu.Lock()
	c.leaving[svc.Namespace+"/"+svc.Name] = svc.UID
	c.mu.Unlock()
}

// ours reports whether the Service under key, which no longer wants a load balancer and has no
// finalizer to honour, is still this controller's to clean up: it synced it in this process, or
// saw its type leave LoadBalancer.
func (c *Controller) ours(key string, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, synced := c.state[key]
	left, leaving := c.leaving[key]
	return (synced && st.uid == uid) || (leaving && left == uid)
}

func (c *Controller) takeGone(key string) *v1.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.gone[key]
	delete(c.gone, key)
	return s
}

// Tracked returns how many Services the controller keeps a member-set digest for (tests, bench).
func (c *Controller) Tracked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state)
}
