package cloudtest

import (
	"fmt"
	"runtime"
	"testing"
)

// recorder is a T that records failures; Fatalf ends the check's goroutine like t.FailNow.
type recorder struct {
	failed bool
	msgs   []string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Errorf(f string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(f, args...))
}
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); runtime.Goexit() }

func runCheck(c Check, h Harness) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(r, Config{Harness: h, ClusterName: "meta"})
	}()
	<-done
	return r
}

// The reference fake keeps the whole contract.
func TestReferenceFakePasses(t *testing.T) {
	Run(t, Config{Harness: newFake(none)})
}

// Each deliberately broken fake fails exactly the check for the point it breaks: the suite can
// fail, and says why.
func TestSuiteCatchesEachBreakage(t *testing.T) {
	catches := map[breakage]string{
		unknownIsError:     "UnknownInstanceDoesNotExist",
		errorIsGone:        "CloudErrorIsAnError",
		noLookupByID:       "ProviderIDRoundTrip",
		wrongZone:          "MetadataMatchesCloud",
		alwaysWrites:       "EnsureTwiceWritesOnce",
		forgetsOnRestart:   "RestartWithNothingChangedWritesNothing",
		updateChangesIP:    "UpdateChangesOnlyMembers",
		deleteMissingFails: "DeleteMissingIsNil",
		keepsAfterDelete:   "GetAfterDeleteIsNotFound",
		longNames:          "NamesFitTheCloud",
		noTags:             "LoadBalancersCarryOwnershipTags",
		updateCreates:      "UpdateAfterDeleteCreatesNothing",
		noUID:              "LoadBalancersCarryOwnershipTags",
		adoptsForeign:      "HostileAnnotationsAreRefused",
		leaksOwner:         "HostileAnnotationsAreRefused",
		ignoresCluster:     "TwoClustersWithTheSameServicesDoNotCollide",
		trustsFingerprint:  "OutOfBandChangesAreRepaired",
		repairsSilently:    "OutOfBandChangesAreRepaired",
		rewritesAll:        "OutOfBandChangesAreRepaired",
		recreatesUpstream:  "UpstreamStateIsTakenOverInPlace",
		orphansUpstream:    "UpstreamStateIsTakenOverInPlace",
		listsForeign:       "OrphanListingIsOwnedAndRechecked",
		deletesUnchecked:   "OrphanListingIsOwnedAndRechecked",
		skipsReach:         "GeneratedHostileAnnotationsAreRefused",
		routesListAll:      "OtherOwnersRoutesAreUntouched",
		routesByHopOnly:    "RoutesFollowNodes",
		routesAlwaysWrite:  "RoutesFollowNodes",
		routesNoRepair:     "RoutesFollowNodes",
	}
	covered := map[string]bool{}
	for brk, want := range catches {
		covered[want] = true
		t.Run(string(brk), func(t *testing.T) {
			var check *Check
			for i := range Checks {
				if Checks[i].Name == want {
					check = &Checks[i]
				}
			}
			if check == nil {
				t.Fatalf("no check %s", want)
			}
			r := runCheck(*check, newFake(brk))
			if !r.failed {
				t.Errorf("check %s passed a provider whose %s", want, brk)
			} else {
				t.Logf("%s: %v", want, r.msgs)
			}
			// The same check passes on the reference fake.
			if r := runCheck(*check, newFake(none)); r.failed {
				t.Errorf("check %s fails the reference fake: %v", want, r.msgs)
			}
		})
	}
	for _, c := range Checks {
		if !covered[c.Name] {
			t.Errorf("check %s has no broken fake proving it can fail", c.Name)
		}
	}
}
