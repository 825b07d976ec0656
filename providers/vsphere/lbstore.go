package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"

	"github.com/ccm-project/ccm/common/lbname"
)

// lbCategory is the vSphere tag category that holds one tag per load balancer. vSphere without
// NSX has no load balancer object, so the address a Service got is recorded in vCenter itself:
// it survives CCM restarts and failovers, is visible to vSphere admins, and needs no RBAC.
const lbCategory = "ccm-load-balancers"

// lbRecord is what a load balancer tag's description holds: compact JSON, as vCenter limits
// the length of a description.
type lbRecord struct {
	Cluster     string   `json:"c"`
	Service     string   `json:"s"` // namespace/name
	IPs         []string `json:"ips"`
	Fingerprint string   `json:"fp"` // of the desired state, members included
	tagID       string
}

// tags are the ownership tags the record stands for.
func (r lbRecord) tags() map[string]string {
	ns, name, _ := strings.Cut(r.Service, "/")
	return lbname.Tags(r.Cluster, ns, name)
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

// load returns every record by tag name.
func (s *lbStore) load(ctx context.Context) (map[string]lbRecord, error) {
	cat, err := s.category(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]lbRecord{}
	err = s.do(ctx, func(m *tags.Manager) error {
		ts, err := m.GetTagsForCategory(ctx, cat)
		if err != nil {
			return err
		}
		for _, t := range ts {
			var r lbRecord
			if json.Unmarshal([]byte(t.Description), &r) != nil {
				continue // not ours to read; never ours to delete
			}
			r.tagID = t.ID
			out[t.Name] = r
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vCenter %s: reading load balancer records: %w", s.c.vc.Server, err)
	}
	return out, nil
}

// put creates or updates the tag name with r and returns r with its tag ID.
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
