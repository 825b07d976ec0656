package dummy

import (
	"maps"
	"reflect"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
)

// Every record reads back exactly as set; only one whose tags and name are those ccm writes for
// its key's Service is kept without its tags map.
func TestRecordSetKeepsRecordsExactly(t *testing.T) {
	id := ownership.Identity{Cluster: "prod", Namespace: "team", Name: "web", UID: "uid-1"}
	k := names.Name(id.Cluster, id.Namespace, id.Name)
	ours := Record{Name: k, IPs: []string{"192.0.2.1"}, Fingerprint: "f", Tags: id.Tags(), Ports: []string{"TCP/80"}, SharingKey: "s"}
	with := func(change func(r *Record)) Record {
		r := ours
		r.Tags = id.Tags()
		change(&r)
		return r
	}
	legacy := id
	legacy.UID = ""
	for _, tc := range []struct {
		name    string
		key     string
		r       Record
		compact bool
	}{
		{"ccm's record of its key's Service", k, ours, true},
		{"written before UIDs", k, with(func(r *Record) { r.Tags = legacy.Tags() }), true},
		{"another Service's tags under this key", k, with(func(r *Record) { r.Tags[ownership.ServiceTag] = "team/other" }), false},
		{"an extra tag", k, with(func(r *Record) { r.Tags["owner"] = "me" }), false},
		{"shared, not owned", k, with(func(r *Record) {
			delete(r.Tags, ownership.ClusterTagPrefix+"prod")
			r.Tags[ownership.ClusterTagPrefix+"prod"] = ownership.Shared
		}), false},
		{"another name", k, with(func(r *Record) { r.Name = "dummy_prod_team_other" }), false},
		{"made by hand, no tags", "lb-by-hand", Record{Name: "lb-by-hand", IPs: []string{"192.0.2.9"}}, false},
		{"a key of another cluster", names.Name("staging", "team", "web"), with(func(r *Record) { r.Name = names.Name("staging", "team", "web") }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRecordSet()
			want := tc.r
			want.Tags = maps.Clone(tc.r.Tags)
			s.set(tc.key, tc.r)
			got, ok := s.get(tc.key)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("get = %+v, %v; want %+v", got, ok, want)
			}
			if kr := s.m[tc.key]; kr.compact != tc.compact || (tc.compact && (kr.Tags != nil || kr.Name != "")) {
				t.Errorf("kept %+v, want compact %v (no tags map, no name)", kr, tc.compact)
			}
			if _, ok := s.get("other"); ok {
				t.Error("a key never set was found")
			}
			s.delete(tc.key)
			if _, ok := s.get(tc.key); ok || s.len() != 0 {
				t.Error("a deleted record was found")
			}
		})
	}
	// Compact records of one cluster share one copy of its name.
	s := newRecordSet()
	for _, n := range []string{"a", "b"} {
		other := id
		other.Name = n
		key := names.Name("prod", "team", n)
		s.set(key, Record{Name: key, Tags: other.Tags()})
	}
	a, b := s.m[names.Name("prod", "team", "a")].cluster, s.m[names.Name("prod", "team", "b")].cluster
	if a != "prod" || b != "prod" || len(s.clusters) != 1 {
		t.Errorf("cluster names %q %q, %d copies; want one shared copy of prod", a, b, len(s.clusters))
	}
}
