package provider

import (
	"time"

	cloudprovider "k8s.io/cloud-provider"
)

// Stopper is implemented by a cloud with work left when the stop channel handed to Initialize
// closes: the vsphere provider logs out of every vCenter. Stopped is closed when that work is
// done; it is nil when there is nothing to wait for (Initialize never ran).
type Stopper interface {
	Stopped() <-chan struct{}
}

// WaitStopped waits, at most limit, for c's work after stop (see Stopper). The process must not
// exit before it: a vCenter session left behind stays open until vCenter's idle timeout. It
// reports whether the work finished in time (true also when c has none).
func WaitStopped(c cloudprovider.Interface, limit time.Duration) bool {
	s, ok := c.(Stopper)
	if !ok {
		return true
	}
	done := s.Stopped()
	if done == nil {
		return true
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
