// Package svcevents records Events on Services for a provider: what a user of the Service needs
// to see (a refused annotation, a load balancer repaired after an out-of-band change) reaches
// `kubectl describe service`, and the log, at once.
//
// A Recorder is safe to use before Initialize (and without a client, as in unit tests): the
// Event is then only logged. Messages pass through the provider's redactor first, so a secret a
// cloud answer echoes never reaches an Event.
package svcevents

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// Reasons shared by every provider, so alerts and docs name one thing.
const (
	// ReasonDriftRepaired: a sync found the cloud different from the Service's desired load
	// balancer (changed or deleted out of band) and put it back. Warning: someone or something
	// changes objects ccm owns, and will likely do it again.
	ReasonDriftRepaired = "LoadBalancerDriftRepaired"
	// ReasonRecreated: the load balancer had to be created again (a change the cloud cannot make
	// in place, or it was deleted); its address may have changed.
	ReasonRecreated = "LoadBalancerRecreated"
)

// Recorder records Events on Services.
type Recorder struct {
	mu     sync.Mutex
	rec    record.EventRecorder
	redact func(string) string

	// advised: when each advice (Service UID, reason, message) was last recorded (Advise).
	advised map[string]time.Time
	pruned  int              // len(advised) after the last prune
	now     func() time.Time // time.Now; tests set it
}

// AdviceRepeat is how long an identical advice is not recorded again: the API server's
// default Event TTL, so a user still sees it while the Service keeps the cause.
const AdviceRepeat = time.Hour

// New returns a Recorder whose messages pass through redact (nil: none).
func New(redact func(string) string) *Recorder { return &Recorder{redact: redact} }

// Start connects the Recorder to the API server through b (from Initialize). A nil b, or no
// client, leaves it logging only. The broadcaster stops with stop.
func (r *Recorder) Start(b cloudprovider.ControllerClientBuilder, component string, stop <-chan struct{}) {
	if b == nil {
		return
	}
	client, err := b.Client(component)
	if err != nil {
		klog.ErrorS(err, "No API client; Service events will only be logged", "component", component)
		return
	}
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	r.mu.Lock()
	r.rec = bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
	r.mu.Unlock()
	if stop != nil {
		go func() { <-stop; bc.Shutdown() }()
	}
}

// Event records an Event on svc and logs it.
func (r *Recorder) Event(svc *v1.Service, typ, reason, msg string) {
	if r == nil {
		return
	}
	if r.redact != nil {
		msg = r.redact(msg)
	}
	klog.InfoS("Service event", "service", klog.KObj(svc), "type", typ, "reason", reason, "message", msg)
	r.mu.Lock()
	rec := r.rec
	r.mu.Unlock()
	if rec != nil {
		rec.Event(svc, typ, reason, msg)
	}
}

// Advise records a Warning about the Service's own spec (an annotation ccm does not use, a
// setting it adjusted): a sync of an unchanged Service gives the same advice, and recording it
// at every sync would make every resync write. An advice identical to one recorded for the same
// Service in the last AdviceRepeat is only logged (at V(4)). Repairs and failures are not
// advice: each is news and goes through Event.
func (r *Recorder) Advise(svc *v1.Service, reason, msg string) {
	if r == nil {
		return
	}
	if r.redact != nil {
		msg = r.redact(msg)
	}
	key := string(svc.UID) + "\x00" + reason + "\x00" + msg
	r.mu.Lock()
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	last, seen := r.advised[key]
	fresh := !seen || now.Sub(last) >= AdviceRepeat
	if fresh {
		if r.advised == nil {
			r.advised = map[string]time.Time{}
		}
		r.advised[key] = now
		r.prune(now)
	}
	r.mu.Unlock()
	if !fresh {
		klog.V(4).InfoS("Service advice already recorded", "service", klog.KObj(svc), "reason", reason, "message", msg)
		return
	}
	r.Event(svc, v1.EventTypeWarning, reason, msg)
}

// prune drops advice older than AdviceRepeat (of Services long gone, or to be repeated anyway)
// whenever the map has doubled since the last prune: amortised O(1) per advice. r.mu is held.
func (r *Recorder) prune(now time.Time) {
	if len(r.advised) < 2*r.pruned+64 {
		return
	}
	for k, at := range r.advised {
		if now.Sub(at) >= AdviceRepeat {
			delete(r.advised, k)
		}
	}
	r.pruned = len(r.advised)
}

// Repaired records ReasonDriftRepaired on svc for the repairs a sync made (each a short phrase,
// "listener TCP/80 was missing"), when there were any.
func (r *Recorder) Repaired(svc *v1.Service, repairs []string) {
	if len(repairs) == 0 {
		return
	}
	r.Event(svc, v1.EventTypeWarning, ReasonDriftRepaired, RepairMessage(repairs))
}

// RepairMessage is the Event text for repairs: sorted, deduplicated, and bounded so that one
// Event stays readable however much was changed by hand.
func RepairMessage(repairs []string) string {
	seen := map[string]bool{}
	var list []string
	for _, p := range repairs {
		if p = strings.TrimSpace(p); p != "" && !seen[p] {
			seen[p] = true
			list = append(list, p)
		}
	}
	sort.Strings(list)
	const max = 8
	more := ""
	if len(list) > max {
		more = fmt.Sprintf("; and %d more", len(list)-max)
		list = list[:max]
	}
	return "repaired out-of-band changes to the load balancer: " + strings.Join(list, "; ") + more
}
