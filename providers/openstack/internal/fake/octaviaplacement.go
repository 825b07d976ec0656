package fake

import "fmt"

// Octavia's create-only settings of a load balancer: its flavor, its availability zone and a
// VIP port the user made. Octavia validates them at POST /loadbalancers (controllers
// load_balancer.py, common/validate.py) and its PUT accepts none of them.

// AddLBFlavor makes an Octavia flavor (not a Nova one) known; a disabled one is refused at
// creation as Octavia refuses it.
func (c *Cloud) AddLBFlavor(id string, enabled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lbFlavors == nil {
		c.lbFlavors = map[string]bool{}
	}
	c.lbFlavors[id] = enabled
}

// AddAvailabilityZone makes an Octavia availability zone known (enabled or not).
func (c *Cloud) AddAvailabilityZone(name string, enabled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lbAZs == nil {
		c.lbAZs = map[string]bool{}
	}
	c.lbAZs[name] = enabled
}

// AddPort makes a Neutron port on a subnet with the given address and no device, as a user
// makes one to give it to a load balancer as its VIP (loadbalancer.openstack.org/port-id).
// deviceID, when set, says the port is in use (a server's, say).
func (c *Cloud) AddPort(subnetID, address, deviceID string, tags ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	sub := c.subnets[subnetID]
	if sub == nil {
		return ""
	}
	p := &port{ID: c.nextID("port"), NetworkID: sub.NetworkID, DeviceID: deviceID, FixedIPs: []fixedIP{{SubnetID: subnetID, IPAddress: address}}, Tags: tags}
	c.ports[p.ID] = p
	return p.ID
}

// Port is a Neutron port as tests see it.
type Port struct {
	ID, NetworkID, DeviceID, DeviceOwner string
	Addresses                            []string
	Revision                             int
}

// GetPort returns port id, or false when Neutron has none.
func (c *Cloud) GetPort(id string) (Port, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.ports[id]
	if p == nil {
		return Port{}, false
	}
	out := Port{ID: p.ID, NetworkID: p.NetworkID, DeviceID: p.DeviceID, DeviceOwner: p.DeviceOwner, Revision: p.Revision}
	for _, f := range p.FixedIPs {
		out.Addresses = append(out.Addresses, f.IPAddress)
	}
	return out, true
}

// checkPlacement is Octavia's validation of flavor_id and availability_zone: each must exist
// and be enabled (400 otherwise). Callers hold c.mu.
func (c *Cloud) checkPlacement(flavorID, az string) string {
	if enabled, ok := c.lbFlavors[flavorID]; flavorID != "" && !ok {
		return "Validation failure: Invalid flavor_id."
	} else if flavorID != "" && !enabled {
		return fmt.Sprintf("The selected flavor is not allowed in this deployment: %s", flavorID)
	}
	if enabled, ok := c.lbAZs[az]; az != "" && !ok {
		return "Validation failure: Invalid availability_zone."
	} else if az != "" && !enabled {
		return fmt.Sprintf("The selected availability_zone is not allowed in this deployment: %s", az)
	}
	return ""
}

// vipPort is Octavia's validation of vip_port_id (with vip_address, if any): the port must
// exist, have no device (validate.check_port_in_use), and hold the address, or hold one
// address when none is asked for. All refusals are 400. Callers hold c.mu.
func (c *Cloud) vipPort(id, address string) (*port, string) {
	if id == "" {
		return nil, ""
	}
	p := c.ports[id]
	switch {
	case p == nil:
		return nil, fmt.Sprintf("Port %s not found.", id)
	case p.DeviceID != "":
		return nil, fmt.Sprintf("Validation failure: Port %s is already used by device %s ", id, p.DeviceID)
	case address == "" && len(p.FixedIPs) != 1:
		return nil, "Validation failure: VIP port's subnet could not be determined. Please specify either a VIP subnet or address."
	case address != "":
		for _, f := range p.FixedIPs {
			if f.IPAddress == address {
				return p, ""
			}
		}
		return nil, "Validation failure: Specified VIP address not found on the specified VIP port."
	}
	return p, ""
}

// nullable is Octavia's JSON of an unset string field: null.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
