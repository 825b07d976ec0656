package cloudtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
)

// EventSink is an API server for Events only: a harness passes it to Initialize as the
// ControllerClientBuilder, and the checks read the Events the provider recorded on Services
// through the same path a cluster would (client-go's broadcaster, then the API).
type EventSink struct{ cs *fake.Clientset }

// NewEventSink returns an empty sink.
func NewEventSink() *EventSink { return &EventSink{cs: fake.NewClientset()} }

// Config implements cloudprovider.ControllerClientBuilder (no real server behind it).
func (e *EventSink) Config(string) (*restclient.Config, error) { return &restclient.Config{}, nil }

// ConfigOrDie implements cloudprovider.ControllerClientBuilder.
func (e *EventSink) ConfigOrDie(string) *restclient.Config { return &restclient.Config{} }

// Client implements cloudprovider.ControllerClientBuilder.
func (e *EventSink) Client(string) (kubernetes.Interface, error) { return e.cs, nil }

// ClientOrDie implements cloudprovider.ControllerClientBuilder.
func (e *EventSink) ClientOrDie(string) kubernetes.Interface { return e.cs }

// On returns the Events recorded on svc, as "Type Reason: message".
func (e *EventSink) On(svc *v1.Service) []string {
	list, err := e.cs.CoreV1().Events(svc.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return []string{fmt.Sprintf("(listing events: %v)", err)}
	}
	var out []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == svc.Name && ev.InvolvedObject.UID == svc.UID {
			out = append(out, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Message))
		}
	}
	return out
}

// Await waits up to d for an Event on svc whose "Type Reason: message" text holds every one of
// parts; it returns the Events on svc either way (the broadcaster delivers asynchronously).
func (e *EventSink) Await(svc *v1.Service, d time.Duration, parts ...string) (found bool, events []string) {
	deadline := time.Now().Add(d)
	for {
		events = e.On(svc)
		for _, ev := range events {
			if containsAll(ev, parts) {
				return true, events
			}
		}
		if time.Now().After(deadline) {
			return false, events
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Writes counts the Event writes the API server took (creates, and the patches by which
// client-go counts a repeated Event): a repeated Event is one object but one write each time.
func (e *EventSink) Writes() int {
	n := 0
	for _, a := range e.cs.Actions() {
		if a.GetResource().Resource == "events" && (a.GetVerb() == "create" || a.GetVerb() == "patch" || a.GetVerb() == "update") {
			n++
		}
	}
	return n
}
