package svcevents

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

func TestRepairMessage(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"b", "a", "a", " "}, "repaired out-of-band changes to the load balancer: a; b"},
		{[]string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, "repaired out-of-band changes to the load balancer: 1; 10; 2; 3; 4; 5; 6; 7; and 2 more"},
	} {
		if got := RepairMessage(tc.in); got != tc.want {
			t.Errorf("RepairMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type builder struct{ cs kubernetes.Interface }

func (b builder) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (b builder) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (b builder) Client(string) (kubernetes.Interface, error) { return b.cs, nil }
func (b builder) ClientOrDie(string) kubernetes.Interface     { return b.cs }

func TestEventReachesTheAPIServerRedacted(t *testing.T) {
	cs := fake.NewClientset()
	stop := make(chan struct{})
	defer close(stop)
	r := New(func(s string) string { return strings.ReplaceAll(s, "s3cret", "[redacted]") })
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	r.Repaired(svc, nil) // nothing repaired: no Event
	r.Start(builder{cs}, "test-provider", stop)
	r.Repaired(svc, []string{"listener TCP/80 was missing (token s3cret)"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs, err := cs.CoreV1().Events("ns").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) == 1 {
			e := evs.Items[0]
			if e.Reason != ReasonDriftRepaired || e.Type != v1.EventTypeWarning || e.InvolvedObject.Name != "web" {
				t.Errorf("event %s %s on %s", e.Type, e.Reason, e.InvolvedObject.Name)
			}
			if strings.Contains(e.Message, "s3cret") || !strings.Contains(e.Message, "listener TCP/80 was missing") {
				t.Errorf("message %q", e.Message)
			}
			return
		}
		if len(evs.Items) > 1 || time.Now().After(deadline) {
			t.Fatalf("%d events, want 1", len(evs.Items))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An advice is recorded once per Service while it stays the same; again after AdviceRepeat,
// for another Service, or when its text changes. Event (repairs, failures) is never held back.
func TestAdviseRecordsOnceAnHour(t *testing.T) {
	fr := record.NewFakeRecorder(100)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := New(nil)
	r.rec, r.now = fr, func() time.Time { return now }
	a := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	b := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}}
	step := func(d time.Duration, svc *v1.Service, msg string) {
		now = now.Add(d)
		r.Advise(svc, "UnsupportedAnnotation", msg)
	}
	step(0, a, "x is not used")                        // recorded
	step(time.Minute, a, "x is not used")              // held back
	step(0, b, "x is not used")                        // another Service: recorded
	step(0, a, "y is not used")                        // other text: recorded
	step(AdviceRepeat-time.Minute, a, "x is not used") // an hour after the first: recorded again
	step(time.Second, a, "x is not used")              // held back
	r.Event(a, v1.EventTypeWarning, ReasonDriftRepaired, "same")
	r.Event(a, v1.EventTypeWarning, ReasonDriftRepaired, "same")
	close(fr.Events)
	var got []string
	for e := range fr.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning UnsupportedAnnotation x is not used",
		"Warning UnsupportedAnnotation x is not used",
		"Warning UnsupportedAnnotation y is not used",
		"Warning UnsupportedAnnotation x is not used",
		"Warning " + ReasonDriftRepaired + " same",
		"Warning " + ReasonDriftRepaired + " same",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Old advice is pruned as the map grows, so Services that come and go do not grow it forever.
func TestAdvicePruned(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := New(nil)
	r.now = func() time.Time { return now }
	for i := range 1000 {
		now = now.Add(10 * time.Second)
		r.Advise(&v1.Service{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint("uid-", i))}}, "R", "m")
	}
	// 10 s apart, one hour holds 360 of them; the map may be up to about twice that.
	if n := len(r.advised); n > 2*360+64 {
		t.Errorf("%d advice kept after 1000 Services over 10,000 s, want at most %d", n, 2*360+64)
	}
}
