package poollb

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Event reasons of the pool load balancers.
const (
	// ReasonAddressChanged: an address of the Service's status could not be kept; its clients
	// lose it.
	ReasonAddressChanged = "LoadBalancerAddressChanged"
	// ReasonOutsidePools: the Service keeps an address that no pool serving its namespace
	// holds any more (the pools changed). It is not moved: its clients keep working.
	ReasonOutsidePools = "LoadBalancerAddressOutsidePools"
)

// Recorder is the part of svcevents.Recorder the Warnings go through.
type Recorder interface {
	Event(svc *v1.Service, typ, reason, msg string)
	Advise(svc *v1.Service, reason, msg string)
}

// Record gives the Service the Warnings the choice calls for: one Event for addresses it
// lost, and advice (repeated at most hourly, as every sync finds it again) for addresses kept
// outside the pools.
func (c Choice) Record(rec Recorder, svc *v1.Service) {
	if len(c.Moved) > 0 {
		rec.Event(svc, v1.EventTypeWarning, ReasonAddressChanged, fmt.Sprintf("the Service now has %v: %s", c.Addrs, strings.Join(c.Moved, "; ")))
	}
	if len(c.Outside) > 0 {
		rec.Advise(svc, ReasonOutsidePools, OutsideMessage(svc.Namespace, c.Outside))
	}
}

// OutsideMessage is the Warning for addresses kept outside the pools serving namespace.
func OutsideMessage[A fmt.Stringer](namespace string, addrs []A) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return fmt.Sprintf("address %s is in no pool serving namespace %q any more (the cloud config changed): the Service keeps it, as its clients use it; "+
		"to move it, ask for an address of a pool or delete and re-create the Service", strings.Join(s, ", "), namespace)
}
