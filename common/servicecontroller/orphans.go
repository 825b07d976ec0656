package servicecontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

// Orphan collection (issue 16, item 4): a load balancer this cluster owns whose Service is gone
// (deleted while no ccm ran, its finalizer removed by hand), was replaced by another of the same
// name, or no longer wants one, stays in the cloud and on the bill. A provider that can list what
// it owns by the ownership marks implements OwnedLister; the collector compares the listing with
// the Service cache, reports orphans and deletes one only after it has stayed an orphan for the
// grace period. orphanloop.go runs it in ccm; `ccm gc` runs FindOrphans once.

// OwnedLoadBalancer is one load balancer a listing found, with the identity its ownership marks
// carry (UID empty for objects written before UIDs were recorded).
type OwnedLoadBalancer struct {
	Owner ownership.Identity
	ID    string // the cloud's name or ID, for logs and Events
}

// Service stands for the Service lb was made for, for a provider's delete path: namespace,
// name and UID (all that ownership checks read), type LoadBalancer, no annotations.
func (lb OwnedLoadBalancer) Service() *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: lb.Owner.Namespace, Name: lb.Owner.Name, UID: types.UID(lb.Owner.UID)},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
}

// OwnedLister lists and deletes the load balancers a cluster owns.
type OwnedLister interface {
	// OwnedLoadBalancers lists every load balancer carrying cluster's ownership mark. An error
	// means the listing is incomplete: nothing is collected from it.
	OwnedLoadBalancers(ctx context.Context, cluster string) ([]OwnedLoadBalancer, error)
	// DeleteOwnedLoadBalancer deletes lb and what was made for it, checking its ownership marks
	// again before any write.
	DeleteOwnedLoadBalancer(ctx context.Context, cluster string, lb OwnedLoadBalancer) error
}

// ServiceLookup returns the Service namespace/name from the cache (nil when there is none).
type ServiceLookup func(namespace, name string) *v1.Service

// FindOrphans returns the load balancers of lbs that no Service accounts for: the Service is
// gone, is another one of the same name (UID differs), or wants no load balancer from this
// controller and has no finalizer asking for cleanup (the controller deletes those itself).
// Pure: the caller guarantees the cache is synced and the listing complete.
func FindOrphans(lbs []OwnedLoadBalancer, lookup ServiceLookup, classes Classes) []OwnedLoadBalancer {
	var out []OwnedLoadBalancer
	for _, lb := range lbs {
		svc := lookup(lb.Owner.Namespace, lb.Owner.Name)
		switch {
		case svc == nil:
		case lb.Owner.UID != "" && lb.Owner.UID != string(svc.UID):
		case !classes.Wants(svc) && !classes.NeedsCleanup(svc):
		default:
			continue
		}
		out = append(out, lb)
	}
	return out
}

// orphanKey tells listed load balancers apart across rounds.
func orphanKey(lb OwnedLoadBalancer) string {
	return lb.ID + "\x00" + lb.Owner.Service() + "\x00" + lb.Owner.UID
}

// OrphanTracker remembers since when each orphan has been one.
type OrphanTracker struct {
	firstSeen map[string]time.Time
}

// NewOrphanTracker returns an empty tracker.
func NewOrphanTracker() *OrphanTracker { return &OrphanTracker{firstSeen: map[string]time.Time{}} }

// Plan takes this round's orphans and returns those seen for the first time (to report) and those
// that have been orphans for at least grace (to delete; never when grace is 0). A load balancer
// no longer listed as an orphan is forgotten, so an orphan that comes back starts again.
func (t *OrphanTracker) Plan(now time.Time, orphans []OwnedLoadBalancer, grace time.Duration) (report, remove []OwnedLoadBalancer) {
	seen := make(map[string]bool, len(orphans))
	for _, lb := range orphans {
		k := orphanKey(lb)
		seen[k] = true
		first, ok := t.firstSeen[k]
		if !ok {
			t.firstSeen[k] = now
			report = append(report, lb)
			continue
		}
		if grace > 0 && now.Sub(first) >= grace {
			remove = append(remove, lb)
		}
	}
	for k := range t.firstSeen {
		if !seen[k] {
			delete(t.firstSeen, k)
		}
	}
	return report, remove
}

// Deleted forgets lb once it is deleted.
func (t *OrphanTracker) Deleted(lb OwnedLoadBalancer) { delete(t.firstSeen, orphanKey(lb)) }

