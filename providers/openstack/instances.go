package openstack

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// providerIDPrefix is the upstream form, openstack:///<server-id>.
const providerIDPrefix = "openstack:///"

// regionalProviderIDEnv set to "true" (exactly, as upstream reads it) gives new Nodes the
// regional form openstack://<region>/<server-id>, for clusters that span regions.
const regionalProviderIDEnv = "OS_CCM_REGIONAL"

// providerID is the providerID of server s for node: the one the Node has, if it names s (a
// Node's providerID never changes, so a cluster that switched forms keeps each Node's), else
// the regional or the plain form.
func (i *instances) providerID(node *v1.Node, s *servers.Server) string {
	if id, err := serverID(node.Spec.ProviderID); err == nil && id == s.ID {
		return node.Spec.ProviderID
	}
	if i.c.regionalIDs && i.c.cfg.Global.Region != "" {
		return "openstack://" + i.c.cfg.Global.Region + "/" + s.ID
	}
	return providerIDPrefix + s.ID
}

// instances implements cloudprovider.InstancesV2 over Nova and Neutron.
type instances struct {
	c *Cloud
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

// flavorNames caches flavor ID -> name: flavors never change, so one look-up each per process.
var flavorNames sync.Map

// serverID returns the server ID in a providerID: openstack:///<id> or openstack://<region>/<id>.
func serverID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "openstack://")
	if !ok {
		return "", fmt.Errorf("providerID %q is not an OpenStack one (openstack:///<server-id>)", providerID)
	}
	_, id, _ := strings.Cut(rest, "/")
	if id == "" || strings.Contains(id, "/") {
		return "", fmt.Errorf("providerID %q has no server ID", providerID)
	}
	return id, nil
}

// sameRegion is an error when node says it is in another region than region (the region of
// an openstack://<region>/<id> providerID, or the Node's region labels): Nova in one region
// answers 404 for every server of another, which says nothing about the Node's server.
func sameRegion(node *v1.Node, region string) error {
	if region == "" {
		return nil
	}
	claims := map[string]string{}
	if rest, ok := strings.CutPrefix(node.Spec.ProviderID, "openstack://"); ok {
		if r, _, _ := strings.Cut(rest, "/"); r != "" {
			claims["providerID"] = r
		}
	}
	for _, l := range []string{v1.LabelTopologyRegion, v1.LabelFailureDomainBetaRegion} {
		if r := node.Labels[l]; r != "" {
			claims["label "+l] = r
		}
	}
	for what, r := range claims {
		if r != region {
			return fmt.Errorf("node %q is in region %q by its %s, not in the configured %q; not looking it up there", node.Name, r, what, region)
		}
	}
	return nil
}

// server finds the Node's server: by providerID when set, else by exact name. (nil, nil) is
// an authoritative "no such server" (404, or no match); any failed call is an error.
func (i *instances) server(ctx context.Context, node *v1.Node) (*servers.Server, error) {
	cl, err := i.c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	if err := sameRegion(node, i.c.cfg.Global.Region); err != nil {
		return nil, err
	}
	if node.Spec.ProviderID != "" {
		id, err := serverID(node.Spec.ProviderID)
		if err != nil {
			return nil, err
		}
		s, err := servers.Get(ctx, cl.compute, id).Extract()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("getting server %s: %w", id, err)
		}
		return s, nil
	}
	// Nova filters names by regular expression: anchor and quote for an exact match.
	pages, err := servers.List(cl.compute, servers.ListOpts{Name: "^" + regexp.QuoteMeta(node.Name) + "$"}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing servers named %q: %w", node.Name, err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil {
		return nil, err
	}
	var found []servers.Server
	for _, s := range all {
		if s.Name == node.Name {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	default:
		return nil, fmt.Errorf("%d servers are named %q; set the Node's providerID", len(found), node.Name)
	}
}

// InstanceExists is false only when Nova says the server is gone.
func (i *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	s, err := i.server(ctx, node)
	return s != nil, err
}

// InstanceShutdown is true for a SHUTOFF server.
func (i *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	s, err := i.server(ctx, node)
	if err != nil {
		return false, err
	}
	if s == nil {
		return false, cloudprovider.InstanceNotFound
	}
	return s.Status == "SHUTOFF", nil
}

// InstanceMetadata returns providerID, flavor, zone, region and the server's addresses as the
// upstream CCM reports them (nodeaddresses.go).
func (i *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	s, err := i.server(ctx, node)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	cl, err := i.c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	flavor, err := flavorName(ctx, cl, s)
	if err != nil {
		return nil, err
	}
	addrs, err := i.serverAddresses(ctx, cl, s)
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    i.providerID(node, s),
		InstanceType:  flavor,
		Zone:          s.AvailabilityZone,
		Region:        i.c.cfg.Global.Region,
		NodeAddresses: addrs,
	}, nil
}

// flavorName prefers the name Nova embeds (microversion 2.47+), else looks the ID up once.
func flavorName(ctx context.Context, cl *clients, s *servers.Server) (string, error) {
	if n, ok := s.Flavor["original_name"].(string); ok && n != "" {
		return n, nil
	}
	id, _ := s.Flavor["id"].(string)
	if id == "" {
		return "", nil
	}
	if n, ok := flavorNames.Load(id); ok {
		return n.(string), nil
	}
	f, err := flavors.Get(ctx, cl.compute, id).Extract()
	if err != nil {
		return "", fmt.Errorf("getting flavor %s: %w", id, err)
	}
	flavorNames.Store(id, f.Name)
	return f.Name, nil
}
