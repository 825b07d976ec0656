package integration

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const acquired = `"Successfully acquired lease" lock="kube-system/cloud-controller-manager"`

func leaseHolder() (string, error) {
	l, err := env.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return "", err
	}
	return *l.Spec.HolderIdentity, nil
}

// Two replicas: one leads and reconciles; when it is killed the other takes over.
func TestLeaderElectionFailover(t *testing.T) {
	cfg := "[Instance \"it-le-1\"]\ninternal-ip = 10.4.0.1\n\n[Instance \"it-le-2\"]\ninternal-ip = 10.4.0.2\n"
	a := startCCM(t, "ccm-le-a", cfg)
	eventually(t, 30*time.Second, "replica a leads", func() (bool, error) {
		return strings.Contains(a.Log(), acquired), nil
	})
	holderA, err := leaseHolder()
	if err != nil || holderA == "" {
		t.Fatalf("lease holder: %q %v", holderA, err)
	}
	b := startCCM(t, "ccm-le-b", cfg)
	newNode(t, "it-le-1")
	eventually(t, 30*time.Second, "it-le-1 initialised by the leader", func() (bool, error) {
		n, err := node("it-le-1")
		return err == nil && n.Spec.ProviderID != "", err
	})
	// b has started and is waiting for the lease; it must not lead while a renews it.
	time.Sleep(2 * time.Second)
	if strings.Contains(b.Log(), acquired) {
		t.Fatal("both replicas lead")
	}
	if !strings.Contains(b.Log(), "Attempting to acquire leader lease") {
		t.Errorf("replica b never tried to acquire the lease:\n%s", b.Tail(10))
	}

	a.Kill() // SIGKILL: no clean release of the lease
	failover := time.Now()
	eventually(t, 30*time.Second, "replica b takes over", func() (bool, error) {
		return strings.Contains(b.Log(), acquired), nil
	})
	t.Logf("replica b took over %v after replica a was killed (lease duration 4s)", time.Since(failover).Round(100*time.Millisecond))
	if h, _ := leaseHolder(); h == holderA || h == "" {
		t.Errorf("lease holder still %q", h)
	}
	newNode(t, "it-le-2")
	eventually(t, 30*time.Second, "it-le-2 initialised by the new leader", func() (bool, error) {
		n, err := node("it-le-2")
		return err == nil && n.Spec.ProviderID != "", err
	})
}

// A graceful stop (SIGTERM) releases the Lease, so the standby leads well before the lease
// duration (4s here) would have let it: the library alone keeps the Lease until it expires.
func TestLeaderGracefulHandover(t *testing.T) {
	cfg := "[Instance \"it-lh-1\"]\ninternal-ip = 10.4.1.1\n"
	a := startCCM(t, "ccm-lh-a", cfg)
	eventually(t, 30*time.Second, "replica a leads", func() (bool, error) {
		return strings.Contains(a.Log(), acquired), nil
	})
	b := startCCM(t, "ccm-lh-b", cfg)
	eventually(t, 30*time.Second, "replica b waits for the lease", func() (bool, error) {
		return strings.Contains(b.Log(), "Attempting to acquire leader lease"), nil
	})
	holderA, _ := leaseHolder()

	if err := a.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("replica a did not exit after SIGTERM:\n%s", a.Tail(20))
	}
	if !strings.Contains(a.Log(), "Leader election ended on stop") {
		t.Errorf("replica a did not end its election on stop:\n%s", a.Tail(20))
	}
	eventually(t, 30*time.Second, "replica b takes over", func() (bool, error) {
		return strings.Contains(b.Log(), acquired), nil
	})
	handover := time.Since(stopped)
	t.Logf("replica b leads %v after SIGTERM to the leader (lease duration 4s, retry period 500ms)", handover.Round(100*time.Millisecond))
	if h, _ := leaseHolder(); h == holderA || h == "" {
		t.Errorf("lease holder is %q after the handover", h)
	}
	// b polls every 500ms; an unreleased Lease would keep it out for the lease duration.
	if handover >= 4*time.Second {
		t.Errorf("handover took %v: the Lease was not released on stop", handover)
	}
	newNode(t, "it-lh-1")
	eventually(t, 30*time.Second, "it-lh-1 initialised by the new leader", func() (bool, error) {
		n, err := node("it-lh-1")
		return err == nil && n.Spec.ProviderID != "", err
	})
}
