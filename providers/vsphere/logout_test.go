package vsphere

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

// simSessions counts the sessions of user at the simulator's SessionManager.
func simSessions(t *testing.T, s *sim.Sim, user string) int {
	t.Helper()
	a := s.Admin()
	var o mo.SessionManager
	ref := *a.ServiceContent.SessionManager
	if err := object.NewCommon(a, ref).Properties(context.Background(), ref, []string{"sessionList"}, &o); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, us := range o.SessionList {
		if us.UserName == user {
			n++
		}
	}
	return n
}

func TestLogoutOnStop(t *testing.T) {
	s := startSim(t)
	if _, err := s.AddVM(context.Background(), "lo-1", 0, 0, []sim.NIC{{Network: "VM Network", IPs: []string{"10.9.0.1"}}}); err != nil {
		t.Fatal(err)
	}
	c, err := New(strings.NewReader(testConfig(s, "")))
	if err != nil {
		t.Fatal(err)
	}
	c.UseClusterName("logout")
	stop := make(chan struct{})
	c.Initialize(cloudtest.NewEventSink(), stop)
	before := simSessions(t, s, testUser)
	iv, _ := c.InstancesV2()
	if _, err := iv.InstanceMetadata(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lo-1"}}); err != nil {
		t.Fatalf("InstanceMetadata: %v", err)
	}
	during := simSessions(t, s, testUser)
	if during != before+1 {
		t.Fatalf("sessions at vcsim: %d before a call, %d after, want one more", before, during)
	}
	if provider.WaitStopped(c, 50*time.Millisecond) {
		t.Fatal("Stopped() closed before stop")
	}
	close(stop)
	// ccm waits on Stopped before it exits: the session must be gone when it closes.
	if !provider.WaitStopped(c, 10*time.Second) {
		t.Fatal("Stopped() not closed 10s after stop")
	}
	if n := simSessions(t, s, testUser); n != before {
		t.Fatalf("sessions at vcsim once Stopped() closed: %d, want %d (the provider's session ended)", n, before)
	}
}
