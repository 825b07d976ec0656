package nodeguard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics/testutil"

	"github.com/ccm-project/ccm/common/metrics"
)

// scripted answers InstanceExists with whatever answer holds now.
type scripted struct {
	exists bool
	err    error
}

func (s *scripted) InstanceExists(context.Context, *v1.Node) (bool, error) { return s.exists, s.err }
func (s *scripted) InstanceShutdown(context.Context, *v1.Node) (bool, error) {
	if !s.exists {
		return false, cloudprovider.InstanceNotFound
	}
	return false, s.err
}
func (s *scripted) InstanceMetadata(context.Context, *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	return nil, s.err
}

func TestGuard(t *testing.T) {
	metrics.Register()
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "uid-1"}}
	cloud := &scripted{exists: true}
	now := time.Unix(1000, 0)
	g := New(cloud, "test", time.Minute)
	g.now = func() time.Time { return now }
	rec := record.NewFakeRecorder(10)
	g.SetRecorder(rec)

	step := func(name string, advance time.Duration, wantExists, wantErr bool) {
		t.Helper()
		now = now.Add(advance)
		exists, err := g.InstanceExists(ctx, node)
		if exists != wantExists || (err != nil) != wantErr {
			t.Fatalf("%s: exists=%v err=%v, want exists=%v err=%v", name, exists, err, wantExists, wantErr)
		}
	}
	step("found", 0, true, false)

	cloud.exists, cloud.err = false, errors.New("503 from the cloud API")
	step("cloud error passes through, never reads as gone", 0, false, true)
	step("cloud error for long is still no deletion", 10*time.Minute, false, true)

	cloud.err = nil // now the cloud says "not found"
	step("first not-found is held", 0, true, false)
	if down, err := g.InstanceShutdown(ctx, node); down || err != nil {
		t.Errorf("shutdown while held = %v, %v; want false, nil", down, err)
	}
	step("still held inside the window", 59*time.Second, true, false)

	cloud.exists = true
	step("found again resets the streak", time.Second, true, false)
	cloud.exists = false
	step("new streak is held", 30*time.Second, true, false)
	step("held up to the window", 59*time.Second, true, false)
	step("gone once not-found held for the whole window", time.Second, false, false)

	for reason, want := range map[string]float64{"cloud_error": 2, "not_confirmed": 4} {
		got, err := testutil.GetCounterMetricValue(metrics.NodeDeletionsHeld.WithLabelValues("test", reason))
		if err != nil || got != want {
			t.Errorf("ccm_node_deletions_held_total{reason=%q} = %v (%v), want %v", reason, got, err, want)
		}
	}
	if n := len(rec.Events); n != 2 { // one per streak, not one per check
		t.Errorf("%d events, want 2", n)
	}

	// An old not-found (the Node was Ready and not asked about for long) starts no head start.
	step("found", 0, true, false)
	cloud.exists = false
	step("one not-found blip", 0, true, false)
	step("a week later, another blip is a new streak", 7*24*time.Hour, true, false)
	// A cloud error in the middle breaks the streak too.
	step("held", 50*time.Second, true, false)
	cloud.err = errors.New("timeout")
	step("error", time.Second, false, true)
	cloud.err = nil
	step("not-found after an error starts again", time.Second, true, false)
	step("still inside the new window", 59*time.Second, true, false)
	step("confirmed after a whole window of not-found", time.Second, false, false)
	if e := <-rec.Events; !strings.Contains(e, EventReasonHeld) || !strings.Contains(e, "1m0s") {
		t.Errorf("event %q", e)
	}
}

func TestGuardOff(t *testing.T) {
	g := New(&scripted{exists: false}, "test", 0)
	if exists, err := g.InstanceExists(context.Background(), &v1.Node{}); exists || err != nil {
		t.Fatalf("window 0: %v %v, want false nil (upstream behaviour)", exists, err)
	}
	if !strings.Contains(g.String(), "off") {
		t.Error(g.String())
	}
}

// labelled answers metadata with the provider's own labels.
type labelled struct{ scripted }

func (l *labelled) InstanceMetadata(context.Context, *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	return &cloudprovider.InstanceMetadata{ProviderID: "p://1", AdditionalLabels: map[string]string{"topology.example/rack": "r1"}}, nil
}

// SKIP_NODE_DELETION: a not-found instance is an error, for ever, with one Event per Node; a
// found one is found.
func TestSkipNodeDeletion(t *testing.T) {
	metrics.Register()
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "uid-skip"}}
	cloud := &scripted{exists: false}
	g := NewWith(cloud, "test-skip", Settings{Window: time.Nanosecond, NeverDelete: true})
	rec := record.NewFakeRecorder(10)
	g.SetRecorder(rec)
	for i := range 3 {
		exists, err := g.InstanceExists(ctx, node)
		if exists || !errors.Is(err, errKept) {
			t.Fatalf("ask %d: exists=%v err=%v, want an error that keeps the Node", i, exists, err)
		}
		time.Sleep(time.Millisecond) // past the window: still kept
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d Events for one Node, want 1", n)
	}
	cloud.exists = true
	if exists, err := g.InstanceExists(ctx, node); !exists || err != nil {
		t.Errorf("found: exists=%v err=%v", exists, err)
	}
	if !strings.Contains(g.String(), "SKIP_NODE_DELETION") {
		t.Errorf("start-up description %q does not name SKIP_NODE_DELETION", g.String())
	}
}

// --node-labels: added to the metadata where the provider sets no label of that key.
func TestNodeLabels(t *testing.T) {
	g := NewWith(&labelled{}, "test", Settings{Labels: map[string]string{"node.example/pool": "blue", "topology.example/rack": "mine"}})
	md, err := g.InstanceMetadata(context.Background(), &v1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.example/pool": "blue", "topology.example/rack": "r1"}
	if len(md.AdditionalLabels) != 2 || md.AdditionalLabels["node.example/pool"] != "blue" || md.AdditionalLabels["topology.example/rack"] != "r1" {
		t.Errorf("labels %v, want %v", md.AdditionalLabels, want)
	}
	plain, _ := NewWith(&labelled{}, "test", Settings{}).InstanceMetadata(context.Background(), &v1.Node{})
	if len(plain.AdditionalLabels) != 1 {
		t.Errorf("without --node-labels: %v", plain.AdditionalLabels)
	}
}
