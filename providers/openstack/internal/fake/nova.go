package fake

import (
	"net/http"
	"regexp"
	"strings"
)

type server struct {
	ID, Name, Status, AZ, FlavorID string
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
	c.servers[id] = &server{ID: id, Name: s.Name, Status: "ACTIVE", AZ: s.AZ, FlavorID: flavorID}
	if s.NetworkID == "" {
		s.NetworkID, s.SubnetID = PrivateNetworkID, PrivateSubnetID
	}
	p := &port{ID: c.nextID("port"), NetworkID: s.NetworkID, DeviceID: id, DeviceOwner: "compute:" + s.AZ}
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
	return id
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
	return map[string]any{"id": s.ID, "name": s.Name, "status": s.Status, "OS-EXT-AZ:availability_zone": s.AZ,
		"flavor": map[string]any{"id": s.FlavorID}, "metadata": map[string]any{}, "addresses": map[string]any{}}
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
