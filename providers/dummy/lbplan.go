package dummy

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ccm-project/ccm/common/ownership"
)

// recordPlan is what one sync writes to a Service's record: the difference between the desired
// record and the one the store holds. Pure: computed without calls, table-tested.
type recordPlan struct {
	// write: the record must be put (missing, or it differs).
	write bool
	// diffs names what differs, as phrases for an Event.
	diffs []string
	// drift: the store differs from a desired state that was already applied, so another writer
	// changed or deleted the record; a repair Event is due.
	drift bool
}

// planRecord compares want (desired) with have (as the store holds it; exists false if it has
// none). lastApplied is the fingerprint this process last found or wrote in the record, ""
// if none (after a restart the record's own fingerprint stands in for it). hadAddress: the
// Service's status has an address, so its record existed once.
func planRecord(id ownership.Identity, want, have Record, exists bool, lastApplied string, hadAddress bool) recordPlan {
	if !exists {
		p := recordPlan{write: true}
		if hadAddress {
			// The Service got an address from a record that is gone: deleted out of band.
			p.drift = true
			p.diffs = []string{fmt.Sprintf("record was deleted (written again with address %v)", want.IPs)}
		}
		return p
	}
	var p recordPlan
	if !slices.Equal(want.IPs, have.IPs) {
		p.diffs = append(p.diffs, fmt.Sprintf("address %v was %v", want.IPs, have.IPs))
	}
	if !slices.Equal(want.Ports, have.Ports) {
		p.diffs = append(p.diffs, fmt.Sprintf("ports %v were %v", want.Ports, have.Ports))
	}
	if want.SharingKey != have.SharingKey {
		p.diffs = append(p.diffs, fmt.Sprintf("sharing key %q was %q", want.SharingKey, have.SharingKey))
	}
	if want.Name != have.Name {
		p.diffs = append(p.diffs, fmt.Sprintf("name %q was %q", want.Name, have.Name))
	}
	// A record written before UIDs gets the Service's at its next write: an upgrade, not drift.
	legacy := ownership.NeedsUID(id, have.Tags)
	if !legacy && !maps.Equal(want.Tags, have.Tags) {
		p.diffs = append(p.diffs, "tags")
	}
	if want.Fingerprint != have.Fingerprint {
		p.diffs = append(p.diffs, "members (fingerprint) changed")
	}
	p.write = len(p.diffs) > 0 || legacy
	if lastApplied == "" {
		lastApplied = have.Fingerprint
	}
	p.drift = len(p.diffs) > 0 && lastApplied == want.Fingerprint
	return p
}
