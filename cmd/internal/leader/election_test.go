package leader

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	fakecloud "k8s.io/cloud-provider/fake"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/utils/ptr"
)

// Short timings: the lease lasts 1 s, and /healthz tolerates 200 ms past it.
var fast = timings{name: "ccm", where: "kube-system/ccm", leaseDuration: time.Second, renewDeadline: 600 * time.Millisecond,
	retryPeriod: 100 * time.Millisecond, healthz: 200 * time.Millisecond}

func leaseLock(t *testing.T, client *fake.Clientset, id string) resourcelock.Interface {
	t.Helper()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "ccm", client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	return lock
}

// noExit records a lost Lease instead of exiting the test binary.
func noExit(t *testing.T) {
	t.Helper()
	old := lostLease
	lostLease = func() {}
	t.Cleanup(func() { lostLease = old })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The library checks its election on /healthz (HealthzAdaptor, 20 s); ccm elects itself with
// the library's election off, so that check was gone. Now: a leader whose renewing is stuck
// fails the check once the lease duration plus the tolerance has passed without a renewal,
// and passes while it renews; a standby passes.
func TestHealthzFailsWhenTheLeaderStopsRenewing(t *testing.T) {
	noExit(t)
	client := fake.NewClientset()
	stuck := make(chan struct{})
	blocking := make(chan struct{}) // closed: lease calls block until stuck is closed
	client.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-blocking:
			<-stuck
		default:
		}
		return false, nil, nil
	})
	stop := make(chan struct{})
	e, err := start(leaseLock(t, client, "me"), fast, stop, func(context.Context) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(stop) // first: the election may end as soon as renewing resumes
		close(stuck)
		select {
		case <-e.Released():
		case <-time.After(10 * time.Second):
			t.Error("the election did not end after stop")
		}
	})
	<-e.Leading()
	check := e.HealthChecker()
	if check.Name() != "leaderElection" {
		t.Errorf("check name = %q, want the library's leaderElection", check.Name())
	}
	// Renewing: healthy for longer than lease duration + tolerance.
	time.Sleep(fast.leaseDuration + fast.healthz + 300*time.Millisecond)
	if err := check.Check(nil); err != nil {
		t.Fatalf("a renewing leader fails /healthz: %v", err)
	}
	// Renewing hangs (an API call that never returns): the elector neither renews nor gives up.
	close(blocking)
	stalled := time.Now()
	waitFor(t, "the check to fail", func() bool { return check.Check(nil) != nil })
	if d := time.Since(stalled); d < fast.leaseDuration {
		t.Errorf("the check failed %v after renewing stopped, before the lease expired", d)
	}
}

func TestHealthzPassesOnAStandby(t *testing.T) {
	noExit(t)
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ccm"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}},
	})
	stop := make(chan struct{})
	e, err := start(leaseLock(t, client, "me"), fast, stop, func(context.Context) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(stop); <-e.Released() }()
	time.Sleep(fast.leaseDuration + fast.healthz + 300*time.Millisecond)
	select {
	case <-e.Leading():
		t.Fatal("took a Lease another holder renews")
	default:
	}
	if err := e.HealthChecker().Check(nil); err != nil {
		t.Fatalf("a standby fails /healthz: %v", err)
	}
}

