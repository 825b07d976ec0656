package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"

	"github.com/ccm-project/ccm/common/ownership"
)

// lbCategory is the vSphere tag category that holds one tag per load balancer. vSphere without
// NSX has no load balancer object, so the address a Service got is recorded in vCenter itself:
// it survives CCM restarts and failovers, is visible to vSphere admins, and needs no RBAC.
const lbCategory = "ccm-load-balancers"

// recordKind names a record in errors that reach a Service's Events.
const recordKind = "load balancer record"

// lbRecord is what a load balancer tag's description holds: compact JSON, as vCenter limits
// the length of a description. Cluster, Service and UID are the ownership: the tag's name is
// derived from them but proves nothing (anyone with tagging rights can name a tag).
type lbRecord struct {
	Cluster     string   `json:"c"`
	Service     string   `json:"s"`           // namespace/name
	UID         string   `json:"u,omitempty"` // the Service's metadata.uid; "" in records written before UIDs
	IPs         []string `json:"ips"`
	Ports       []string `json:"p,omitempty"` // "TCP/80"; records written before ports were recorded have none
	SharingKey  string   `json:"k,omitempty"` // the Service's sharing key (allow-shared-ip); "" for none
	Local       bool     `json:"l,omitempty"` // with a sharing key: externalTrafficPolicy Local (poollb.Backends)
	Pods        string   `json:"d,omitempty"` // with a sharing key: the digest of the pod selector
	Fingerprint string   `json:"fp"`          // of the desired state, members included
	tagID       string
	// unreadable: the description is not a record (a tag made by hand or by another tool). It is
	// never ours; IPs holds every address its text mentions, so none of them is handed out.
	unreadable bool
}

// tags are the ownership tags the record stands for (none for an unreadable one).
func (r lbRecord) tags() map[string]string {
	if r.unreadable || r.Cluster == "" {
		return map[string]string{}
	}
	ns, name, _ := strings.Cut(r.Service, "/")
	return ownership.Identity{Cluster: r.Cluster, Namespace: ns, Name: name, UID: r.UID}.Tags()
}

// parseRecord reads a tag's description. Anything that is not a record of ours (free text, JSON
// of another shape) comes back unreadable, with the addresses its text holds.
func parseRecord(desc string) lbRecord {
	var r lbRecord
	if json.Unmarshal([]byte(desc), &r) == nil && r.Cluster != "" && r.Service != "" {
		return r
	}
	return lbRecord{unreadable: true, IPs: addrsIn(desc)}
}

// addrsIn returns every IP address written in s (split at anything that cannot be part of one).
func addrsIn(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '.' || r == ':')
	}) {
		if a, err := netip.ParseAddr(strings.Trim(f, ".:")); err == nil {
			out = append(out, a.String())
		} else if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, a.String())
		}
	}
	return out
}

// lbStore keeps lbRecords as tags of lbCategory in the first configured vCenter.
type lbStore struct {
	c     *conn
	z     *zoner // for its vAPI re-login helper
	catID string
}

func (s *lbStore) do(ctx context.Context, f func(*tags.Manager) error) error {
	return s.z.withRest(ctx, s.c, f)
}

// category finds or creates the category of load balancer tags.
func (s *lbStore) category(ctx context.Context) (string, error) {
	if s.catID != "" {
		return s.catID, nil
	}
	err := s.do(ctx, func(m *tags.Manager) error {
		cat, err := m.GetCategory(ctx, lbCategory)
		if err == nil {
			s.catID = cat.ID
			return nil
		}
		if !notFound(err) {
			return err
		}
		s.catID, err = m.CreateCategory(ctx, &tags.Category{Name: lbCategory, Cardinality: "MULTIPLE",
			Description: "Load balancer addresses handed out by the Kubernetes cloud-controller-manager; do not edit"})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("vCenter %s: load balancer tag category %s: %w", s.c.vc.Server, lbCategory, err)
	}
	return s.catID, nil
}

// namedRecord is a record with its tag name.
type namedRecord struct {
	name string
	lbRecord
}

// list returns the IDs of every tag in the category: one call.
func (s *lbStore) list(ctx context.Context) ([]string, error) {
	cat, err := s.category(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	err = s.do(ctx, func(m *tags.Manager) (err error) {
		ids, err = m.ListTagsForCategory(ctx, cat)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("vCenter %s: listing load balancer records: %w", s.c.vc.Server, err)
	}
	return ids, nil
}

// get reads the tags ids (one call each); a tag deleted meanwhile is left out.
func (s *lbStore) get(ctx context.Context, ids []string) ([]namedRecord, error) {
	var out []namedRecord
	err := s.do(ctx, func(m *tags.Manager) error {
		for _, id := range ids {
			t, err := m.GetTag(ctx, id)
			if err != nil {
				if notFound(err) {
					continue
				}
				return err
			}
			r := parseRecord(t.Description)
			r.tagID = t.ID
			out = append(out, namedRecord{name: t.Name, lbRecord: r})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vCenter %s: reading load balancer records: %w", s.c.vc.Server, err)
	}
	return out, nil
}

// getOne reads tag id (one call); found is false if it is gone.
func (s *lbStore) getOne(ctx context.Context, id string) (r namedRecord, found bool, err error) {
	err = s.do(ctx, func(m *tags.Manager) error {
		t, err := m.GetTag(ctx, id)
		if err != nil {
			if notFound(err) {
				return nil
			}
			return err
		}
		r, found = namedRecord{name: t.Name, lbRecord: parseRecord(t.Description)}, true
		r.tagID = t.ID
		return nil
	})
	if err != nil {
		return namedRecord{}, false, fmt.Errorf("vCenter %s: reading load balancer record: %w", s.c.vc.Server, err)
	}
	return r, found, nil
}

// put creates or updates the tag name with r and returns r with its tag ID. A create that
// meets a tag of that name (made since the last read, by hand or by another tool) fails:
// vCenter keeps tag names unique in a category, so nothing is overwritten.
func (s *lbStore) put(ctx context.Context, name string, r lbRecord) (lbRecord, error) {
	cat, err := s.category(ctx)
	if err != nil {
		return r, err
	}
	desc, _ := json.Marshal(r)
	err = s.do(ctx, func(m *tags.Manager) error {
		if r.tagID != "" {
			return m.UpdateTag(ctx, &tags.Tag{ID: r.tagID, Name: name, Description: string(desc)})
		}
		id, err := m.CreateTag(ctx, &tags.Tag{Name: name, CategoryID: cat, Description: string(desc)})
		r.tagID = id
		return err
	})
	if err != nil && r.tagID == "" && strings.Contains(err.Error(), "already_exists") {
		return r, fmt.Errorf("%w (a tag of that name was made in category %s since the last read)",
			ownership.Refuse(recordKind, name, "it carries no ownership mark of this cluster (created outside ccm, or by another cluster)"), lbCategory)
	}
	if err != nil {
		return r, fmt.Errorf("vCenter %s: writing load balancer record %s: %w", s.c.vc.Server, name, err)
	}
	return r, nil
}

func (s *lbStore) delete(ctx context.Context, r lbRecord) error {
	err := s.do(ctx, func(m *tags.Manager) error { return m.DeleteTag(ctx, &tags.Tag{ID: r.tagID}) })
	if err != nil && !notFound(err) {
		return fmt.Errorf("vCenter %s: deleting load balancer record: %w", s.c.vc.Server, err)
	}
	return nil
}

func notFound(err error) bool {
	return rest.IsStatusError(err, http.StatusNotFound) || strings.Contains(err.Error(), "not found")
}
