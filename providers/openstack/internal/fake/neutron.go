package fake

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type network struct {
	ID, Name string
	External bool
}

type subnet struct {
	ID, NetworkID, CIDR string
	IPVersion           int
	// Name ("" lists as the ID, as before) and Tags: what floating IP subnet selection reads.
	Name string
	Tags []string
}

type fixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

type port struct {
	ID, NetworkID, DeviceID, DeviceOwner string
	FixedIPs                             []fixedIP
	SecurityGroups                       []string
	// Revision is Neutron's revision_number: every update bumps it, and an update with
	// "If-Match: revision_number=N" for another N is refused with 412.
	Revision int
	// Status is Neutron's port status; "" is ACTIVE.
	Status string
	// TrunkID and SubPorts: the trunk this port is the parent of, and its subports' IDs.
	TrunkID  string
	SubPorts []string
	// Tags are the port's Neutron tags (an operator's, or ownership tags given by hand).
	Tags []string
	// NoPortSecurity is port_security_enabled false (Neutron's default is true): such a port
	// takes no security groups (SetPortSecurity, updatePort).
	NoPortSecurity bool
	// AllowedAddressPairs are the other sources the port's anti-spoofing lets through (a pod
	// CIDR routed to the node, a VIP held by keepalived); each stored with its MAC filled in.
	AllowedAddressPairs []AddressPair
}

// AddressPair is one of a port's allowed address pairs: IPAddress is an address or a CIDR,
// MACAddress the source MAC allowed with it (the port's own when the request named none).
type AddressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address"`
}

