package vsphere

import (
	"context"
	"time"

	"github.com/vmware/govmomi/session"
	"k8s.io/klog/v2"
)

// logoutTimeout bounds the logouts at shutdown: a vCenter that does not answer must not hold
// the process past its termination grace period.
const logoutTimeout = 5 * time.Second

// logoutAll ends this process's sessions with every vCenter (vAPI first, then SOAP) when it
// stops, so a restart or rollout leaves no session behind for vCenter's idle timeout to
// collect, as the upstream CCM does (its main logs out once the controller manager's Run
// returns). ccm waits for it before exiting (Stopped, provider.Stopper). Failures are logged
// (server and error only) and ignored.
func (c *Cloud) logoutAll() {
	ctx, cancel := context.WithTimeout(context.Background(), logoutTimeout)
	defer cancel()
	for _, cn := range c.conns {
		cn.logout(ctx)
	}
}

// logout ends the connection's sessions and forgets them; a later call would log in again.
func (c *conn) logout(ctx context.Context) {
	c.restMu.Lock()
	rc := c.rest
	c.rest = nil
	c.restMu.Unlock()
	if rc != nil {
		if err := rc.Logout(ctx); err != nil {
			klog.V(2).InfoS("vCenter vAPI logout failed", "server", c.vc.Server, "err", err)
		}
	}
	c.mu.Lock()
	client := c.client
	c.client = nil
	c.mu.Unlock()
	if client == nil {
		return
	}
	if err := session.NewManager(client).Logout(ctx); err != nil {
		klog.V(2).InfoS("vCenter logout failed", "server", c.vc.Server, "err", err)
		return
	}
	klog.InfoS("Logged out of vCenter", "server", c.vc.Server)
}