// The check reaches /healthz the one way the library allows: a controller whose HealthChecker
// the library mounts. It starts only when ccm's election runs.
func TestHealthzController(t *testing.T) {
	var e *Election
	initFn := HealthzInit(func() *Election { return e }).Constructor(ccmapp.ControllerInitContext{}, nil, nil)
	if _, started, err := initFn(context.Background(), genericcontrollermanager.ControllerContext{}); started || err != nil {
		t.Fatalf("started = %v, %v without ccm's election", started, err)
	}
	e = &Election{health: leaderelection.NewLeaderHealthzAdaptor(time.Second)}
	ctrl, started, err := initFn(context.Background(), genericcontrollermanager.ControllerContext{})
	if !started || err != nil {
		t.Fatalf("started = %v, %v with ccm's election", started, err)
	}
	hc, ok := ctrl.(controller.HealthCheckable)
	if !ok || hc.HealthChecker() == nil || ctrl.Name() != HealthzController {
		t.Fatalf("controller %T is not a health check named %s", ctrl, HealthzController)
	}

	for _, tc := range []struct{ in, want []string }{
		{[]string{"*"}, []string{"*"}},
		{[]string{"*", "-" + HealthzController}, []string{"*", "-" + HealthzController}},
		{[]string{"service", "cloud-node"}, []string{"service", "cloud-node", HealthzController}},
		{[]string{"-" + HealthzController, "service"}, []string{"-" + HealthzController, "service"}},
	} {
		cfg := &ccmconfig.Config{}
		cfg.ComponentConfig.Generic.Controllers = append([]string(nil), tc.in...)
		c := cfg.Complete()
		EnableHealthz(c)
		if got := c.ComponentConfig.Generic.Controllers; !equal(got, tc.want) {
			t.Errorf("EnableHealthz(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// recordingLB is a load balancer write that outlives the stop: it waits for the test to stop
// ccm, records whether its context is still alive, and finishes when released.
type recordingLB struct {
	cloudprovider.LoadBalancer
	entered, stopped, release chan struct{}
	afterStop                 chan error // the context's error once stopped
}

func (b *recordingLB) EnsureLoadBalancer(ctx context.Context, _ string, _ *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	close(b.entered)
	<-b.stopped
	b.afterStop <- ctx.Err()
	select {
	case <-b.release:
		return &v1.LoadBalancerStatus{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func newRecordingLB() *recordingLB {
	return &recordingLB{entered: make(chan struct{}), stopped: make(chan struct{}), release: make(chan struct{}), afterStop: make(chan error, 1)}
}

// On SIGTERM the library cancels the context of every controller at once, and so of the cloud
// calls in flight: a write was cut off half-way and the drain waited for calls that were
// already ending. Now the write keeps its context, the drain waits for it, and only then is
// the Lease released.
func TestStopLetsAWriteInFlightFinish(t *testing.T) {
	noExit(t)
	lb := newRecordingLB()
	tr := Track(&lbCloud2{Cloud: &fakecloud.Cloud{}, lb: lb}, fast.renewDeadline*10)
	stop := make(chan struct{})
	client := fake.NewClientset()
	e, err := start(leaseLock(t, client, "me"), timings{name: "ccm", where: "kube-system/ccm", leaseDuration: 6 * time.Second,
		renewDeadline: 5 * time.Second, retryPeriod: 100 * time.Millisecond, healthz: time.Second}, stop, tr.Drain)
	if err != nil {
		t.Fatal(err)
	}
	<-e.Leading()
	// The controllers' context: the library ends it when stop closes.
	caller, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	l, _ := tr.LoadBalancer()
	result := make(chan error, 1)
	go func() { _, err := l.EnsureLoadBalancer(caller, "c", &v1.Service{}, nil); result <- err }()
	<-lb.entered

	close(stop) // SIGTERM
	<-caller.Done()
	close(lb.stopped)
	if err := <-lb.afterStop; err != nil {
		t.Fatalf("the write in flight lost its context on stop: %v", err)
	}
	select {
	case <-e.Released():
		t.Fatal("the Lease was released with a write in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(lb.release)
	if err := <-result; err != nil {
		t.Fatalf("the write did not complete: %v", err)
	}
	select {
	case <-e.Released():
	case <-time.After(5 * time.Second):
		t.Fatal("the Lease was not released after the write finished")
	}
}

// The grace is bounded: a write that never ends is cancelled grace after its caller.
func TestWriteContextEndsAfterGrace(t *testing.T) {
	lb := newRecordingLB()
	grace := 150 * time.Millisecond
	tr := Track(&lbCloud2{Cloud: &fakecloud.Cloud{}, lb: lb}, grace)
	caller, cancel := context.WithCancel(context.Background())
	l, _ := tr.LoadBalancer()
	result := make(chan error, 1)
	go func() { _, err := l.EnsureLoadBalancer(caller, "c", &v1.Service{}, nil); result <- err }()
	<-lb.entered
	start := time.Now()
	cancel()
	close(lb.stopped)
	err := <-result
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a write that never ends returned %v, want context.Canceled", err)
	}
	if d := time.Since(start); d < grace {
		t.Errorf("cancelled %v after the caller, before the grace of %v", d, grace)
	}
	if err := <-lb.afterStop; err != nil {
		t.Errorf("cancelled with the caller: %v", err)
	}
	if n := tr.InFlight(); n != 0 {
		t.Errorf("in flight = %d", n)
	}

	// The caller's deadline still applies.
	lb2 := newRecordingLB()
	tr2 := Track(&lbCloud2{Cloud: &fakecloud.Cloud{}, lb: lb2}, time.Hour)
	dctx, dcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer dcancel()
	l2, _ := tr2.LoadBalancer()
	close(lb2.stopped)
	if _, err := l2.EnsureLoadBalancer(dctx, "c", &v1.Service{}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past the caller's deadline: %v", err)
	}
}

type lbCloud2 struct {
	*fakecloud.Cloud
	lb cloudprovider.LoadBalancer
}

func (c *lbCloud2) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, true }
