package svcevents

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
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
