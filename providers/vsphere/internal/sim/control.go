package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"

	"github.com/ccm-project/ccm/common/simcontrol"
)

// Sim serves the fault harness (common/simcontrol): SetOutage, SetThrottle and Calls are in
// gate.go; what reads or changes the inventory here goes through the admin client, which the
// gate lets by.
var _ simcontrol.Sim = (*Sim)(nil)

// LBCategory is the tag category where the provider records its load balancers (lbstore.go).
const LBCategory = "ccm-load-balancers"

const controlTimeout = 30 * time.Second

// Terminate destroys the VMs named node.
func (s *Sim) Terminate(node string) error {
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	m := view.NewManager(s.admin)
	v, err := m.CreateContainerView(ctx, s.admin.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return err
	}
	defer v.Destroy(ctx) //nolint:errcheck // the view dies with the session anyway
	refs, err := v.Find(ctx, []string{"VirtualMachine"}, property.Match{"name": node})
	if err != nil {
		return fmt.Errorf("finding VM %s: %w", node, err)
	}
	if len(refs) == 0 {
		return fmt.Errorf("no VM named %s", node)
	}
	for _, ref := range refs {
		if err := s.Destroy(ctx, ref); err != nil {
			return fmt.Errorf("destroying VM %s: %w", node, err)
		}
	}
	return nil
}

// Resources lists the provider's load balancer records with the Service each names.
func (s *Sim) Resources() ([]simcontrol.Resource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	out := []simcontrol.Resource{}
	recs, err := s.TagsInCategory(ctx, LBCategory)
	if err != nil {
		return nil, fmt.Errorf("vsphere-sim: reading load balancer records: %w", err)
	}
	for name, desc := range recs {
		var r struct {
			Service string `json:"s"`
		}
		_ = json.Unmarshal([]byte(desc), &r) // unreadable: Service stays empty, a leak to the harness
		out = append(out, simcontrol.Resource{Kind: "loadbalancer", Name: name, Service: r.Service})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Secrets is the configured password.
func (s *Sim) Secrets() []string { return []string{s.Opts.Password} }
