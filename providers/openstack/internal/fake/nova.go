package fake

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

type server struct {
	ID, Name, Status, AZ, FlavorID string
	AccessIPv4, AccessIPv6         string
	Metadata                       map[string]string
	// failWith, when set, is the status every GET of this server answers (a broken cell).
	failWith int
}

// ServerSpec describes a machine to add.
type ServerSpec struct {
	Name   string
	AZ     string   // default "nova"
	Flavor string   // flavor name, default m1.small
	IPs    []string // fixed IPs of its port on the private network (v4 and/or v6)
	// FloatingIP, when set, is associated with the server's port.
	FloatingIP string
	// NetworkID and SubnetID place its port; default the private network and subnet.
	NetworkID, SubnetID string
	// AccessIPv4/AccessIPv6 are Nova's accessIPv4/accessIPv6 fields; Metadata its user
	// metadata (e.g. "hostname", which the upstream CCM reports as the Node's Hostname).
	AccessIPv4, AccessIPv6 string
	Metadata               map[string]string
	// PortStatus is Neutron's status of its port; default ACTIVE.
	PortStatus string
}

// AddServer creates an ACTIVE server with one port and returns its ID.
func (c *Cloud) AddServer(s ServerSpec) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.AZ == "" {
		s.AZ = "nova"
	}
	if s.Flavor == "" {
		s.Flavor = "m1.small"
	}
	flavorID := ""
	for id, n := range c.flavors {
		if n == s.Flavor {
			flavorID = id
		}
	}
	if flavorID == "" {
		flavorID = c.nextID("flavor")
		c.flavors[flavorID] = s.Flavor
	}
	id := c.nextID("server")
	c.servers[id] = &server{ID: id, Name: s.Name, Status: "ACTIVE", AZ: s.AZ, FlavorID: flavorID,
		AccessIPv4: s.AccessIPv4, AccessIPv6: s.AccessIPv6, Metadata: s.Metadata}
	c.addPort(id, PortSpec{NetworkID: s.NetworkID, SubnetID: s.SubnetID, IPs: s.IPs, FloatingIP: s.FloatingIP, Status: s.PortStatus})
	return id
}

// PortSpec describes another interface of a server.
type PortSpec struct {
	NetworkID, SubnetID string   // default the private network and subnet
	IPs                 []string // fixed IPs
	FloatingIP          string   // associated with the first fixed IP
	Status              string   // Neutron's port status, default ACTIVE
}

// AddServerPort attaches another port to server id and returns the port's ID.
func (c *Cloud) AddServerPort(serverID string, p PortSpec) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addPort(serverID, p).ID
}

// addPort creates a port of server serverID. Callers hold c.mu.
func (c *Cloud) addPort(serverID string, s PortSpec) *port {
	if s.NetworkID == "" {
		s.NetworkID, s.SubnetID = PrivateNetworkID, PrivateSubnetID
	}
	az := "nova"
	if srv := c.servers[serverID]; srv != nil {
		az = srv.AZ
	}
	p := &port{ID: c.nextID("port"), NetworkID: s.NetworkID, DeviceID: serverID, DeviceOwner: "compute:" + az, Status: s.Status}
	for _, ip := range s.IPs {
		sub := s.SubnetID
		if s.NetworkID == PrivateNetworkID && strings.Contains(ip, ":") {
			sub = PrivateSubnetV6ID
		}
		p.FixedIPs = append(p.FixedIPs, fixedIP{SubnetID: sub, IPAddress: ip})
	}
	c.ports[p.ID] = p
	if s.FloatingIP != "" && len(s.IPs) > 0 {
		f := &floatingIP{ID: c.nextID("fip"), FloatingIP: s.FloatingIP, NetworkID: PublicNetworkID, PortID: p.ID, FixedIP: s.IPs[0], Status: "ACTIVE"}
		c.fips[f.ID] = f
	}
	return p
}

// SetPortStatus sets a port's Neutron status (ACTIVE, DOWN, BUILD...).
func (c *Cloud) SetPortStatus(portID, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.ports[portID]; p != nil {
		p.Status = status
	}
}

// AddTrunkSubport makes port parentID the parent of a trunk (if it is not yet) and adds a
// VLAN subport on networkID/subnetID with ips; returns the subport's ID. As in Neutron, the
// subport belongs to the trunk (device_id), so Nova's server addresses do not list it.
func (c *Cloud) AddTrunkSubport(parentID, networkID, subnetID string, ips []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent := c.ports[parentID]
	if parent == nil {
		return ""
	}
	if parent.TrunkID == "" {
		parent.TrunkID = c.nextID("trunk")
	}
	sp := &port{ID: c.nextID("port"), NetworkID: networkID, DeviceID: parent.TrunkID, DeviceOwner: "trunk:subport"}
	for _, ip := range ips {
		sp.FixedIPs = append(sp.FixedIPs, fixedIP{SubnetID: subnetID, IPAddress: ip})
	}
	c.ports[sp.ID] = sp
	parent.SubPorts = append(parent.SubPorts, sp.ID)
	return sp.ID
}

