// Package leader runs the ccm's leader election in place of the library's, for one reason: the
// library (k8s.io/cloud-provider app.Run) elects with a context that is never cancelled, so a
// stopping leader keeps its Lease and the standby waits a whole lease duration. Ours releases
// the Lease on a graceful stop, after the cloud calls in flight have finished, so the standby
// takes over within about one retry period.
package leader

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"
)

// Election is a running leader election.
type Election struct {
	leading  chan struct{}
	released chan struct{}
}

// Leading is closed when this process becomes the leader.
func (e *Election) Leading() <-chan struct{} { return e.leading }

// Released is closed when the election has ended after stop: the Lease is released if it was
// held.
func (e *Election) Released() <-chan struct{} { return e.released }

// Start takes the leader election over from the library: it turns the library's off in c (so
// the library runs its controllers at once; Gate holds them back until Leading) and elects with
// the same Lease, identity scheme and timings. On stop it waits for drain (bounded by the
// renew deadline) and then releases the Lease. Losing the Lease while running exits the
// process, as the library does: two leaders must never reconcile at once.
func Start(c *ccmconfig.CompletedConfig, stop <-chan struct{}, drain func(context.Context)) (*Election, error) {
	le := &c.ComponentConfig.Generic.LeaderElection
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	// The uniquifier lets two processes on one host both take part, as in the library.
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.NewFromKubeconfig(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: c.EventRecorder},
		c.Kubeconfig, le.RenewDeadline.Duration)
	if err != nil {
		return nil, fmt.Errorf("leader election lock %s/%s: %w", le.ResourceNamespace, le.ResourceName, err)
	}
	le.LeaderElect = false // the library runs its controllers at once; Gate holds them back
	e := &Election{leading: make(chan struct{}), released: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	stopping := make(chan struct{})
	go func() {
		<-stop
		close(stopping)
		// Let the old leader's last writes finish before anyone else may start theirs.
		dctx, dcancel := context.WithTimeout(context.Background(), le.RenewDeadline.Duration)
		drain(dctx)
		dcancel()
		cancel()
	}()
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				klog.InfoS("Became the leader", "lease", le.ResourceNamespace+"/"+le.ResourceName, "identity", id)
				close(e.leading)
			},
			// Called whenever the election ends, leader or not.
			OnStoppedLeading: func() {
				select {
				case <-stopping:
					klog.InfoS("Leader election ended on stop", "identity", id)
					close(e.released)
				default:
					klog.ErrorS(nil, "Lost the leader lease; exiting so that only one ccm reconciles", "identity", id)
					klog.FlushAndExit(klog.ExitFlushTimeout, 1)
				}
			},
		},
	}
	elector, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("leader election: %w", err)
	}
	go elector.Run(ctx)
	return e, nil
}

// WaitReleased waits up to timeout for the Lease to be released after stop.
func (e *Election) WaitReleased(timeout time.Duration) {
	select {
	case <-e.released:
	case <-time.After(timeout):
		klog.InfoS("Leader lease not released in time; the standby takes over when it expires", "waited", timeout)
	}
}
