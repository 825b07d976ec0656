package vsphere

import (
	"strings"
	"testing"
)

func TestPlanRecord(t *testing.T) {
	want := lbRecord{Cluster: "c", Service: "ns/web", UID: "u1", IPs: []string{"192.0.2.5"}, Ports: []string{"TCP/80"}, Fingerprint: "fp1"}
	with := func(f func(r *lbRecord)) lbRecord { r := want; f(&r); return r }
	cases := []struct {
		name        string
		have        lbRecord
		exists      bool
		lastApplied string
		hadAddress  bool
		write       bool
		drift       bool
		adopt       bool
		mentions    string
	}{
		{name: "first creation", write: true},
		{name: "deleted out of band", hadAddress: true, lastApplied: "fp1", write: true, drift: true, mentions: "deleted"},
		{name: "an address served before ccm (a takeover): adopted, not drift", hadAddress: true, write: true, adopt: true},
		{name: "unchanged", have: want, exists: true},
		{name: "unchanged after a restart", have: want, exists: true, lastApplied: ""},
		{name: "address changed out of band", exists: true, have: with(func(r *lbRecord) { r.IPs = []string{"192.0.2.9"} }), write: true, drift: true, mentions: "address"},
		{name: "ports changed out of band", exists: true, have: with(func(r *lbRecord) { r.Ports = []string{"TCP/81"} }), write: true, drift: true, mentions: "ports"},
		{name: "fingerprint changed out of band, seen by the process that applied it", exists: true, lastApplied: "fp1",
			have: with(func(r *lbRecord) { r.Fingerprint = "edited" }), write: true, drift: true, mentions: "fingerprint"},
		{name: "desired state changed (a Node added): an update, not drift", exists: true, lastApplied: "fp0",
			have: with(func(r *lbRecord) { r.Fingerprint = "fp0" }), write: true},
		{name: "desired state changed while ccm was down", exists: true,
			have: with(func(r *lbRecord) { r.Fingerprint = "fp0"; r.Ports = []string{"TCP/8080"} }), write: true},
		{name: "sharing key changed out of band", exists: true, have: with(func(r *lbRecord) { r.SharingKey = "other" }), write: true, drift: true, mentions: "sharing key"},
		{name: "record from before ports were recorded", exists: true, have: with(func(r *lbRecord) { r.Ports = nil })},
		{name: "record from before UIDs: written, not drift", exists: true, have: with(func(r *lbRecord) { r.UID = "" }), write: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planRecord(want, c.have, c.exists, c.lastApplied, c.hadAddress)
			if p.write != c.write || p.drift != c.drift || p.adopt != c.adopt {
				t.Errorf("write, drift, adopt = %v, %v, %v; want %v, %v, %v (diffs %q)", p.write, p.drift, p.adopt, c.write, c.drift, c.adopt, p.diffs)
			}
			if c.mentions != "" && !strings.Contains(strings.Join(p.diffs, "; "), c.mentions) {
				t.Errorf("diffs %q do not mention %q", p.diffs, c.mentions)
			}
			if !c.write && len(p.diffs) > 0 {
				t.Errorf("nothing to write, but diffs %q", p.diffs)
			}
		})
	}
}

// A repair Event's text passes through the cloud's redactor: no vCenter user or password.
func TestEventRedaction(t *testing.T) {
	s := startSim(t)
	c := newTestCloud(t, s)
	got := c.redact("login " + testUser + " with " + testPassword + " failed; address [192.0.2.5] was [192.0.2.9]")
	if strings.Contains(got, testUser) || strings.Contains(got, testPassword) {
		t.Errorf("redacted text still holds a credential: %q", got)
	}
	if !strings.Contains(got, "192.0.2.9") {
		t.Errorf("redaction removed what the Event says: %q", got)
	}
}
