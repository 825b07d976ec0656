package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

// calls returns the vSphere calls counted so far by operation (all services).
func calls(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	fams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "ccm_cloud_api_requests_total" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == ProviderName {
				out[labels["operation"]] += m.Counter.GetValue()
			}
		}
	}
	return out
}

func total(m map[string]float64) (n float64) {
	for _, v := range m {
		n += v
	}
	return n
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func nodeFor(v *sim.VM) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: v.Name}}
}

// Many nodes looked up at once share one session and one inventory read; a periodic refresh
// of all of them is one read per datacenter.
func TestLookupsAreBatched(t *testing.T) {
	s := startSim(t)
	var vms []*sim.VM
	for i := range 20 {
		v, err := s.AddVM(context.Background(), fmt.Sprintf("batch-%d", i), i%2, 0, []sim.NIC{{Network: "VM Network", IPs: []string{fmt.Sprintf("10.5.0.%d", i+1)}}})
		if err != nil {
			t.Fatal(err)
		}
		vms = append(vms, v)
	}
	c, err := New(strings.NewReader(testConfig(s, "")))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	before := calls(t)
	var wg sync.WaitGroup
	errs := make([]error, len(vms))
	for i, v := range vms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md, err := inst.InstanceMetadata(context.Background(), nodeFor(v))
			if err == nil && md.ProviderID != "vsphere://"+v.UUID {
				err = fmt.Errorf("%s: providerID %s", v.Name, md.ProviderID)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	init := diff(calls(t), before)
	if init["Login"] != 1 || init["RetrievePropertiesEx"] != 2+1 { // 2 datacenters + the datacenter list
		t.Errorf("initialising %d nodes: %v; want 1 Login and 3 reads", len(vms), init)
	}
	if perNode := total(init) / float64(len(vms)); perNode > 1 {
		t.Errorf("%.2f calls per node at initialisation (%v)", perNode, init)
	}
	// A refresh of every node after the cache expired: one read per datacenter.
	c.inv.mu.Lock()
	c.inv.snap.started = c.inv.snap.started.Add(-c.cfg.Global.CacheTTL.Duration)
	c.inv.mu.Unlock()
	before = calls(t)
	for _, v := range vms {
		if _, err := inst.InstanceMetadata(context.Background(), nodeFor(v)); err != nil {
			t.Fatal(err)
		}
	}
	if refresh := diff(calls(t), before); total(refresh) != 2 || refresh["RetrievePropertiesEx"] != 2 {
		t.Errorf("refreshing %d nodes: %v; want 2 reads", len(vms), refresh)
	}
}

// A session vCenter ended is replaced once, not once per call.
func TestSessionExpiryLogsInOnce(t *testing.T) {
	s := startSim(t)
	a, err := s.AddVM(context.Background(), "exp-a", 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(strings.NewReader(testConfig(s, "")))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	if ok, err := inst.InstanceExists(context.Background(), nodeFor(a)); !ok || err != nil {
		t.Fatalf("exists = %v, %v", ok, err)
	}
	if n, err := s.ExpireSessions(context.Background()); err != nil || n == 0 {
		t.Fatalf("expire: %d %v", n, err)
	}
	before := calls(t)
	for i := range 5 {
		c.inv.mu.Lock()
		c.inv.snap.started = c.inv.snap.started.Add(-c.cfg.Global.CacheTTL.Duration) // force a read each time
		c.inv.mu.Unlock()
		if ok, err := inst.InstanceExists(context.Background(), nodeFor(a)); !ok || err != nil {
			t.Fatalf("call %d after expiry: exists = %v, %v", i, ok, err)
		}
	}
	if got := diff(calls(t), before)["Login"]; got != 1 {
		t.Errorf("%v logins for 5 calls after one expiry, want 1", got)
	}
}

// While vCenter returns faults, a destroyed VM is an error, never "gone"; afterwards it is
// gone. A powered-off VM is shut down, not gone.
func TestFaultsAreErrorsNotGone(t *testing.T) {
	s := startSim(t)
	a, err := s.AddVM(context.Background(), "fault-a", 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.AddVM(context.Background(), "fault-b", 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(strings.NewReader(testConfig(s, "")))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	nodeA := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "renamed"}, Spec: v1.NodeSpec{ProviderID: "vsphere://" + a.UUID}}
	if ok, err := inst.InstanceExists(context.Background(), nodeA); !ok || err != nil {
		t.Fatalf("exists = %v, %v", ok, err)
	}
	restore := s.FailReads()
	if err := s.Destroy(context.Background(), a.Ref); err != nil {
		t.Fatal(err)
	}
	c.inv.mu.Lock()
	c.inv.snap.started = c.inv.snap.started.Add(-c.cfg.Global.CacheTTL.Duration)
	c.inv.mu.Unlock()
	if ok, err := inst.InstanceExists(context.Background(), nodeA); err == nil {
		t.Errorf("during faults: exists = %v with no error", ok)
	}
	restore()
	if ok, err := inst.InstanceExists(context.Background(), nodeA); ok || err != nil {
		t.Errorf("after faults: exists = %v, %v; want false, nil", ok, err)
	}
	if _, err := inst.InstanceMetadata(context.Background(), nodeA); err != cloudprovider.InstanceNotFound {
		t.Errorf("metadata of a destroyed VM: %v, want InstanceNotFound", err)
	}
	if err := s.PowerOff(context.Background(), b.Ref); err != nil {
		t.Fatal(err)
	}
	// The snapshot is younger than cache-ttl but older than the bound for state questions:
	// the power state is read again.
	c.inv.mu.Lock()
	c.inv.snap.started = time.Now().Add(-stateMaxAge - time.Second)
	c.inv.mu.Unlock()
	if down, err := inst.InstanceShutdown(context.Background(), nodeFor(b)); !down || err != nil {
		t.Errorf("powered-off VM: shutdown = %v, %v", down, err)
	}
	if ok, err := inst.InstanceExists(context.Background(), nodeFor(b)); !ok || err != nil {
		t.Errorf("powered-off VM: exists = %v, %v", ok, err)
	}
}

// A wrong password is one clear error, answered from memory until the back-off passes (a
// login per node look-up would lock the account).
func TestWrongPasswordIsOneClearError(t *testing.T) {
	s := startSim(t)
	cfg := strings.Replace(testConfig(s, ""), fmt.Sprintf("password = %q", testPassword), `password = "nope"`, 1)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := c.InstancesV2()
	before := calls(t)
	for range 5 {
		_, err := inst.InstanceExists(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
		if err == nil || !strings.Contains(err.Error(), "wrong user name or password") {
			t.Fatalf("error %v", err)
		}
		if strings.Contains(err.Error(), "nope") {
			t.Fatalf("error shows the password: %v", err)
		}
	}
	if got := diff(calls(t), before)["Login"]; got != 1 {
		t.Errorf("%v login attempts for 5 look-ups, want 1", got)
	}
}
