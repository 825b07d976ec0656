package dummy

import (
	"maps"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
)

func TestPlanRecord(t *testing.T) {
	id := ownership.Identity{Cluster: "c", Namespace: "ns", Name: "web", UID: "u1"}
	want := Record{Name: "dummy_c_ns_web", IPs: []string{"192.0.2.5"}, Ports: []string{"TCP/80"}, SharingKey: "k", Tags: id.Tags(), Fingerprint: "fp1"}
	with := func(f func(r *Record)) Record { r := want; r.Tags = maps.Clone(want.Tags); f(&r); return r }
	legacy := id
	legacy.UID = ""
	cases := []struct {
		name        string
		have        Record
		exists      bool
		lastApplied string
		hadAddress  bool
		write       bool
		drift       bool
		mentions    string
	}{
		{name: "first creation", write: true},
		{name: "deleted out of band", hadAddress: true, write: true, drift: true, mentions: "deleted"},
		{name: "unchanged", have: want, exists: true, lastApplied: "fp1"},
		{name: "unchanged after a restart", have: want, exists: true},
		{name: "address changed out of band", exists: true, have: with(func(r *Record) { r.IPs = []string{"192.0.2.9"} }), write: true, drift: true, mentions: "address"},
		{name: "ports changed out of band", exists: true, have: with(func(r *Record) { r.Ports = nil }), write: true, drift: true, mentions: "ports"},
		{name: "sharing key changed out of band", exists: true, have: with(func(r *Record) { r.SharingKey = "" }), write: true, drift: true, mentions: "sharing key"},
		{name: "name changed out of band", exists: true, have: with(func(r *Record) { r.Name = "x" }), write: true, drift: true, mentions: "name"},
		{name: "tag added out of band", exists: true, have: with(func(r *Record) { r.Tags["team"] = "a" }), write: true, drift: true, mentions: "tags"},
		{name: "fingerprint changed, seen by the process that applied it", exists: true, lastApplied: "fp1",
			have: with(func(r *Record) { r.Fingerprint = "edited" }), write: true, drift: true, mentions: "fingerprint"},
		{name: "desired state changed (a Node added): an update, not drift", exists: true, lastApplied: "fp0",
			have: with(func(r *Record) { r.Fingerprint = "fp0" }), write: true},
		{name: "desired state changed while ccm was down", exists: true,
			have: with(func(r *Record) { r.Fingerprint = "fp0"; r.Ports = []string{"TCP/8080"} }), write: true},
		{name: "record from before UIDs: written, not drift", exists: true, have: with(func(r *Record) { r.Tags = legacy.Tags() }), write: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planRecord(id, want, c.have, c.exists, c.lastApplied, c.hadAddress)
			if p.write != c.write || p.drift != c.drift {
				t.Errorf("write, drift = %v, %v; want %v, %v (diffs %q)", p.write, p.drift, c.write, c.drift, p.diffs)
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
