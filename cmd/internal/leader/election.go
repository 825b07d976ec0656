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
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"
)

// HealthzTimeout is how long past its lease duration a leader that has not renewed still passes
// /healthz: the library's value (k8s.io/cloud-provider app.Run).
const HealthzTimeout = 20 * time.Second

// Election is a running leader election.
type Election struct {
	leading  chan struct{}
	released chan struct{}
	health   *leaderelection.HealthzAdaptor
}

// HealthChecker is the check the library puts on /healthz when it elects (it no longer does:
// Start turns its election off): it fails when this process leads but has not renewed its
// Lease for the lease duration plus HealthzTimeout (renewing is stuck, yet the process did not
// exit), and passes on a standby. Controller mounts it.
func (e *Election) HealthChecker() healthz.HealthChecker { return e.health }

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
	return start(lock, timings{
		name:          le.ResourceName,
		where:         le.ResourceNamespace + "/" + le.ResourceName,
		leaseDuration: le.LeaseDuration.Duration,
		renewDeadline: le.RenewDeadline.Duration,
		retryPeriod:   le.RetryPeriod.Duration,
		healthz:       HealthzTimeout,
	}, stop, drain)
}

// timings are the election's parameters beyond the lock.
type timings struct {
	name, where                               string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	healthz                                   time.Duration
}

// lostLease ends the process when the Lease is lost while running (a variable for the tests).
var lostLease = func() { klog.FlushAndExit(klog.ExitFlushTimeout, 1) }

func start(lock resourcelock.Interface, t timings, stop <-chan struct{}, drain func(context.Context)) (*Election, error) {
	id := lock.Identity()
	e := &Election{leading: make(chan struct{}), released: make(chan struct{}), health: leaderelection.NewLeaderHealthzAdaptor(t.healthz)}
	ctx, cancel := context.WithCancel(context.Background())
	stopping := make(chan struct{})
	go func() {
		<-stop
		close(stopping)
		// Let the old leader's last writes finish before anyone else may start theirs.
		dctx, dcancel := context.WithTimeout(context.Background(), t.renewDeadline)
		drain(dctx)
		dcancel()
		cancel()
	}()
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   t.leaseDuration,
		RenewDeadline:   t.renewDeadline,
		RetryPeriod:     t.retryPeriod,
		ReleaseOnCancel: true,
		Name:            t.name,
		WatchDog:        e.health,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				klog.InfoS("Became the leader", "lease", t.where, "identity", id)
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
					lostLease()
				}
			},
		},
	}
	elector, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("leader election: %w", err)
	}
	e.health.SetLeaderElection(elector) // as leaderelection.RunOrDie does; NewLeaderElector does not
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
