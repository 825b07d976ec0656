package vsphere

import (
	"fmt"
	"slices"
)

// recordPlan is what one sync writes to a Service's record: the difference between the desired
// record and the one vCenter holds. Pure: computed without calls, table-tested.
type recordPlan struct {
	// write: the record must be created (missing) or updated (differs).
	write bool
	// diffs names what differs, as phrases for an Event ("address 192.0.2.5 was 192.0.2.9").
	diffs []string
	// drift: vCenter differs from a desired state that was already applied, so someone changed
	// or deleted the record behind ccm's back; a repair Event is due.
	drift bool
	// adopt: no record, but the Service already serves an address and this process never held
	// its record: the address is taken over (from the load balancer implementation that served
	// it before ccm, or from a record deleted while no ccm ran). Nothing to repair: a Normal
	// Event says which address was kept.
	adopt bool
}

// planRecord compares want (desired) with have (observed in vCenter; exists false if there is
// no record). lastApplied is the fingerprint this process last wrote for the record, "" if it
// wrote none (after a restart the record's own fingerprint stands in for it). hadAddress: the
// Service's status has an address, so it was served before.
func planRecord(want, have lbRecord, exists bool, lastApplied string, hadAddress bool) recordPlan {
	if !exists {
		p := recordPlan{write: true}
		switch {
		case hadAddress && lastApplied != "":
			// This process wrote or read the record and it is gone: deleted out of band.
			p.drift = true
			p.diffs = []string{fmt.Sprintf("record was deleted (written again with address %v)", want.IPs)}
		case hadAddress:
			p.adopt = true
		}
		return p
	}
	var p recordPlan
	if !slices.Equal(want.IPs, have.IPs) {
		p.diffs = append(p.diffs, fmt.Sprintf("address %v was %v", want.IPs, have.IPs))
	}
	// A record written before ports were recorded has none: its fingerprint covers them.
	if have.Ports != nil && !slices.Equal(want.Ports, have.Ports) {
		p.diffs = append(p.diffs, fmt.Sprintf("ports %v were %v", want.Ports, have.Ports))
	}
	if want.SharingKey != have.SharingKey {
		p.diffs = append(p.diffs, fmt.Sprintf("sharing key %q was %q", want.SharingKey, have.SharingKey))
	}
	if want.Fingerprint != have.Fingerprint {
		p.diffs = append(p.diffs, "members or ports (fingerprint) changed")
	}
	// A record written before UIDs gets the Service's at its next write (ownership.NeedsUID):
	// an upgrade, not drift.
	p.write = len(p.diffs) > 0 || have.UID != want.UID
	if lastApplied == "" {
		lastApplied = have.Fingerprint
	}
	p.drift = len(p.diffs) > 0 && lastApplied == want.Fingerprint
	return p
}
