package dummy

import (
	"maps"
	"strings"

	"github.com/ccm-project/ccm/common/ownership"
)

// recordSet is the load balancer records this process knows, by record key. Most of a record
// in memory is its ownership tags, a map of three strings: at 10,000 load balancers about 5 MB
// of the heap, and the peak heap is half as much again. A record whose tags and name are
// exactly what ccm writes for the Service its key names (ownership.Identity.Tags) keeps only
// the Service's UID, and gets its tags and name back when read; any other record (made by
// hand, or by an earlier version) is kept as it is.
type recordSet struct {
	m        map[string]kept
	clusters map[string]string // one copy of each cluster name
}

// kept is a record as the set holds it: Name empty and Tags nil when compact.
type kept struct {
	Record
	cluster, uid string
	compact      bool
}

func newRecordSet() recordSet {
	return recordSet{m: map[string]kept{}, clusters: map[string]string{}}
}

// get returns record k as it was set.
func (s recordSet) get(k string) (Record, bool) {
	kr, ok := s.m[k]
	if !ok {
		return Record{}, false
	}
	return kr.record(k), true
}

// set keeps r under k, compacted if its tags and name are those ccm writes for k's Service.
func (s recordSet) set(k string, r Record) {
	kr := kept{Record: r}
	for tag, v := range r.Tags {
		cluster, ok := strings.CutPrefix(tag, ownership.ClusterTagPrefix)
		if !ok || v != ownership.Owned {
			continue
		}
		ns, name, ok := names.Parse(cluster, k)
		id := ownership.Identity{Cluster: cluster, Namespace: ns, Name: name, UID: r.Tags[ownership.ServiceUIDTag]}
		if ok && r.Name == k && maps.Equal(r.Tags, id.Tags()) {
			if c, seen := s.clusters[cluster]; seen {
				cluster = c
			} else {
				cluster = strings.Clone(cluster)
				s.clusters[cluster] = cluster
			}
			kr.Name, kr.Tags, kr.cluster, kr.uid, kr.compact = "", nil, cluster, id.UID, true
		}
		break
	}
	s.m[k] = kr
}

func (s recordSet) delete(k string) { delete(s.m, k) }

func (s recordSet) len() int { return len(s.m) }

// record is the Record kept under k.
func (kr kept) record(k string) Record {
	if !kr.compact {
		return kr.Record
	}
	r := kr.Record
	ns, name, _ := names.Parse(kr.cluster, k)
	r.Name = k
	r.Tags = ownership.Identity{Cluster: kr.cluster, Namespace: ns, Name: name, UID: kr.uid}.Tags()
	return r
}