// SetServerStatus sets a server's Nova status (ACTIVE, SHUTOFF, ERROR...).
func (c *Cloud) SetServerStatus(id, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.servers[id]; s != nil {
		s.Status = status
	}
}

// FailServer makes GETs of this one server answer status (0 heals it), as when the Nova cell
// holding it is down while the rest of the cloud answers.
func (c *Cloud) FailServer(id string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.servers[id]; s != nil {
		s.failWith = status
	}
}

// DeleteServer removes a server and its ports.
func (c *Cloud) DeleteServer(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.servers, id)
	for pid, p := range c.ports {
		if p.DeviceID == id {
			for _, sp := range p.SubPorts {
				delete(c.ports, sp)
			}
			delete(c.ports, pid)
		}
	}
}

// ServerID returns the ID of the server named name ("" if none).
func (c *Cloud) ServerID(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range c.servers {
		if s.Name == name {
			return id
		}
	}
	return ""
}

func (c *Cloud) novaRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /compute/v2.1/servers/detail", c.op("nova.ListServers", c.listServers))
	m.HandleFunc("GET /compute/v2.1/servers/{id}", c.op("nova.GetServer", c.getServer))
	m.HandleFunc("GET /compute/v2.1/flavors/{id}", c.op("nova.GetFlavor", c.getFlavor))
}

func (c *Cloud) serverJSON(s *server) map[string]any {
	md := map[string]string{}
	for k, v := range s.Metadata {
		md[k] = v
	}
	return map[string]any{"id": s.ID, "name": s.Name, "status": s.Status, "OS-EXT-AZ:availability_zone": s.AZ,
		"flavor": map[string]any{"id": s.FlavorID}, "metadata": md, "addresses": c.serverAddresses(s.ID),
		"accessIPv4": s.AccessIPv4, "accessIPv6": s.AccessIPv6}
}

// serverAddresses is Nova's "addresses": by network name, the fixed IPs of the server's ports
// on that network (in attach order, whatever the port's status), then the floating IPs on
// them, as Nova's network info cache gives them. Trunk subports are not there.
func (c *Cloud) serverAddresses(serverID string) map[string]any {
	type entry = map[string]any
	fixed, floating := map[string][]entry{}, map[string][]entry{}
	var order []string
	for _, p := range c.sortedPorts() {
		if p.DeviceID != serverID {
			continue
		}
		label := p.NetworkID
		if n := c.networks[p.NetworkID]; n != nil {
			label = n.Name
		}
		if _, ok := fixed[label]; !ok {
			order = append(order, label)
			fixed[label] = []entry{}
		}
		mac := macOf(p.ID)
		for _, ip := range p.FixedIPs {
			fixed[label] = append(fixed[label], entry{"addr": ip.IPAddress, "version": ipVersion(ip.IPAddress),
				"OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": mac})
		}
		for _, f := range c.sortedFIPs() {
			if f.PortID == p.ID {
				floating[label] = append(floating[label], entry{"addr": f.FloatingIP, "version": ipVersion(f.FloatingIP),
					"OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": mac})
			}
		}
	}
	out := map[string]any{}
	for _, label := range order {
		out[label] = append(fixed[label], floating[label]...)
	}
	return out
}

func ipVersion(ip string) int {
	if strings.Contains(ip, ":") {
		return 6
	}
	return 4
}

// macOf is a stable MAC address for a port.
func macOf(portID string) string {
	var h uint32
	for _, b := range []byte(portID) {
		h = h*31 + uint32(b)
	}
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(h>>16), byte(h>>8), byte(h))
}

// listServers filters by name as Nova does: a regular expression.
func (c *Cloud) listServers(w http.ResponseWriter, r *http.Request) {
	var re *regexp.Regexp
	if n := r.URL.Query().Get("name"); n != "" {
		var err error
		if re, err = regexp.Compile(n); err != nil {
			writeErr(w, http.StatusBadRequest, "invalid name filter")
			return
		}
	}
	out := []any{}
	for _, s := range c.servers {
		if re == nil || re.MatchString(s.Name) {
			out = append(out, c.serverJSON(s))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": out})
}

func (c *Cloud) getServer(w http.ResponseWriter, r *http.Request) {
	s := c.servers[r.PathValue("id")]
	if s == nil {
		writeErr(w, http.StatusNotFound, "Instance could not be found.")
		return
	}
	if s.failWith != 0 {
		writeErr(w, s.failWith, "injected fault for this server")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": c.serverJSON(s)})
}

func (c *Cloud) getFlavor(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	name, ok := c.flavors[id]
	if !ok {
		writeErr(w, http.StatusNotFound, "Flavor could not be found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flavor": map[string]any{"id": id, "name": name, "vcpus": 2, "ram": 2048, "disk": 20}})
}
