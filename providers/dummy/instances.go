package dummy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/metrics"
)

// instances implements cloudprovider.InstancesV2 over the inventory.
type instances struct{ c *Cloud }

var _ cloudprovider.InstancesV2 = instances{}

// InstanceExists is false for a machine the inventory does not hold or marks gone. A Node
// whose providerID is neither dummy:///… nor one the inventory sets (provider-id) belongs to
// another cloud: the inventory not holding it says nothing, so that is an error.
func (i instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	_, in, err := i.lookup(node, "InstanceExists")
	if err == nil && in == nil && !i.ours(node.Spec.ProviderID) {
		return false, fmt.Errorf("node %s has providerID %q, which is not dummy:///<name> nor a provider-id of the inventory; not treating it as gone", node.Name, node.Spec.ProviderID)
	}
	return in != nil, err
}

// ours is whether providerID is empty, of the dummy:/// form, or set by an inventory entry.
func (i instances) ours(providerID string) bool {
	if providerID == "" || strings.HasPrefix(providerID, providerIDPrefix) {
		return true
	}
	inv := i.c.inventory
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	for _, set := range []map[string]*InstanceConfig{inv.fromFile, inv.static} {
		for _, c := range set {
			if c.ProviderID == providerID {
				return true
			}
		}
	}
	return false
}

// InstanceShutdown is true for a machine in state "shutdown".
func (i instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, in, err := i.lookup(node, "InstanceShutdown")
	if err != nil {
		return false, err
	}
	if in == nil {
		return false, cloudprovider.InstanceNotFound
	}
	return strings.EqualFold(in.State, StateShutdown), nil
}

// InstanceMetadata returns what the inventory says of the machine, with the [Global] defaults.
func (i instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	name, in, err := i.lookup(node, "InstanceMetadata")
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	g := i.c.cfg.Global
	md := &cloudprovider.InstanceMetadata{
		ProviderID:   i.c.inventory.providerID(name, in),
		InstanceType: or(in.InstanceType, g.InstanceType),
		Zone:         or(in.Zone, g.Zone),
		Region:       or(in.Region, g.Region),
	}
	md.NodeAddresses = append(md.NodeAddresses, addresses(v1.NodeInternalIP, in.InternalIP)...)
	md.NodeAddresses = append(md.NodeAddresses, addresses(v1.NodeExternalIP, in.ExternalIP)...)
	md.NodeAddresses = append(md.NodeAddresses, v1.NodeAddress{Type: v1.NodeHostName, Address: or(in.Hostname, name)})
	for _, l := range in.Label {
		if k, v, ok := strings.Cut(l, "="); ok {
			if md.AdditionalLabels == nil {
				md.AdditionalLabels = map[string]string{}
			}
			md.AdditionalLabels[k] = v
		}
	}
	return md, nil
}

// errLookup is what an instance in state "error" answers: a stand-in for a cloud API outage.
var errLookup = errors.New("dummy: instance look-up failed (state = error in the inventory)")

// lookup asks the inventory, counted like a cloud API call so that "cloud calls per node" is
// measured the same way for every provider.
func (i instances) lookup(node *v1.Node, op string) (string, *InstanceConfig, error) {
	start := time.Now()
	name, in := i.c.inventory.find(node)
	if in != nil && strings.EqualFold(in.State, StateError) {
		metrics.ObserveCloudCall(ProviderName, "inventory", op, start, metrics.ResultError)
		return name, nil, errLookup
	}
	metrics.ObserveCloudCall(ProviderName, "inventory", op, start, metrics.ResultOK)
	return name, in, nil
}

func addresses(t v1.NodeAddressType, ips []string) []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil { // validated at load; never trust twice
			out = append(out, v1.NodeAddress{Type: t, Address: a.String()})
		}
	}
	return out
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
