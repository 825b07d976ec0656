package openstack

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// floating-ips-per-namespace: a namespace's Services get at most that many new floating IPs;
// the next public Service is refused naming the key before any write, another namespace's is
// served, and an internal Service of the full namespace needs none.
func TestFloatingIPsPerNamespace(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, _ := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\nfloating-ips-per-namespace = 2\n")
	nodes := lbNodes("10.0.0.5")
	for _, n := range []string{"a", "b"} {
		ensureUntilReady(t, lb, lbService(n, nil), nodes)
	}
	w := f.Writes()
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, lbService("c", nil), nodes)
	if !errors.Is(err, reach.ErrQuota) || !strings.Contains(err.Error(), "floating-ips-per-namespace") || f.Writes() != w {
		t.Errorf("the third public Service: %v, %d writes; want a refusal naming the key and none", err, f.Writes()-w)
	}
	other := lbService("c", nil)
	other.Namespace, other.UID = "other", "uid-other-c"
	ensureUntilReady(t, lb, other, nodes)
	ensureUntilReady(t, lb, lbService("d", map[string]string{annInternal: "true"}), nodes)
	if n := len(f.FloatingIPs()); n != 3 {
		t.Errorf("%d floating IPs, want 3", n)
	}
}
