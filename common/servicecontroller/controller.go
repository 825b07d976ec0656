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
// Pure decisions live in classes.go, nodes.go and changes.go; this file and sync.go are the edge.
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
	// Recorder, when set, records Events instead of a broadcaster to the API (unit tests).
	Recorder record.EventRecorder
}

// Controller keeps load balancers in step with Services and Nodes.
type Controller struct {
	balancer   cloudprovider.LoadBalancer
	provider   string
	client     kubernetes.Interface
	opts       Options
	services   corelisters.ServiceLister
	nodes      corelisters.NodeLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	nodeQueue  workqueue.TypedRateLimitingInterface[string]
	recorder   record.EventRecorder
	broadcast  record.EventBroadcaster
	mu         sync.Mutex
	state      map[string]syncedWith  // Service key -> what its load balancer was last synced with
	gone       map[string]*v1.Service // Services deleted without the finalizer whose load balancer we made
	resync     map[string]struct{}    // Services queued by a drift resync (resync.go): their next sync is quiet
	nodeSyncMu sync.Mutex             // one Node sync at a time (tests call syncNodes directly)
	members    memberCache            // the member set, listed again only after a Node changed
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
		recorder: opts.Recorder,
		state:    map[string]syncedWith{},
		gone:     map[string]*v1.Service{},
		resync:   map[string]struct{}{},
	}
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
				c.takeResync(s.Namespace + "/" + s.Name) // a real change: its sync records the usual Events
				c.enqueue(s)
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
			c.nodeQueue.Add(nodesKey)
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
				c.nodeQueue.Add(nodesKey)
			}
		},
		DeleteFunc: func(any) {
			c.members.invalidate()
			c.nodeQueue.Add(nodesKey)
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
	c.queue.Add(key)
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
		c.queue.Add(key)
	}
}

// Run starts the workers and blocks until ctx is done. Call it once.
func (c *Controller) Run(ctx context.Context, workers int, metrics *controllersmetrics.ControllerManagerMetrics) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.nodeQueue.ShutDown()
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
	err := c.syncService(ctx, key)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
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
	c.mu.Unlock()
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.state, key)
	delete(c.resync, key)
	c.mu.Unlock()
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
