// Package nodeguard keeps Nodes whose machines the cloud reports gone until that answer holds.
//
// The node lifecycle controller deletes a NotReady Node as soon as InstanceExists says false.
// A cloud that answers "not found" by mistake for a moment (eventual consistency, a wrong
// region during a migration, an empty answer) would make it delete healthy Nodes. The guard
// wraps every provider's InstancesV2: errors pass through (the controller then does nothing),
// and "not found" becomes "gone" only once it has held for the confirmation window.
package nodeguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// EventReasonHeld is the reason of the Node event sent when a deletion is held back.
const EventReasonHeld = "NodeDeletionHeld"

// Settings are the operator's choices about Nodes.
type Settings struct {
	// Window is --node-deletion-confirmation: how long "not found" must hold before a Node's
	// instance is reported gone. 0 reports it at once, as upstream.
	Window time.Duration
	// NeverDelete (the environment variable SKIP_NODE_DELETION, as the upstream vSphere CCM
	// reads it) reports a not-found instance as an error instead: the node lifecycle
	// controller then neither deletes the Node nor taints it as shut down.
	NeverDelete bool
	// Labels (--node-labels) are added to each Node when it is initialised, where the
	// provider sets no label of that key.
	Labels map[string]string
}

// Guard wraps an InstancesV2.
type Guard struct {
	inner    cloudprovider.InstancesV2
	window   time.Duration
	never    bool
	labels   map[string]string
	provider string
	now      func() time.Time

	mu       sync.Mutex
	recorder record.EventRecorder
	// notFound is each Node's current streak of "not found" answers.
	notFound map[types.UID]streak
}

// streak is a run of "not found" answers with no other answer and no long gap between them.
type streak struct{ first, last time.Time }

var _ cloudprovider.InstancesV2 = (*Guard)(nil)

// New wraps inner. A window of 0 turns the guard off: "not found" is "gone" at once, as upstream.
func New(inner cloudprovider.InstancesV2, provider string, window time.Duration) *Guard {
	return NewWith(inner, provider, Settings{Window: window})
}

// NewWith wraps inner with all of s.
func NewWith(inner cloudprovider.InstancesV2, provider string, s Settings) *Guard {
	return &Guard{inner: inner, window: s.Window, never: s.NeverDelete, labels: s.Labels, provider: provider,
		now: time.Now, notFound: map[types.UID]streak{}}
}

// errKept is what InstanceExists answers for a not-found instance under SKIP_NODE_DELETION.
var errKept = errors.New("the cloud reports this Node's instance as not found; SKIP_NODE_DELETION is set, so the Node is kept")

// SetRecorder sets where Node events go (set once the API client exists).
func (g *Guard) SetRecorder(r record.EventRecorder) {
	g.mu.Lock()
	g.recorder = r
	g.mu.Unlock()
}

// InstanceExists reports false only for a confirmed not-found. Errors pass through unchanged.
func (g *Guard) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	exists, err := g.inner.InstanceExists(ctx, node)
	switch {
	case err != nil:
		// Not an answer about the instance: the streak of not-found answers is broken.
		g.reset(node)
		metrics.NodeDeletionsHeld.WithLabelValues(g.provider, "cloud_error").Inc()
		return false, err
	case exists:
		g.reset(node)
		return true, nil
	case g.never:
		g.keep(node)
		return false, errKept
	case g.window <= 0:
		return false, nil
	}
	now := g.now()
	g.mu.Lock()
	st, seen := g.notFound[node.UID]
	if seen && now.Sub(st.last) > g.staleAfter() {
		seen = false // an old answer (the Node was Ready and not asked about since) counts no more
	}
	if !seen {
		st.first = now
	}
	st.last = now
	g.notFound[node.UID] = st
	first := st.first
	recorder := g.recorder
	g.mu.Unlock()
	if waited := now.Sub(first); waited >= g.window {
		klog.InfoS("Instance not found for the whole confirmation window; reporting it gone", "node", klog.KObj(node), "window", g.window)
		g.reset(node)
		return false, nil
	}
	metrics.NodeDeletionsHeld.WithLabelValues(g.provider, "not_confirmed").Inc()
	if !seen {
		klog.InfoS("Cloud reports the instance gone; keeping the Node until that is confirmed", "node", klog.KObj(node), "window", g.window)
		if recorder != nil {
			recorder.Eventf(node, v1.EventTypeWarning, EventReasonHeld,
				"The cloud reports this Node's instance as not found; the Node is kept until that holds for %v (--node-deletion-confirmation)", g.window)
		}
	}
	return true, nil
}

// InstanceShutdown passes through, except that "not found" while a deletion is being confirmed
// is "not shut down": existence is InstanceExists's business.
func (g *Guard) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	down, err := g.inner.InstanceShutdown(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) && g.pending(node) {
		return false, nil
	}
	return down, err
}

// InstanceMetadata passes through, with the operator's labels added where the provider sets
// none of that key.
func (g *Guard) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	md, err := g.inner.InstanceMetadata(ctx, node)
	if err != nil || md == nil || len(g.labels) == 0 {
		return md, err
	}
	out := *md
	out.AdditionalLabels = make(map[string]string, len(md.AdditionalLabels)+len(g.labels))
	for k, v := range g.labels {
		out.AdditionalLabels[k] = v
	}
	for k, v := range md.AdditionalLabels {
		out.AdditionalLabels[k] = v
	}
	return &out, nil
}

// keep records, once per streak, that a not-found Node is kept for SKIP_NODE_DELETION.
func (g *Guard) keep(node *v1.Node) {
	metrics.NodeDeletionsHeld.WithLabelValues(g.provider, "skip_node_deletion").Inc()
	g.mu.Lock()
	_, seen := g.notFound[node.UID]
	now := g.now()
	g.notFound[node.UID] = streak{first: now, last: now}
	recorder := g.recorder
	g.mu.Unlock()
	if seen {
		return
	}
	klog.InfoS("Cloud reports the instance gone; keeping the Node (SKIP_NODE_DELETION)", "node", klog.KObj(node))
	if recorder != nil {
		recorder.Event(node, v1.EventTypeWarning, EventReasonHeld, errKept.Error())
	}
}

// staleAfter is the longest gap between two not-found answers that still makes one streak: the
// node lifecycle controller asks every --node-monitor-period (5s by default) while a Node is
// NotReady, so a longer gap means the Node was Ready or the ccm was not leading in between.
func (g *Guard) staleAfter() time.Duration { return max(2*g.window, time.Minute) }

func (g *Guard) reset(node *v1.Node) {
	g.mu.Lock()
	delete(g.notFound, node.UID)
	g.mu.Unlock()
}

func (g *Guard) pending(node *v1.Node) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.notFound[node.UID]
	return ok
}

// String describes the setting for start-up logs.
func (g *Guard) String() string {
	if g.never {
		return "never (SKIP_NODE_DELETION is set: a Node whose instance is not found is kept, and not tainted as shut down)"
	}
	if g.window <= 0 {
		return "off (a Node is deleted as soon as the cloud reports its instance not found)"
	}
	return fmt.Sprintf("a Node is deleted only after its instance is reported not found for %v", g.window)
}