// sortedPorts are the ports by ID (creation order), as Neutron lists by primary key.
// Callers hold c.mu.
func (c *Cloud) sortedPorts() []*port {
	out := make([]*port, 0, len(c.ports))
	for _, p := range c.ports {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// sortedFIPs are the floating IPs by ID. Callers hold c.mu.
func (c *Cloud) sortedFIPs() []*floatingIP {
	out := make([]*floatingIP, 0, len(c.fips))
	for _, f := range c.fips {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

type floatingIP struct {
	ID, FloatingIP, NetworkID, PortID, FixedIP, Description, Status string
	// SubnetID is the subnet the address was allocated from when the create named one
	// (Neutron does not show it; tests read it through FloatingIPs).
	SubnetID string
}

// FloatingIP is a floating IP as tests see it.
type FloatingIP struct {
	ID, Address, PortID, Description, NetworkID, SubnetID string
}

// FloatingIPs lists the floating IPs.
func (c *Cloud) FloatingIPs() []FloatingIP {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []FloatingIP
	for _, f := range c.fips {
		out = append(out, FloatingIP{ID: f.ID, Address: f.FloatingIP, PortID: f.PortID, Description: f.Description, NetworkID: f.NetworkID, SubnetID: f.SubnetID})
	}
	return out
}

// AddFloatingIP allocates an unassociated floating IP, as a user would outside Kubernetes.
func (c *Cloud) AddFloatingIP(address string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &floatingIP{ID: c.nextID("fip"), FloatingIP: address, NetworkID: PublicNetworkID, Status: "DOWN"}
	c.fips[f.ID] = f
	return f.ID
}

// AssociateFloatingIP associates floating IP fipID with the VIP port of load balancer lbID,
// as a user would.
func (c *Cloud) AssociateFloatingIP(fipID, lbID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, lb := c.fips[fipID], c.lbs[lbID]
	if f == nil || lb == nil {
		return
	}
	f.PortID, f.FixedIP, f.Status = lb.VipPortID, lb.VipAddress, "ACTIVE"
}

// AddNetwork creates a tenant network with one subnet (external if external), as an
// operator or another tool would, and returns their IDs.
func (c *Cloud) AddNetwork(name, cidr string, external bool) (networkID, subnetID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := &network{ID: c.nextID("net"), Name: name, External: external}
	c.networks[n.ID] = n
	version := 4
	if strings.Contains(cidr, ":") {
		version = 6
	}
	s := &subnet{ID: c.nextID("subnet"), NetworkID: n.ID, CIDR: cidr, IPVersion: version}
	c.subnets[s.ID] = s
	return n.ID, s.ID
}

// AddSubnet adds a named, tagged subnet to network networkID (a floating network's second
// pool, say), as an operator would, and returns its ID.
func (c *Cloud) AddSubnet(networkID, name, cidr string, tags ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	version := 4
	if strings.Contains(cidr, ":") {
		version = 6
	}
	s := &subnet{ID: c.nextID("subnet"), NetworkID: networkID, CIDR: cidr, IPVersion: version, Name: name, Tags: tags}
	c.subnets[s.ID] = s
	return s.ID
}

func (c *Cloud) neutronRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /network/v2.0/ports", c.op("neutron.ListPorts", c.listPorts))
	m.HandleFunc("GET /network/v2.0/ports/{id}", c.op("neutron.GetPort", c.getPort))
	m.HandleFunc("PUT /network/v2.0/ports/{id}", c.op("neutron.UpdatePort", c.updatePort))
	c.securityGroupRoutes(m)
	c.routerEndpoints(m)
	m.HandleFunc("GET /network/v2.0/networks", c.op("neutron.ListNetworks", c.listNetworks))
	m.HandleFunc("GET /network/v2.0/subnets", c.op("neutron.ListSubnets", c.listSubnets))
	m.HandleFunc("GET /network/v2.0/subnets/{id}", c.op("neutron.GetSubnet", c.getSubnet))
	m.HandleFunc("GET /network/v2.0/floatingips", c.op("neutron.ListFloatingIPs", c.listFIPs))
	m.HandleFunc("POST /network/v2.0/floatingips", c.op("neutron.CreateFloatingIP", c.createFIP))
	m.HandleFunc("PUT /network/v2.0/floatingips/{id}", c.op("neutron.UpdateFloatingIP", c.updateFIP))
	m.HandleFunc("DELETE /network/v2.0/floatingips/{id}", c.op("neutron.DeleteFloatingIP", c.deleteFIP))
}

func (c *Cloud) listPorts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []any{}
	for _, p := range c.sortedPorts() {
		if v := q.Get("device_id"); v != "" && v != p.DeviceID {
			continue
		}
		if ids := q["id"]; len(ids) > 0 && !slices.Contains(ids, p.ID) { // repeated: any of them
			continue
		}
		if v := q.Get("network_id"); v != "" && v != p.NetworkID {
			continue
		}
		if !portMatches(p, q["fixed_ips"], q["security_groups"]) {
			continue
		}
		out = append(out, portJSON(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"ports": out})
}

// portMatches applies Neutron's fixed_ips=ip_address=X / subnet_id=Y and security_groups=ID
// filters (every one given must match).
func portMatches(p *port, fixed, sgs []string) bool {
	for _, f := range fixed {
		k, v, _ := strings.Cut(f, "=")
		if !slices.ContainsFunc(p.FixedIPs, func(ip fixedIP) bool {
			return (k == "ip_address" && ip.IPAddress == v) || (k == "subnet_id" && ip.SubnetID == v)
		}) {
			return false
		}
	}
	for _, g := range sgs {
		if !slices.Contains(p.SecurityGroups, g) {
			return false
		}
	}
	return true
}

func portJSON(p *port) map[string]any {
	ips := p.FixedIPs
	if ips == nil {
		ips = []fixedIP{}
	}
	sgs := p.SecurityGroups
	if sgs == nil {
		sgs = []string{}
	}
	status := p.Status
	if status == "" {
		status = "ACTIVE"
	}
	out := map[string]any{"id": p.ID, "network_id": p.NetworkID, "device_id": p.DeviceID,
		"device_owner": p.DeviceOwner, "fixed_ips": ips, "security_groups": sgs, "status": status, "admin_state_up": true,
		"revision_number": p.Revision, "mac_address": macOf(p.ID), "tags": append([]string{}, p.Tags...),
		"port_security_enabled": !p.NoPortSecurity, "allowed_address_pairs": withPortMAC(p, p.AllowedAddressPairs)}
	if p.TrunkID != "" {
		subs := []any{}
		for i, id := range p.SubPorts {
			subs = append(subs, map[string]any{"port_id": id, "segmentation_type": "vlan", "segmentation_id": 100 + i, "mac_address": macOf(id)})
		}
		out["trunk_details"] = map[string]any{"trunk_id": p.TrunkID, "sub_ports": subs}
	}
	return out
}

func (c *Cloud) getPort(w http.ResponseWriter, r *http.Request) {
	p := c.ports[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Port %s could not be found.", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"port": portJSON(p)})
}

// BeforeNextPortUpdate makes another writer change the next updated port's security groups
// (to change(current)) just before the update is served: between the ccm's read and its write.
func (c *Cloud) BeforeNextPortUpdate(change func(groups []string) []string) {
	c.mu.Lock()
	c.beforePortUpdate = change
	c.mu.Unlock()
}

// setPortGroups changes a port's groups as a user would, bumping its revision. Callers hold c.mu.
func (c *Cloud) setPortGroups(p *port, groups []string) {
	p.SecurityGroups = slices.Clone(groups)
	p.Revision++
}

// ifMatchRefused applies Neutron's compare-and-swap: an "If-Match: revision_number=N" header
// for another N than revision is answered 412 (400 when unreadable). It returns the status
// written, 0 when the request may go on.
func ifMatchRefused(w http.ResponseWriter, r *http.Request, revision int) int {
	m := r.Header.Get("If-Match")
	if m == "" {
		return 0
	}
	v, ok := strings.CutPrefix(m, "revision_number=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		writeErr(w, http.StatusBadRequest, "Invalid If-Match header")
		return http.StatusBadRequest
	}
	if n != revision {
		writeErr(w, http.StatusPreconditionFailed, fmt.Sprintf("Constrained to %s, but current revision is %d", m, revision))
		return http.StatusPreconditionFailed
	}
	return 0
}

// updatePort is PUT /ports/{id}; security_groups and allowed_address_pairs are supported (the
// provider's uses). Everything is checked before anything changes, and one update is one
// revision.
func (c *Cloud) updatePort(w http.ResponseWriter, r *http.Request) {
	p := c.ports[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Port %s could not be found.", r.PathValue("id")))
		return
	}
	if change := c.beforePortUpdate; change != nil {
		c.beforePortUpdate = nil
		c.setPortGroups(p, change(slices.Clone(p.SecurityGroups)))
	}
	if st := ifMatchRefused(w, r, p.Revision); st != 0 {
		if st == http.StatusPreconditionFailed {
			c.preconditionFailed++
		}
		return
	}
	var b struct {
		Port struct {
			SecurityGroups      *[]string      `json:"security_groups"`
			AllowedAddressPairs *[]AddressPair `json:"allowed_address_pairs"`
		} `json:"port"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	groups, pairs := b.Port.SecurityGroups, b.Port.AllowedAddressPairs
	var checked []AddressPair
	if pairs != nil {
		// The pairs' format is the API's check, before the plugin looks at groups.
		var f *refusal
		if checked, f = checkAddressPairs(p, *pairs); f != nil {
			f.write(w)
			return
		}
	}
	if groups != nil {
		if p.NoPortSecurity && len(*groups) > 0 {
			// Neutron's portsecurity extension (an InvalidInput, so 400).
			writeNeutronErr(w, http.StatusBadRequest, "PortSecurityAndIPRequiredForSecurityGroups",
				"Port security must be enabled and port must have an IP address in order to use security groups.")
			return
		}
		for _, g := range *groups {
			if c.sgs[g] == nil {
				writeErr(w, http.StatusNotFound, fmt.Sprintf("Security group %s does not exist", g))
				return
			}
		}
	}
	if pairs != nil && p.NoPortSecurity && len(checked) > 0 {
		writeNeutronErr(w, http.StatusConflict, "AddressPairAndPortSecurityRequired",
			"Port Security must be enabled in order to have allowed address pairs on a port.")
		return
	}
	if groups != nil {
		p.SecurityGroups = slices.Clone(*groups)
	}
	if pairs != nil {
		p.AllowedAddressPairs = checked
	}
	if groups != nil || pairs != nil {
		p.Revision++
	}
	writeJSON(w, http.StatusOK, map[string]any{"port": portJSON(p)})
}

// checkAddressPairs is the API's check of a port's new allowed address pairs: each needs an
// ip_address that is an address or a CIDR, a mac_address (if any) that is a MAC, and no pair
// may come twice. The pairs come back with the port's MAC where they named none, as stored.
func checkAddressPairs(p *port, in []AddressPair) ([]AddressPair, *refusal) {
	out := make([]AddressPair, 0, len(in))
	for _, ap := range in {
		if ap.IPAddress == "" {
			return nil, &refusal{http.StatusBadRequest, "AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address"}
		}
		if ap.MACAddress != "" {
			if hw, err := net.ParseMAC(ap.MACAddress); err != nil || len(hw) != 6 {
				return nil, invalidInput("allowed_address_pairs", fmt.Sprintf("'%s' is not a valid MAC address", ap.MACAddress))
			}
		}
		ap = withPortMAC(p, []AddressPair{ap})[0]
		if slices.Contains(out, ap) {
			return nil, &refusal{http.StatusBadRequest, "DuplicateAddressPairInRequest",
				fmt.Sprintf("Request contains duplicate address pair: mac_address %s ip_address %s.", ap.MACAddress, ap.IPAddress)}
		}
		if !isAddrOrPrefix(ap.IPAddress) {
			return nil, invalidInput("allowed_address_pairs", fmt.Sprintf("'%s' is neither a valid IP address, nor is it a valid IP subnet", ap.IPAddress))
		}
		out = append(out, ap)
	}
	return out, nil
}

// isAddrOrPrefix: s is an IP address, or an address with a prefix length.
func isAddrOrPrefix(s string) bool {
	if strings.Contains(s, "/") {
		_, err := netip.ParsePrefix(s)
		return err == nil
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// withPortMAC is a copy of pairs (never nil) with p's MAC where a pair has none, as Neutron
// shows and stores them.
func withPortMAC(p *port, pairs []AddressPair) []AddressPair {
	out := make([]AddressPair, len(pairs))
	for i, ap := range pairs {
		if ap.MACAddress == "" {
			ap.MACAddress = macOf(p.ID)
		}
		out[i] = ap
	}
	return out
}

// PortAddressPairs are a port's allowed address pairs as Neutron shows them (nil for no port).
func (c *Cloud) PortAddressPairs(portID string) []AddressPair {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.ports[portID]; p != nil {
		return withPortMAC(p, p.AllowedAddressPairs)
	}
	return nil
}

// SetPortAddressPairs replaces a port's allowed address pairs, as an operator would, without
// the API's checks; a pair without a MAC gets the port's. It bumps the port's revision.
func (c *Cloud) SetPortAddressPairs(portID string, pairs []AddressPair) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.ports[portID]; p != nil {
		p.AllowedAddressPairs = withPortMAC(p, pairs)
		p.Revision++
	}
}

func (c *Cloud) listNetworks(w http.ResponseWriter, r *http.Request) {
	ext := r.URL.Query().Get("router:external")
	only := r.URL.Query()["id"] // repeated: any of them
	out := []any{}
	ids := make([]string, 0, len(c.networks))
	for id := range c.networks {
		ids = append(ids, id)
	}
	sort.Strings(ids) // Neutron lists by its primary key when no sort is asked for
	for _, id := range ids {
		n := c.networks[id]
		if ext != "" && (ext == "true") != n.External {
			continue
		}
		if len(only) > 0 && !slices.Contains(only, n.ID) {
			continue
		}
		var subnets []string
		for _, s := range c.subnets {
			if s.NetworkID == n.ID {
				subnets = append(subnets, s.ID)
			}
		}
		out = append(out, map[string]any{"id": n.ID, "name": n.Name, "router:external": n.External, "subnets": subnets, "status": "ACTIVE"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"networks": out})
}

func subnetJSON(s *subnet) map[string]any {
	name := s.Name
	if name == "" {
		name = s.ID
	}
	tags := append([]string{}, s.Tags...)
	return map[string]any{"id": s.ID, "network_id": s.NetworkID, "cidr": s.CIDR, "ip_version": s.IPVersion, "name": name, "tags": tags}
}

// tagFilterMatches applies Neutron's four tag filters (comma-separated values): tags, all
// present; tags-any, one present; not-tags, not all present; not-tags-any, none present.
func tagFilterMatches(q url.Values, have []string) bool {
	for _, param := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		v := q.Get(param)
		if v == "" {
			continue
		}
		n := 0
		want := strings.Split(v, ",")
		for _, t := range want {
			if slices.Contains(have, t) {
				n++
			}
		}
		all, some := n == len(want), n > 0
		if (param == "tags" && !all) || (param == "tags-any" && !some) || (param == "not-tags" && all) || (param == "not-tags-any" && some) {
			return false
		}
	}
	return true
}

func (c *Cloud) listSubnets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []any{}
	ids := make([]string, 0, len(c.subnets))
	for id := range c.subnets {
		ids = append(ids, id)
	}
	sort.Strings(ids) // Neutron lists by its primary key when no sort is asked for
	for _, id := range ids {
		s := c.subnets[id]
		if v := q.Get("network_id"); v != "" && v != s.NetworkID {
			continue
		}
		if v := q.Get("ip_version"); v != "" && v != fmt.Sprint(s.IPVersion) {
			continue
		}
		if !tagFilterMatches(q, s.Tags) {
			continue
		}
		out = append(out, subnetJSON(s))
	}
	writeJSON(w, http.StatusOK, map[string]any{"subnets": out})
}

func (c *Cloud) getSubnet(w http.ResponseWriter, r *http.Request) {
	s := c.subnets[r.PathValue("id")]
	if s == nil {
		writeErr(w, http.StatusNotFound, "Subnet could not be found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subnet": subnetJSON(s)})
}

func fipJSON(f *floatingIP) map[string]any {
	var portID, fixed any
	if f.PortID != "" {
		portID, fixed = f.PortID, f.FixedIP
	}
	return map[string]any{"id": f.ID, "floating_ip_address": f.FloatingIP, "floating_network_id": f.NetworkID,
		"port_id": portID, "fixed_ip_address": fixed, "description": f.Description, "status": f.Status}
}

func (c *Cloud) listFIPs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []any{}
	for _, f := range c.fips {
		if v := q.Get("port_id"); v != "" && v != f.PortID {
			continue
		}
		if v := q.Get("floating_ip_address"); v != "" && v != f.FloatingIP {
			continue
		}
		if v := q.Get("description"); v != "" && v != f.Description {
			continue
		}
		out = append(out, fipJSON(f))
	}
	writeJSON(w, http.StatusOK, map[string]any{"floatingips": out})
}

type fipBody struct {
	FloatingIP struct {
		NetworkID   string  `json:"floating_network_id"`
		SubnetID    string  `json:"subnet_id"`
		Address     string  `json:"floating_ip_address"`
		PortID      *string `json:"port_id"`
		Description *string `json:"description"`
	} `json:"floatingip"`
}

// fixedOf is the first fixed IP of port id, or an error message.
func (c *Cloud) fixedOf(id string) (string, string) {
	p := c.ports[id]
	if p == nil {
		return "", fmt.Sprintf("Port %s could not be found.", id)
	}
	if len(p.FixedIPs) == 0 {
		return "", "port has no fixed IP"
	}
	return p.FixedIPs[0].IPAddress, ""
}

func (c *Cloud) createFIP(w http.ResponseWriter, r *http.Request) {
	var b fipBody
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	n := c.networks[b.FloatingIP.NetworkID]
	if n == nil || !n.External {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("External network %s could not be found.", b.FloatingIP.NetworkID))
		return
	}
	addr := b.FloatingIP.Address
	for _, f := range c.fips {
		if addr != "" && f.FloatingIP == addr {
			writeErr(w, http.StatusConflict, "IP address already allocated")
			return
		}
	}
	var sub *subnet
	if id := b.FloatingIP.SubnetID; id != "" {
		// As Neutron: the subnet must exist and be on the floating network; the address comes
		// from it (or, asked for, must be in it), and a full subnet is a 409.
		if sub = c.subnets[id]; sub == nil {
			writeErr(w, http.StatusNotFound, fmt.Sprintf("Subnet %s could not be found.", id))
			return
		}
		if sub.NetworkID != n.ID {
			writeErr(w, http.StatusBadRequest, fmt.Sprintf("Invalid input for operation: subnet %s is not on network %s.", id, n.ID))
			return
		}
		p := netip.MustParsePrefix(sub.CIDR)
		if addr != "" {
			if a, err := netip.ParseAddr(addr); err != nil || !p.Contains(a) {
				writeErr(w, http.StatusBadRequest, fmt.Sprintf("Invalid input for operation: IP address %s is not a valid IP for the specified subnet.", addr))
				return
			}
		} else if addr = c.freeAddress(p); addr == "" {
			writeErr(w, http.StatusConflict, fmt.Sprintf("No more IP addresses available on network %s.", n.ID))
			return
		}
	}
	if addr == "" {
		// As Neutron, an address no floating IP holds, and a 409 when none is left (the fake's
		// pool: 172.24.4.100-249).
		used := map[string]bool{}
		for _, f := range c.fips {
			used[f.FloatingIP] = true
		}
		for range 150 {
			c.fipSeq++
			if a := fmt.Sprintf("172.24.4.%d", 100+c.fipSeq%150); !used[a] {
				addr = a
				break
			}
		}
		if addr == "" {
			writeErr(w, http.StatusConflict, fmt.Sprintf("No more IP addresses available on network %s.", n.ID))
			return
		}
	}
	f := &floatingIP{ID: c.nextID("fip"), FloatingIP: addr, NetworkID: n.ID, Status: "DOWN"}
	if sub != nil {
		f.SubnetID = sub.ID
	}
	if b.FloatingIP.Description != nil {
		f.Description = *b.FloatingIP.Description
	}
	if b.FloatingIP.PortID != nil && *b.FloatingIP.PortID != "" {
		fixed, msg := c.fixedOf(*b.FloatingIP.PortID)
		if msg != "" {
			writeErr(w, http.StatusNotFound, msg)
			return
		}
		if msg := c.fixedTaken(f, *b.FloatingIP.PortID, fixed); msg != "" {
			writeErr(w, http.StatusConflict, msg)
			return
		}
		f.PortID, f.FixedIP, f.Status = *b.FloatingIP.PortID, fixed, "ACTIVE"
	}
	c.fips[f.ID] = f
	writeJSON(w, http.StatusCreated, map[string]any{"floatingip": fipJSON(f)})
}

// fixedTaken is Neutron's 409 message when another floating IP of f's network is on the fixed
// IP of the port ("" when free). Callers hold c.mu.
func (c *Cloud) fixedTaken(f *floatingIP, portID, fixed string) string {
	for _, o := range c.fips {
		if o.ID != f.ID && o.PortID == portID && o.FixedIP == fixed && o.NetworkID == f.NetworkID {
			return fmt.Sprintf("Cannot associate floating IP %s (%s) with port %s using fixed IP %s, as that fixed IP already has a floating IP on external network %s.",
				f.FloatingIP, f.ID, portID, fixed, f.NetworkID)
		}
	}
	return ""
}

// freeAddress is the first address of p after its gateway (the first host) that no floating
// IP holds, "" when none is left. Callers hold c.mu.
func (c *Cloud) freeAddress(p netip.Prefix) string {
	used := map[string]bool{}
	for _, f := range c.fips {
		used[f.FloatingIP] = true
	}
	a := p.Masked().Addr().Next().Next()                                              // the network address, then the gateway
	for ; p.Contains(a) && a.Next().IsValid() && p.Contains(a.Next()); a = a.Next() { // not the broadcast
		if !used[a.String()] {
			return a.String()
		}
	}
	return ""
}

func (c *Cloud) updateFIP(w http.ResponseWriter, r *http.Request) {
	f := c.fips[r.PathValue("id")]
	if f == nil {
		writeErr(w, http.StatusNotFound, "Floating IP could not be found.")
		return
	}
	var raw struct {
		FloatingIP map[string]json.RawMessage `json:"floatingip"`
	}
	if err := decode(r, &raw); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	var b fipBody
	if v, ok := raw.FloatingIP["port_id"]; ok && string(v) == "null" {
		f.PortID, f.FixedIP, f.Status = "", "", "DOWN" // Neutron disassociates on null only
	} else if ok {
		if err := json.Unmarshal(v, &b.FloatingIP.PortID); err != nil || b.FloatingIP.PortID == nil || *b.FloatingIP.PortID == "" {
			writeErr(w, http.StatusBadRequest, "Invalid input for port_id: '' is not a valid UUID")
			return
		}
	}
	if v, ok := raw.FloatingIP["description"]; ok {
		if err := json.Unmarshal(v, &b.FloatingIP.Description); err != nil {
			writeErr(w, http.StatusBadRequest, "malformed description")
			return
		}
	}
	if p := b.FloatingIP.PortID; p != nil {
		fixed, msg := c.fixedOf(*p)
		if msg != "" {
			writeErr(w, http.StatusNotFound, msg)
			return
		}
		if msg := c.fixedTaken(f, *p, fixed); msg != "" {
			writeErr(w, http.StatusConflict, msg)
			return
		}
		f.PortID, f.FixedIP, f.Status = *p, fixed, "ACTIVE"
	}
	if d := b.FloatingIP.Description; d != nil {
		f.Description = *d
	}
	writeJSON(w, http.StatusOK, map[string]any{"floatingip": fipJSON(f)})
}

func (c *Cloud) deleteFIP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if c.fips[id] == nil {
		writeErr(w, http.StatusNotFound, "Floating IP could not be found.")
		return
	}
	delete(c.fips, id)
	w.WriteHeader(http.StatusNoContent)
}

// writeNeutronErr answers as Neutron does: {"NeutronError": {"type", "message", "detail"}}.
func writeNeutronErr(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}})
}

// refusal is a Neutron error not yet answered: the verdict of a check that runs before any
// change, so a refused request leaves the state as it was.
type refusal struct {
	status   int
	typ, msg string
}

func (f *refusal) write(w http.ResponseWriter) { writeNeutronErr(w, f.status, f.typ, f.msg) }

// invalidInput is Neutron's 400 for an attribute its API refuses.
func invalidInput(attr, reason string) *refusal {
	return &refusal{http.StatusBadRequest, "InvalidInput", fmt.Sprintf("Invalid input for %s. Reason: %s.", attr, reason)}
}
