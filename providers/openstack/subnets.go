package openstack

import (
	"context"
	"fmt"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
)

// subnetCache maps "subnetID|networkID|family" to the subnet to use: subnets do not change
// family or network, so each is resolved once per process.
var (
	subnetCache sync.Map
	// subnetMu makes concurrent first look-ups of one subnet wait for one call.
	subnetMu sync.Mutex
)

// noFamilySubnetError: the network has no subnet of the IP family asked for.
type noFamilySubnetError struct {
	network string
	family  v1.IPFamily
}

func (e *noFamilySubnetError) Error() string {
	return fmt.Sprintf("network %s has no IPv%d subnet for the %s load balancer", e.network, ipVersion(e.family), e.family)
}

func ipVersion(f v1.IPFamily) int {
	if f == v1.IPv6Protocol {
		return 6
	}
	return 4
}

// familySubnet returns the subnet of family to use given a configured subnet and/or network:
// the subnet itself if it is of that family, else a subnet of that family on its network (or
// on networkID). This is how one cloud.conf serves both families of a dual-stack Service.
func familySubnet(ctx context.Context, cl *clients, subnetID, networkID string, family v1.IPFamily) (string, error) {
	key := subnetID + "|" + networkID + "|" + string(family)
	if v, ok := subnetCache.Load(key); ok {
		return v.(string), nil
	}
	subnetMu.Lock()
	defer subnetMu.Unlock()
	if v, ok := subnetCache.Load(key); ok {
		return v.(string), nil
	}
	want := ipVersion(family)
	if subnetID != "" {
		s, err := subnets.Get(ctx, cl.network, subnetID).Extract()
		if err != nil {
			return "", fmt.Errorf("getting subnet %s: %w", subnetID, err)
		}
		if s.IPVersion == want {
			subnetCache.Store(key, s.ID)
			return s.ID, nil
		}
		networkID = s.NetworkID
	}
	if networkID == "" {
		return "", fmt.Errorf("no %s subnet configured", family)
	}
	pages, err := subnets.List(cl.network, subnets.ListOpts{NetworkID: networkID, IPVersion: want}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("listing subnets of network %s: %w", networkID, err)
	}
	all, err := subnets.ExtractSubnets(pages)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", &noFamilySubnetError{networkID, family}
	}
	subnetCache.Store(key, all[0].ID)
	return all[0].ID, nil
}
