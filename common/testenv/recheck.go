package testenv

import (
	"regexp"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// A failed load balancer sync is a Warning Event of the service controller. Some of them are
// planned re-checks: the provider returned an api.RetryError because the cloud is still busy
// (a load balancer provisioning, a group still in use), and the controller reports that with
// the same Warning as a failure. The harnesses (test/faults, the providers' benches) count a
// Warning as a re-check only when its whole message is the controller's wording around one of
// the provider's own re-check messages below; anything else, including a cloud error that
// merely mentions PENDING_ or "still in use", is a failure.
//
// The wording, the library's (k8s.io/cloud-provider v0.37.2, controllers/service/controller.go)
// and ccm's own controller's (common/servicecontroller/events.go keeps it):
//
//	SyncLoadBalancerFailed   "Error syncing load balancer: failed to ensure load balancer: ERR"
//	                         "Error syncing load balancer: failed to delete load balancer: ERR"
//	UpdateLoadBalancerFailed "Error updating load balancer with new hosts [NODES] [node names limited,
//	                          total number of nodes: N], error: ERR"
var libraryWording = regexp.MustCompile(`^(?:Error syncing load balancer: failed to (?:ensure|delete) load balancer: ` +
	`|Error updating load balancer with new hosts \[[^\]]*\] \[node names limited, total number of nodes: \d+\], error: )(.*)$`)

// goDuration is a time.Duration as %v prints it (5s, 1.5s, 200ms, 1m0s).
const goDuration = `(?:[0-9]+(?:\.[0-9]+)?(?:ns|µs|us|ms|s|m|h))+`

// File:line references are as of commit eafa9c5 (the providers change; the formats are what
// TestRecheckMessagesInProviders checks are still there).
//
// openstackItem is one re-check reason of the OpenStack provider, each passed to its
// loadBalancers.retry (:262), which appends "; checking again in D"
// (providers/openstack/loadbalancer.go; errors.go:156 sanitize keeps a RetryError one):
//
//	:374, :547 "load balancer %s is %s"                          (a PENDING_* provisioning status)
//	:454       "load balancer %s is still %s"                    (still PENDING_* after an update's wait)
//	:467       "%s: load balancer busy (409), retrying"          (Octavia's 409 on a busy load balancer)
//	:542       "the load balancer named by annotation %s is %s"  (an adopted load balancer, PENDING_*)
//	:565       "load balancer %s is being deleted"
//	:315, :514 the above joined by "; " (one per IP family), then "; checking again in D" again
//
// Not a re-check: :370 "load balancer %s was in ERROR and is being recreated" (the cloud failed
// the load balancer; the provider recovers, but it was a failure, not waiting).
const openstackItem = `(?:load balancer \S+ is (?:still )?PENDING_[A-Z_]+` +
	`|[^;]+: load balancer busy \(409\), retrying` +
	`|the load balancer named by annotation \S+ is PENDING_[A-Z_]+` +
	`|load balancer \S+ is being deleted)`

const openstackAgain = `; checking again in ` + goDuration

// recheckMessages are, per provider, the provider's own re-check messages (the ERR above), each
// matched as a whole. A provider without an entry plans no re-checks: every Warning is a failure.
var recheckMessages = map[string]*regexp.Regexp{
	// providers/aws:
	//   nlb.go:232            "NLB %s is provisioning"
	//   securitygroups.go:374 "security group %s is still in use; retrying"
	//   nlb.go:449            "target group %s is still in use; retrying"
	"aws": regexp.MustCompile(`^(?:NLB [A-Za-z0-9-]+ is provisioning` +
		`|security group sg-[0-9a-f]+ is still in use; retrying` +
		`|target group [A-Za-z0-9-]+ is still in use; retrying)$`),
	"openstack": regexp.MustCompile(`^` + openstackItem + openstackAgain +
		`(?:; ` + openstackItem + openstackAgain + `)*(?:` + openstackAgain + `)?$`),
	// vsphere and dummy return no api.RetryError: nothing of theirs is a planned re-check.
}

// IsRecheck says whether a Warning Event message of a failed load balancer sync is one of
// provider's planned re-checks.
func IsRecheck(provider, message string) bool {
	m := libraryWording.FindStringSubmatch(message)
	if m == nil {
		return false
	}
	re, ok := recheckMessages[provider]
	return ok && re.MatchString(m[1])
}

// LBWarnings are the failed load balancer syncs of a namespace, told apart.
type LBWarnings struct {
	Failed, Rechecks int
	Examples         []string            // up to three failures, "service: message"
	ByService        map[string][]string // every failure's message per Service name, newest last
}

// ClassifyLBWarnings counts the SyncLoadBalancerFailed and UpdateLoadBalancerFailed Warnings
// among events (an Event's count is how often it happened) as failures or re-checks.
func ClassifyLBWarnings(provider string, events []v1.Event) LBWarnings {
	sort.SliceStable(events, func(i, j int) bool { return events[i].LastTimestamp.Before(&events[j].LastTimestamp) })
	w := LBWarnings{ByService: map[string][]string{}}
	for _, ev := range events {
		if ev.Type != v1.EventTypeWarning || (ev.Reason != "SyncLoadBalancerFailed" && ev.Reason != "UpdateLoadBalancerFailed") {
			continue
		}
		n := int(max(ev.Count, 1))
		if IsRecheck(provider, ev.Message) {
			w.Rechecks += n
			continue
		}
		w.Failed += n
		w.ByService[ev.InvolvedObject.Name] = append(w.ByService[ev.InvolvedObject.Name], ev.Message)
		if len(w.Examples) < 3 {
			w.Examples = append(w.Examples, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	return w
}