// Collector runs orphan collection rounds.
type Collector struct {
	Lister   OwnedLister
	Cluster  string
	Classes  Classes
	Services corelisters.ServiceLister
	Synced   cache.InformerSynced
	Recorder record.EventRecorder // Events on a Service of the orphan's namespace/name, when one exists
	Grace    time.Duration        // 0: report only
	Now      func() time.Time
	// Found is how many orphans the last complete round found (reported ones included), Left
	// how many of them are still in the cloud after it (found, not deleted).
	Found, Left int
	tracker     *OrphanTracker
	// deleting are orphans whose delete the cloud accepted but finishes later (the provider
	// answered an api.RetryError, e.g. Octavia's cascade delete): each counts as deleted once a
	// listing no longer has it, or once a later delete returns nil.
	deleting map[string]OwnedLoadBalancer
}

const reasonOrphan = "OrphanedLoadBalancer"

// Round runs one collection and returns what it deleted. It does nothing while the Service
// cache is not synced and nothing when the listing fails: either would make every load
// balancer look like an orphan.
func (c *Collector) Round(ctx context.Context) ([]OwnedLoadBalancer, error) {
	if c.tracker == nil {
		c.tracker = NewOrphanTracker()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Synced != nil && !c.Synced() {
		return nil, fmt.Errorf("service cache not synced; no orphan collection")
	}
	lbs, err := c.Lister.OwnedLoadBalancers(ctx, c.Cluster)
	if err != nil {
		return nil, fmt.Errorf("listing owned load balancers (nothing collected): %w", err)
	}
	lookup := func(ns, name string) *v1.Service {
		s, err := c.Services.Services(ns).Get(name)
		if err != nil {
			return nil
		}
		return s
	}
	orphans := FindOrphans(lbs, lookup, c.Classes)
	c.Found = len(orphans)
	var deleted []OwnedLoadBalancer
	if c.deleting == nil {
		c.deleting = map[string]OwnedLoadBalancer{}
	}
	listed := make(map[string]bool, len(lbs))
	for _, lb := range lbs {
		listed[orphanKey(lb)] = true
	}
	for k, lb := range c.deleting {
		if !listed[k] {
			klog.InfoS("Orphaned load balancer deleted", "loadBalancer", lb.ID, "service", lb.Owner.Service())
			delete(c.deleting, k)
			deleted = append(deleted, lb)
		}
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].ID < deleted[j].ID })
	c.Left = len(orphans)
	report, remove := c.tracker.Plan(c.Now(), orphans, c.Grace)
	for _, lb := range report {
		klog.InfoS("Orphaned load balancer found", "loadBalancer", lb.ID, "service", lb.Owner.Service(), "uid", lb.Owner.UID, "then", deletionNote(c.Grace))
		if s := lookup(lb.Owner.Namespace, lb.Owner.Name); s != nil && c.Recorder != nil {
			c.Recorder.Eventf(s, v1.EventTypeWarning, reasonOrphan, "Load balancer %s was made for another Service of this name (UID %s) or is no longer wanted; %s",
				lb.ID, lb.Owner.UID, deletionNote(c.Grace))
		}
	}
	sort.Slice(remove, func(i, j int) bool { return remove[i].ID < remove[j].ID })
	for _, lb := range remove {
		err := c.Lister.DeleteOwnedLoadBalancer(ctx, c.Cluster, lb)
		var retry *api.RetryError
		switch {
		case errors.As(err, &retry):
			klog.InfoS("Orphaned load balancer being deleted", "loadBalancer", lb.ID, "service", lb.Owner.Service(), "state", err)
			c.deleting[orphanKey(lb)] = lb
			continue
		case err != nil && !apierrors.IsNotFound(err):
			klog.ErrorS(err, "Deleting orphaned load balancer failed", "loadBalancer", lb.ID, "service", lb.Owner.Service())
			continue
		}
		klog.InfoS("Orphaned load balancer deleted", "loadBalancer", lb.ID, "service", lb.Owner.Service())
		c.tracker.Deleted(lb)
		delete(c.deleting, orphanKey(lb))
		deleted = append(deleted, lb)
		c.Left--
	}
	return deleted, nil
}

// deletionNote says what becomes of a reported orphan.
func deletionNote(grace time.Duration) string {
	if grace <= 0 {
		return "it is not deleted (orphan deletion is off: --orphan-grace-period=0)"
	}
	return fmt.Sprintf("it is deleted after %v unless claimed", grace)
}

// Run runs a round every interval until ctx is done.
func (c *Collector) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if _, err := c.Round(ctx); err != nil {
			klog.ErrorS(err, "Orphan collection round skipped")
		}
	}, interval)
}
