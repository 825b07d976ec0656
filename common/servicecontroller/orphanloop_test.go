package servicecontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/ccm-project/ccm/common/metrics"
)

// The loop as ccm runs it: a round once the cache has synced, the gauge set to the orphans
// left, deletions counted, an Event on the Service of the orphan's name, and grace 0 reporting
// without deleting.
func TestRunOrphanCollector(t *testing.T) {
	for _, tc := range []struct {
		grace       time.Duration
		wantDeleted []string
		wantGauge   float64
	}{
		{grace: time.Nanosecond, wantDeleted: []string{"lb-gone", "lb-old"}, wantGauge: 0},
		{grace: 0, wantDeleted: nil, wantGauge: 2},
	} {
		t.Run("grace "+tc.grace.String(), func(t *testing.T) {
			h := newHarness(t, DefaultClasses(), lbService("live"))
			metrics.Register()
			lister := &cloudLister{fakeOwned{lbs: []OwnedLoadBalancer{owned("lb-live", "ns", "live", "uid-live"),
				owned("lb-old", "ns", "live", "uid-earlier"), owned("lb-gone", "ns", "gone", "u")}}}
			deletedBefore, _ := testutil.GetCounterMetricValue(metrics.OrphanedLoadBalancersDeleted.WithLabelValues("fake"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				h.c.RunOrphanCollector(ctx, lister, OrphanOptions{Period: 20 * time.Millisecond, Grace: tc.grace})
				close(done)
			}()
			time.Sleep(300 * time.Millisecond)
			cancel()
			<-done
			eq(t, "deleted", lister.deleted, tc.wantDeleted)
			if g, _ := testutil.GetGaugeMetricValue(metrics.OrphanedLoadBalancers.WithLabelValues("fake")); g != tc.wantGauge {
				t.Errorf("gauge %v, want %v", g, tc.wantGauge)
			}
			after, _ := testutil.GetCounterMetricValue(metrics.OrphanedLoadBalancersDeleted.WithLabelValues("fake"))
			if int(after-deletedBefore) != len(tc.wantDeleted) {
				t.Errorf("deleted counter rose by %v, want %d", after-deletedBefore, len(tc.wantDeleted))
			}
			ev := h.takeEvents()
			if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning OrphanedLoadBalancer Load balancer lb-old") {
				t.Errorf("events %q: want one OrphanedLoadBalancer on ns/live", ev)
			}
			if tc.grace == 0 && !strings.Contains(ev[0], "not deleted") {
				t.Errorf("grace 0 event %q does not say the load balancer stays", ev[0])
			}
		})
	}
}

// Period 0 turns collection off: no listing at all.
func TestOrphanCollectorOff(t *testing.T) {
	h := newHarness(t, DefaultClasses())
	lister := &countingLister{}
	h.c.RunOrphanCollector(context.Background(), lister, OrphanOptions{Period: 0, Grace: time.Hour})
	if lister.lists != 0 {
		t.Errorf("listed %d times with collection off", lister.lists)
	}
}

type countingLister struct {
	fakeOwned
	lists int
}

func (c *countingLister) OwnedLoadBalancers(ctx context.Context, cl string) ([]OwnedLoadBalancer, error) {
	c.lists++
	return c.fakeOwned.OwnedLoadBalancers(ctx, cl)
}

// cloudLister is fakeOwned whose deletes take the load balancer out of the listing.
type cloudLister struct{ fakeOwned }

func (c *cloudLister) DeleteOwnedLoadBalancer(ctx context.Context, cl string, lb OwnedLoadBalancer) error {
	for i, have := range c.lbs {
		if have.ID == lb.ID {
			c.lbs = append(c.lbs[:i:i], c.lbs[i+1:]...)
		}
	}
	return c.fakeOwned.DeleteOwnedLoadBalancer(ctx, cl, lb)
}
