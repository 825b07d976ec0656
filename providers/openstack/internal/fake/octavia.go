package fake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

type loadBalancer struct {
	ID, Name, Description, Status, VipAddress, VipPortID, VipSubnetID, VipNetworkID, Provider string
	// FlavorID and AvailabilityZone are set at creation only: Octavia's PUT has neither.
	FlavorID, AvailabilityZone string
	Tags                       []string
	created, until             time.Time
	willError                  bool
}

type listener struct {
	ID, Name, Description, Protocol, LBID, PoolID string
	Port                                          int
	AllowedCIDRs                                  []string
	Tags                                          []string // the upstream CCM tags its listeners with its load balancer name
	InsertHeaders                                 map[string]string
	TLSRef                                        string // default_tls_container_ref
	// Limits are connection_limit and the timeout_* fields, Octavia's defaults unless set.
	Limits listenerLimits
	// Status is the provisioning_status ("" reads ACTIVE); see Options.NoJobboard.
	Status string
	// Up is admin_state_up (Octavia's default true).
	Up bool
}

// listenerLimits are a listener's connection_limit, timeout_client_data,
// timeout_member_connect, timeout_member_data and timeout_tcp_inspect.
type listenerLimits struct {
	ConnLimit     *int `json:"connection_limit,omitempty"`
	ClientData    *int `json:"timeout_client_data,omitempty"`
	MemberConnect *int `json:"timeout_member_connect,omitempty"`
	MemberData    *int `json:"timeout_member_data,omitempty"`
	TCPInspect    *int `json:"timeout_tcp_inspect,omitempty"`
}

// withDefaults fills what is unset with Octavia's defaults (-1: no limit; 50 s, 5 s, 50 s, 0).
func (l listenerLimits) withDefaults() listenerLimits {
	def := func(p *int, v int) *int {
		if p == nil {
			return &v
		}
		return p
	}
	return listenerLimits{def(l.ConnLimit, -1), def(l.ClientData, 50000), def(l.MemberConnect, 5000), def(l.MemberData, 50000), def(l.TCPInspect, 0)}
}

// set applies the fields b carries; a value Octavia refuses is a message.
func (l *listenerLimits) set(b listenerLimits) string {
	for _, f := range []struct {
		to  **int
		v   *int
		min int
	}{{&l.ConnLimit, b.ConnLimit, -1}, {&l.ClientData, b.ClientData, 0},
		{&l.MemberConnect, b.MemberConnect, 0}, {&l.MemberData, b.MemberData, 0}, {&l.TCPInspect, b.TCPInspect, 0}} {
		if f.v == nil {
			continue
		}
		if *f.v < f.min || *f.v > 31536000000 {
			return fmt.Sprintf("invalid listener limit or timeout %d", *f.v)
		}
		v := *f.v
		*f.to = &v
	}
	return ""
}

type pool struct {
	ID, Name, Description, Protocol, Method, LBID, ListenerID, MonitorID, Status string
	Members                                                                      []*member
	// Persistence is the pool's session_persistence (nil: none, read back as null).
	Persistence *Persistence
	// Up is admin_state_up (Octavia's default true).
	Up bool
}

// Persistence is a pool's session_persistence as Octavia holds it: type SOURCE_IP,
// HTTP_COOKIE or APP_COOKIE, with cookie_name for APP_COOKIE only.
type Persistence struct {
	Type       string `json:"type"`
	CookieName string `json:"cookie_name,omitempty"`
}

// persistenceTypes are the session persistence types Octavia knows; on a UDP or SCTP pool only
// SOURCE_IP (octavia/api/v2/controllers/pool.py, _validate_pool_request_for_udp_sctp).
var persistenceTypes = map[string]bool{"SOURCE_IP": true, "HTTP_COOKIE": true, "APP_COOKIE": true}

// checkPersistence validates a pool's session_persistence as Octavia does (400 on bad input;
// octavia/common/validate.py check_session_persistence): a known type, cookie_name required
// for APP_COOKIE and refused with any other type, no cookie type on a UDP or SCTP pool.
func checkPersistence(poolProtocol string, sp *Persistence) string {
	switch {
	case sp == nil:
		return ""
	case !persistenceTypes[sp.Type]:
		return fmt.Sprintf("Invalid input for field/attribute type. Value: '%s'. Value should be one of: SOURCE_IP, HTTP_COOKIE, APP_COOKIE", sp.Type)
	case sp.CookieName != "" && sp.Type != "APP_COOKIE":
		return `Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".`
	case sp.CookieName == "" && sp.Type == "APP_COOKIE":
		return `Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.`
	case (poolProtocol == "UDP" || poolProtocol == "SCTP") && sp.Type != "SOURCE_IP":
		return fmt.Sprintf("Session persistence of type %s is not supported for %s protocol pools.", sp.Type, poolProtocol)
	}
	return ""
}

// persistenceJSON is sp as Octavia shows it: null when none.
func persistenceJSON(sp *Persistence) any {
	if sp == nil {
		return nil
	}
	return map[string]any{"type": sp.Type, "cookie_name": nullable(sp.CookieName), "persistence_timeout": nil, "persistence_granularity": nil}
}

type member struct {
	ID, Address, SubnetID, Status string
	Port, MonitorPort             int
	Tags                          []string
	// Weight (Octavia's default 1, 0 to 256), Backup (default false) and Up (admin_state_up,
	// default true).
	Weight     int
	Backup, Up bool
}

type monitor struct {
	ID, PoolID, Type, URLPath, Status string
	Delay, Timeout, MaxRetries        int
	MaxRetriesDown                    int // Octavia's default 3
	// HTTPMethod and ExpectedCodes: HTTP and HTTPS monitors only (Octavia's defaults GET and
	// 200, with url_path /); null on the other types.
	HTTPMethod, ExpectedCodes string
	Up                        bool // admin_state_up (default true)
}

// LoadBalancer is an Octavia load balancer as tests see it.
type LoadBalancer struct {
	ID, Name, Status, VipAddress, VipPortID, Provider string
	VipSubnetID, FlavorID, AvailabilityZone           string
	Tags                                              []string
	Listeners                                         []Listener
}

// Listener is a listener with its pool as tests see it.
type Listener struct {
	Protocol, PoolProtocol, Method, Monitor string // Monitor is the monitor type, "" if none
	// Persistence is the pool's session_persistence type ("" if none).
	Persistence   string
	Port          int
	Members       []string // "address:port", sorted
	MemberSubnets []string // each member's subnet_id, sorted, "" when unset
	// Limits: connection_limit, timeout_client_data, timeout_member_connect,
	// timeout_member_data, timeout_tcp_inspect. MonitorTiming: delay, timeout, max_retries,
	// max_retries_down of the monitor (zero if none).
	Limits        [5]int
	MonitorTiming [4]int
	Description   string
	AllowedCIDRs  []string
	InsertHeaders map[string]string
	TLSRef        string // default_tls_container_ref
	// ListenerUp, PoolUp, MonitorUp: the admin_state_up of the listener, its pool, its monitor.
	ListenerUp, PoolUp, MonitorUp bool
	// MonitorHTTP is the monitor's "http_method expected_codes" ("" if it has none).
	MonitorHTTP string
	// MemberSettings: each member's "address:port weight=W backup=B up=U", sorted.
	MemberSettings []string
}

// LoadBalancers lists the load balancers (any state), sorted by name.
func (c *Cloud) LoadBalancers() []LoadBalancer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	var out []LoadBalancer
	for _, lb := range c.lbs {
		v := LoadBalancer{ID: lb.ID, Name: lb.Name, Status: lb.Status, VipAddress: lb.VipAddress, VipPortID: lb.VipPortID,
			Provider: lb.Provider, VipSubnetID: lb.VipSubnetID, FlavorID: lb.FlavorID, AvailabilityZone: lb.AvailabilityZone, Tags: append([]string(nil), lb.Tags...)}
		for _, l := range c.lis {
			if l.LBID != lb.ID {
				continue
			}
			li := Listener{Protocol: l.Protocol, Port: l.Port, Description: l.Description, AllowedCIDRs: append([]string(nil), l.AllowedCIDRs...),
				InsertHeaders: maps.Clone(l.InsertHeaders), TLSRef: l.TLSRef, ListenerUp: l.Up,
				Limits: [5]int{*l.Limits.ConnLimit, *l.Limits.ClientData, *l.Limits.MemberConnect, *l.Limits.MemberData, *l.Limits.TCPInspect}}
			if p := c.pools[l.PoolID]; p != nil {
				li.PoolProtocol, li.Method, li.PoolUp = p.Protocol, p.Method, p.Up
				if p.Persistence != nil {
					li.Persistence = p.Persistence.Type
				}
				if m := c.monitors[p.MonitorID]; m != nil {
					li.Monitor = m.Type
					li.MonitorTiming = [4]int{m.Delay, m.Timeout, m.MaxRetries, m.MaxRetriesDown}
					li.MonitorUp = m.Up
					if m.HTTPMethod != "" || m.ExpectedCodes != "" {
						li.MonitorHTTP = m.HTTPMethod + " " + m.ExpectedCodes
					}
				}
				for _, m := range p.Members {
					li.Members = append(li.Members, fmt.Sprintf("%s:%d", m.Address, m.Port))
					li.MemberSubnets = append(li.MemberSubnets, m.SubnetID)
					li.MemberSettings = append(li.MemberSettings, m.settings())
				}
				sort.Strings(li.Members)
				sort.Strings(li.MemberSubnets)
				sort.Strings(li.MemberSettings)
			}
			v.Listeners = append(v.Listeners, li)
		}
		sort.Slice(v.Listeners, func(i, j int) bool { return v.Listeners[i].Port < v.Listeners[j].Port })
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetLoadBalancerError puts the load balancer with this name into provisioning status ERROR.
func (c *Cloud) SetLoadBalancerError(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lb := range c.lbs {
		if lb.Name == name {
			lb.Status, lb.until = "ERROR", time.Time{}
			return true
		}
	}
	return false
}

// ForgetListenerDescriptions blanks the descriptions of the listeners of the load balancer
// named name, as on a load balancer made by another controller (the upstream CCM).
func (c *Cloud) ForgetListenerDescriptions(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, lb := range c.lbs {
		if lb.Name != name {
			continue
		}
		for _, l := range c.lis {
			if l.LBID == lb.ID {
				l.Description = ""
			}
		}
	}
}

// AddListener adds a listener with a pool of one member (and a TCP monitor) to load balancer
// lbID, as a user would outside Kubernetes, and returns the listener's ID.
func (c *Cloud) AddListener(lbID, description, protocol string, port int, member string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.addListener(lbID, listenerBody{Name: fmt.Sprintf("users-%s-%d", protocol, port), Description: description, Protocol: protocol, Port: port,
		DefaultPool: &poolBody{Name: "users-pool", Description: description, Method: "ROUND_ROBIN", Protocol: protocol,
			Members: []memberBody{{Address: member, Port: 8080}}}})
	p := c.pools[l.PoolID]
	m := &monitor{ID: c.nextID("hm"), PoolID: p.ID, Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1, Up: true}
	c.monitors[m.ID] = m
	p.MonitorID = m.ID
	return l.ID
}

// AddLoadBalancer creates an ACTIVE load balancer without listeners on the private subnet,
// as a user would outside Kubernetes, and returns its ID.
func (c *Cloud) AddLoadBalancer(name string) string {
	return c.AddLoadBalancerTagged(name, "")
}

// AddLoadBalancerTagged is AddLoadBalancer with a description and tags ("key=value"), e.g.
// a hand-made load balancer carrying forged ownership tags.
func (c *Cloud) AddLoadBalancerTagged(name, description string, tags ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vipSeq++
	lb := &loadBalancer{ID: c.nextID("lb"), Name: name, Description: description, Status: "ACTIVE", VipAddress: fmt.Sprintf("10.0.250.%d", c.vipSeq%250+1),
		VipSubnetID: PrivateSubnetID, VipNetworkID: PrivateNetworkID, Provider: "amphora", created: time.Now(), Tags: tags}
	vp := &port{ID: c.nextID("port"), NetworkID: PrivateNetworkID, DeviceID: "lb-" + lb.ID, DeviceOwner: "Octavia",
		FixedIPs: []fixedIP{{SubnetID: PrivateSubnetID, IPAddress: lb.VipAddress}}}
	c.ports[vp.ID] = vp
	lb.VipPortID = vp.ID
	c.lbs[lb.ID] = lb
	return lb.ID
}

// ErrorNextCreates makes the next n new load balancers end in ERROR instead of ACTIVE.
func (c *Cloud) ErrorNextCreates(n int) {
	c.mu.Lock()
	c.errorNext = n
	c.mu.Unlock()
}

// tick applies the provisioning transitions that are due. Callers hold c.mu.
func (c *Cloud) tick() {
	now := time.Now()
	for id, lb := range c.lbs {
		if lb.until.IsZero() || now.Before(lb.until) {
			continue
		}
		lb.until = time.Time{}
		switch lb.Status {
		case "PENDING_CREATE":
			lb.Status = "ACTIVE"
			if lb.willError {
				lb.Status = "ERROR"
			}
		case "PENDING_UPDATE":
			lb.Status = "ACTIVE"
		case "PENDING_DELETE":
			c.removeLB(id)
		}
	}
}

func (c *Cloud) removeLB(id string) {
	lb := c.lbs[id]
	delete(c.lbs, id)
	// As Octavia (deallocate_vip): the VIP port goes only when Octavia made it (device_owner
	// Octavia); a port the user gave as vip_port_id stays, with its floating IP.
	if vp := c.ports[lb.VipPortID]; vp != nil && vp.DeviceOwner == "Octavia" {
		delete(c.ports, lb.VipPortID)
	}
	for fid, f := range c.fips { // Neutron disassociates floating IPs of a deleted port
		if c.ports[lb.VipPortID] == nil && f.PortID == lb.VipPortID {
			f.PortID, f.FixedIP, f.Status = "", "", "DOWN"
			c.fips[fid] = f
		}
	}
	for lid, l := range c.lis {
		if l.LBID == id {
			delete(c.lis, lid)
		}
	}
	for pid, p := range c.pools {
		if p.LBID == id {
			delete(c.monitors, p.MonitorID)
			delete(c.pools, pid)
		}
	}
}

// busy marks lb PENDING_UPDATE after a change. Callers hold c.mu.
func (c *Cloud) busy(lb *loadBalancer) {
	lb.Status, lb.until = "PENDING_UPDATE", time.Now().Add(c.opts.UpdateDelay)
}

// activeLB finds the load balancer id and checks it accepts changes, as Octavia does:
// 404 if missing, 409 unless ACTIVE.
func (c *Cloud) activeLB(w http.ResponseWriter, id string) *loadBalancer {
	lb := c.lbs[id]
	if lb == nil {
		writeErr(w, http.StatusNotFound, fmt.Sprintf("Load Balancer %s not found.", id))
		return nil
	}
	if lb.Status != "ACTIVE" {
		writeErr(w, http.StatusConflict, fmt.Sprintf("Load Balancer %s is immutable and cannot be updated.", id))
		return nil
	}
	return lb
}

const lbBase = "/load-balancer/v2.0/lbaas/"

func (c *Cloud) octaviaRoutes(m *http.ServeMux) {
	m.HandleFunc("POST "+lbBase+"loadbalancers", c.op("octavia.CreateLoadBalancer", c.createLB))
	m.HandleFunc("GET "+lbBase+"loadbalancers", c.op("octavia.ListLoadBalancers", c.listLBs))
	m.HandleFunc("GET "+lbBase+"loadbalancers/{id}", c.op("octavia.GetLoadBalancer", c.getLB))
	m.HandleFunc("PUT "+lbBase+"loadbalancers/{id}", c.op("octavia.UpdateLoadBalancer", c.updateLB))
	m.HandleFunc("DELETE "+lbBase+"loadbalancers/{id}", c.op("octavia.DeleteLoadBalancer", c.deleteLB))
	m.HandleFunc("GET "+lbBase+"listeners", c.op("octavia.ListListeners", c.listListeners))
	m.HandleFunc("POST "+lbBase+"listeners", c.op("octavia.CreateListener", c.createListener))
	m.HandleFunc("PUT "+lbBase+"listeners/{id}", c.op("octavia.UpdateListener", c.updateListener))
	m.HandleFunc("GET "+lbBase+"pools/{id}", c.op("octavia.GetPool", c.getPool))
	m.HandleFunc("DELETE "+lbBase+"listeners/{id}", c.op("octavia.DeleteListener", c.deleteListener))
	m.HandleFunc("GET "+lbBase+"pools", c.op("octavia.ListPools", c.listPools))
	m.HandleFunc("POST "+lbBase+"pools", c.op("octavia.CreatePool", c.createPool))
	m.HandleFunc("DELETE "+lbBase+"pools/{id}", c.op("octavia.DeletePool", c.deletePool))
	m.HandleFunc("GET "+lbBase+"pools/{id}/members", c.op("octavia.ListMembers", c.listMembers))
	m.HandleFunc("PUT "+lbBase+"pools/{id}/members", c.op("octavia.BatchUpdateMembers", c.batchMembers))
	m.HandleFunc("DELETE "+lbBase+"pools/{id}/members/{member}", c.op("octavia.DeleteMember", c.deleteMember))
	m.HandleFunc("PUT "+lbBase+"pools/{id}/members/{member}", c.op("octavia.UpdateMember", c.updateMember))
	m.HandleFunc("PUT "+lbBase+"pools/{id}", c.op("octavia.UpdatePool", c.updatePool))
	m.HandleFunc("GET "+lbBase+"healthmonitors", c.op("octavia.ListHealthMonitors", c.listMonitors))
	m.HandleFunc("GET "+lbBase+"healthmonitors/{id}", c.op("octavia.GetHealthMonitor", c.getMonitor))
	m.HandleFunc("POST "+lbBase+"healthmonitors", c.op("octavia.CreateHealthMonitor", c.createMonitor))
	m.HandleFunc("PUT "+lbBase+"healthmonitors/{id}", c.op("octavia.UpdateHealthMonitor", c.updateMonitor))
	m.HandleFunc("DELETE "+lbBase+"healthmonitors/{id}", c.op("octavia.DeleteHealthMonitor", c.deleteMonitor))
}

func (c *Cloud) lbJSON(lb *loadBalancer) map[string]any {
	ls, ps := []any{}, []any{}
	for _, l := range c.lis {
		if l.LBID == lb.ID {
			ls = append(ls, map[string]any{"id": l.ID})
		}
	}
	for _, p := range c.pools {
		if p.LBID == lb.ID {
			ps = append(ps, map[string]any{"id": p.ID})
		}
	}
	op := "ONLINE"
	if lb.Status != "ACTIVE" {
		op = "OFFLINE"
	}
	tags := lb.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"id": lb.ID, "name": lb.Name, "description": lb.Description, "provisioning_status": lb.Status,
		"operating_status": op, "vip_address": lb.VipAddress, "vip_port_id": lb.VipPortID, "vip_subnet_id": lb.VipSubnetID,
		"vip_network_id": lb.VipNetworkID, "provider": lb.Provider, "tags": tags,
		"flavor_id": nullable(lb.FlavorID), "availability_zone": nullable(lb.AvailabilityZone), "listeners": ls, "pools": ps,
		"admin_state_up": true, "project_id": "pid-" + c.opts.ProjectName}
}

type memberBody struct {
	Address     string   `json:"address"`
	Port        int      `json:"protocol_port"`
	SubnetID    string   `json:"subnet_id"`
	MonitorPort *int     `json:"monitor_port"`
	Tags        []string `json:"tags"`
	// Weight, Backup, AdminStateUp: absent keeps an existing member's (a batch update) or
	// takes Octavia's default (1, false, true).
	Weight       *int  `json:"weight"`
	Backup       *bool `json:"backup"`
	AdminStateUp *bool `json:"admin_state_up"`
}

type poolBody struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Method      string       `json:"lb_algorithm"`
	Protocol    string       `json:"protocol"`
	Members     []memberBody `json:"members"`
	Monitor     *PoolMonitor `json:"healthmonitor"`
	Persistence *Persistence `json:"session_persistence"`
	// AdminStateUp: absent is Octavia's default, true.
	AdminStateUp *bool `json:"admin_state_up"`
}

// PoolMonitor is the health monitor of a pool created with it.
type PoolMonitor struct {
	Type           string `json:"type"`
	Delay          int    `json:"delay"`
	Timeout        int    `json:"timeout"`
	MaxRetries     int    `json:"max_retries"`
	MaxRetriesDown int    `json:"max_retries_down"`
	URLPath        string `json:"url_path"`
	HTTPMethod     string `json:"http_method"`
	ExpectedCodes  string `json:"expected_codes"`
	AdminStateUp   *bool  `json:"admin_state_up"`
}

type listenerBody struct {
	LBID         string    `json:"loadbalancer_id"`
	AllowedCIDRs []string  `json:"allowed_cidrs"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	Protocol     string    `json:"protocol"`
	Port         int       `json:"protocol_port"`
	DefaultPool  *poolBody `json:"default_pool"`
	// DefaultPoolID names an existing pool of the load balancer without a listener.
	DefaultPoolID string   `json:"default_pool_id"`
	Tags          []string `json:"tags"`
	// InsertHeaders: Octavia accepts them on HTTP and TERMINATED_HTTPS listeners only.
	InsertHeaders map[string]string `json:"insert_headers"`
	// TLSRef: required on TERMINATED_HTTPS listeners, refused on others, and must be readable
	// in Barbican.
	TLSRef string `json:"default_tls_container_ref"`
	// AdminStateUp: absent is Octavia's default, true.
	AdminStateUp *bool `json:"admin_state_up"`
	listenerLimits
}

var (
	listenerProtocols = map[string]bool{"TCP": true, "UDP": true, "HTTP": true, "HTTPS": true, "SCTP": true, "TERMINATED_HTTPS": true}
	poolProtocols     = map[string]bool{"TCP": true, "UDP": true, "HTTP": true, "HTTPS": true, "PROXY": true, "PROXYV2": true, "SCTP": true}
	// listenerPools are the pool protocols Octavia accepts behind each listener protocol.
	listenerPools = map[string][]string{
		"TCP":              {"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"},
		"HTTP":             {"HTTP", "PROXY", "PROXYV2"},
		"HTTPS":            {"HTTPS", "PROXY", "PROXYV2", "TCP"},
		"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
		"UDP":              {"UDP"},
		"SCTP":             {"SCTP"},
	}
	// headers are the insert_headers Octavia knows for HTTP listeners (values "true"/"false");
	// TERMINATED_HTTPS listeners also take the X-SSL-* ones, not modelled here.
	headers      = map[string]bool{"X-Forwarded-For": true, "X-Forwarded-Port": true, "X-Forwarded-Proto": true}
	methods      = map[string]bool{"ROUND_ROBIN": true, "LEAST_CONNECTIONS": true, "SOURCE_IP": true, "SOURCE_IP_PORT": true}
	monitorTypes = map[string]bool{"TCP": true, "HTTP": true, "HTTPS": true, "PING": true, "UDP-CONNECT": true, "SCTP": true, "TLS-HELLO": true}
	// ovnMonitorTypes are the only health monitor types the OVN provider (ovn-octavia-provider)
	// accepts: it has no HTTP, HTTPS, PING or TLS-HELLO monitors.
	ovnMonitorTypes = map[string]bool{"TCP": true, "UDP-CONNECT": true, "SCTP": true}
)

// providerRefusesMonitor is the 400 message the load balancer's provider answers a monitor of
// type typ with ("" when accepted).
func providerRefusesMonitor(provider, typ string) string {
	if provider == "ovn" && !ovnMonitorTypes[typ] {
		return fmt.Sprintf("Provider 'ovn' does not support a requested option: OVN provider does not support %s health monitors", typ)
	}
	return ""
}

// ovnAlgorithms are the only lb_algorithm values ovn-octavia-provider accepts: OVN balances by
// a hash of the source IP and port.
var ovnAlgorithms = map[string]bool{"SOURCE_IP_PORT": true}

// providerRefusesAlgorithm is the message the load balancer's provider answers a pool's
// lb_algorithm with ("" when accepted). Octavia answers the provider's UnsupportedOptionError
// with 501 (ProviderUnsupportedOptionError).
func providerRefusesAlgorithm(provider, method string) string {
	if provider == "ovn" && method != "" && !ovnAlgorithms[method] {
		return fmt.Sprintf("Provider 'ovn' does not support a requested option: OVN provider does not support %s algorithm", method)
	}
	return ""
}

// providerRefusesListener is the 400 message the provider answers a listener with: the OVN
// provider has no allowed_cidrs, and providerRefusesMonitor for its default pool's monitor.
func providerRefusesListener(provider string, l listenerBody) string {
	if provider == "ovn" && len(l.AllowedCIDRs) > 0 {
		return "Provider 'ovn' does not support a requested option: OVN provider does not support allowed_cidrs option"
	}
	if l.DefaultPool == nil || l.DefaultPool.Monitor == nil {
		return ""
	}
	return providerRefusesMonitor(provider, l.DefaultPool.Monitor.Type)
}

// checkListener validates a listener with its pool as Octavia would (400 on bad input);
// allowed_cidrs must be of the VIP's IP version (v6 says which).
func checkListener(l listenerBody, taken map[string]bool, v6 bool, known func(string) bool) string {
	if !listenerProtocols[l.Protocol] || l.Port < 1 || l.Port > 65535 {
		return fmt.Sprintf("invalid listener protocol %q or port %d", l.Protocol, l.Port)
	}
	for _, cidr := range l.AllowedCIDRs {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return fmt.Sprintf("allowed_cidrs: %q is not a CIDR", cidr)
		}
		if p.Addr().Is6() != v6 {
			return fmt.Sprintf("allowed_cidrs: CIDR %s IP version incompatible with VIP IP version", cidr)
		}
	}
	if msg := checkHeaders(l.Protocol, l.InsertHeaders); msg != "" {
		return msg
	}
	var limits listenerLimits
	if msg := limits.set(l.listenerLimits); msg != "" {
		return msg
	}
	if msg := checkTLS(l.Protocol, l.TLSRef, known); msg != "" {
		return msg
	}
	if taken[portSpace(l.Protocol, l.Port)] {
		return fmt.Sprintf("another listener on this load balancer already uses port %d", l.Port)
	}
	taken[portSpace(l.Protocol, l.Port)] = true
	if p := l.DefaultPool; p != nil {
		if !poolProtocols[p.Protocol] || !methods[p.Method] {
			return fmt.Sprintf("invalid pool protocol %q or lb_algorithm %q", p.Protocol, p.Method)
		}
		if !slices.Contains(listenerPools[l.Protocol], p.Protocol) {
			return fmt.Sprintf("the pool protocol %s is not valid for a %s listener", p.Protocol, l.Protocol)
		}
		if msg := checkPersistence(p.Protocol, p.Persistence); msg != "" {
			return msg
		}
		if p.Monitor != nil && (!monitorTypes[p.Monitor.Type] || p.Monitor.Delay < p.Monitor.Timeout) {
			return "invalid health monitor"
		}
		if p.Monitor != nil {
			if msg := checkMonitorHTTP(p.Monitor.Type, p.Monitor.HTTPMethod, p.Monitor.ExpectedCodes); msg != "" {
				return msg
			}
		}
		for _, m := range p.Members {
			if msg := checkMember(m); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// checkHeaders validates a listener's insert_headers as Octavia does.
func checkHeaders(protocol string, hs map[string]string) string {
	if len(hs) == 0 {
		return ""
	}
	if protocol != "HTTP" && protocol != "TERMINATED_HTTPS" {
		return fmt.Sprintf("insert_headers is not a valid option for a %s protocol listener", protocol)
	}
	for k, v := range hs {
		if !headers[k] || (v != "true" && v != "false") {
			return fmt.Sprintf("insert_headers: %s=%q is not a supported header", k, v)
		}
	}
	return ""
}

// checkTLS validates a listener's default_tls_container_ref as Octavia does: required for
// TERMINATED_HTTPS, refused elsewhere, and readable in Barbican (known).
func checkTLS(protocol, ref string, known func(string) bool) string {
	switch {
	case protocol == "TERMINATED_HTTPS" && ref == "":
		return "An SNI or default certificate container reference must be provided for TERMINATED_HTTPS listeners."
	case protocol != "TERMINATED_HTTPS" && ref != "":
		return "Certificate container references are only allowed on TERMINATED_HTTPS protocol listeners."
	case ref != "" && !known(ref):
		return fmt.Sprintf("Could not retrieve certificate: %s", ref)
	}
	return ""
}

// portSpace is the key of a listener's port: UDP and SCTP listeners each have their own
// ports, every TCP-based protocol (TCP, HTTP, HTTPS, TERMINATED_HTTPS) shares one.
func portSpace(protocol string, port int) string {
	if protocol != "UDP" && protocol != "SCTP" {
		protocol = "TCP"
	}
	return fmt.Sprintf("%s/%d", protocol, port)
}

// addListener stores l with its pool, members and monitor. Callers hold c.mu and validated l.
func (c *Cloud) addListener(lbID string, l listenerBody) *listener {
	li := &listener{ID: c.nextID("listener"), Name: l.Name, Description: l.Description, Protocol: l.Protocol, Port: l.Port, LBID: lbID,
		AllowedCIDRs: l.AllowedCIDRs, Tags: l.Tags, InsertHeaders: maps.Clone(l.InsertHeaders), TLSRef: l.TLSRef, Limits: l.listenerLimits.withDefaults(),
		Up: orTrue(l.AdminStateUp)}
	c.lis[li.ID] = li
	if p := l.DefaultPool; p != nil {
		li.PoolID = c.addPool(lbID, li.ID, p).ID
	}
	return li
}

// addPool stores p with its members and monitor, on listener listenerID if set.
func (c *Cloud) addPool(lbID, listenerID string, p *poolBody) *pool {
	po := &pool{ID: c.nextID("pool"), Name: p.Name, Description: p.Description, Protocol: p.Protocol, Method: p.Method, LBID: lbID, ListenerID: listenerID,
		Up: orTrue(p.AdminStateUp)}
	if p.Persistence != nil {
		sp := *p.Persistence
		po.Persistence = &sp
	}
	po.Members = c.members(p.Members, nil)
	if p.Monitor != nil {
		m := &monitor{ID: c.nextID("hm"), PoolID: po.ID, Type: p.Monitor.Type, Delay: p.Monitor.Delay, Timeout: p.Monitor.Timeout,
			MaxRetries: p.Monitor.MaxRetries, MaxRetriesDown: p.Monitor.MaxRetriesDown, URLPath: p.Monitor.URLPath,
			HTTPMethod: p.Monitor.HTTPMethod, ExpectedCodes: p.Monitor.ExpectedCodes, Up: orTrue(p.Monitor.AdminStateUp)}
		if m.MaxRetriesDown == 0 {
			m.MaxRetriesDown = 3
		}
		m.httpDefaults()
		c.monitors[m.ID] = m
		po.MonitorID = m.ID
	}
	c.pools[po.ID] = po
	return po
}

// members stores in as a pool's members. A member of old (a batch update's pool) with the
// same address and protocol_port is updated, as Octavia does: it keeps its ID, and its
// weight, backup and admin_state_up unless in sets them.
func (c *Cloud) members(in []memberBody, old []*member) []*member {
	var out []*member
	for _, m := range in {
		mp := 0
		if m.MonitorPort != nil {
			mp = *m.MonitorPort
		}
		nm := &member{ID: c.nextID("member"), Address: m.Address, Port: m.Port, SubnetID: m.SubnetID, MonitorPort: mp, Tags: m.Tags, Weight: 1, Up: true}
		for _, o := range old {
			if o.Address == m.Address && o.Port == m.Port {
				nm.ID, nm.Weight, nm.Backup, nm.Up = o.ID, o.Weight, o.Backup, o.Up
			}
		}
		nm.set(m)
		out = append(out, nm)
	}
	return out
}

// set applies the weight, backup and admin_state_up b carries.
func (m *member) set(b memberBody) {
	if b.Weight != nil {
		m.Weight = *b.Weight
	}
	if b.Backup != nil {
		m.Backup = *b.Backup
	}
	if b.AdminStateUp != nil {
		m.Up = *b.AdminStateUp
	}
}

// settings is the member as Listener.MemberSettings and LoadBalancerState show it.
func (m *member) settings() string {
	return fmt.Sprintf("%s:%d weight=%d backup=%t up=%t", m.Address, m.Port, m.Weight, m.Backup, m.Up)
}

// checkMember validates a member as Octavia does (400 on bad input).
func checkMember(m memberBody) string {
	if m.Address == "" || m.Port < 1 || m.Port > 65535 {
		return "invalid member"
	}
	if m.Weight != nil && (*m.Weight < 0 || *m.Weight > 256) {
		return fmt.Sprintf("Invalid input for field/attribute weight. Value: '%d'. Value must be between 0 and 256", *m.Weight)
	}
	return ""
}

// orTrue is an admin_state_up as given, Octavia's default true when absent.
func orTrue(b *bool) bool {
	return b == nil || *b
}

func (c *Cloud) createLB(w http.ResponseWriter, r *http.Request) {
	var b struct {
		LB struct {
			Name, Description, Provider string
			VipSubnetID                 string         `json:"vip_subnet_id"`
			VipNetworkID                string         `json:"vip_network_id"`
			VipAddress                  string         `json:"vip_address"`
			VipPortID                   string         `json:"vip_port_id"`
			FlavorID                    string         `json:"flavor_id"`
			AvailabilityZone            string         `json:"availability_zone"`
			Tags                        []string       `json:"tags"`
			Listeners                   []listenerBody `json:"listeners"`
		} `json:"loadbalancer"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	in := b.LB
	userPort, msg := c.vipPort(in.VipPortID, in.VipAddress)
	if msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	if userPort != nil && in.VipSubnetID == "" && in.VipNetworkID == "" {
		in.VipSubnetID = userPort.FixedIPs[0].SubnetID // Octavia fills the subnet from the port
		for _, f := range userPort.FixedIPs {
			if f.IPAddress == in.VipAddress {
				in.VipSubnetID = f.SubnetID
			}
		}
	}
	if msg := c.checkPlacement(in.FlavorID, in.AvailabilityZone); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	sub := c.subnets[in.VipSubnetID]
	if sub == nil && in.VipNetworkID != "" {
		for _, s := range c.subnets { // Octavia prefers an IPv4 subnet of the network
			if s.NetworkID == in.VipNetworkID && (sub == nil || s.IPVersion == 4) {
				sub = s
			}
		}
	}
	if sub == nil {
		writeErr(w, http.StatusBadRequest, "Validation failure: vip_subnet_id or vip_network_id must name an existing subnet or network")
		return
	}
	if in.Provider != "" && in.Provider != "amphora" && in.Provider != "ovn" {
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("Provider '%s' is not enabled.", in.Provider))
		return
	}
	if c.opts.NoFullyPopulated && len(in.Listeners) > 0 {
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("Provider '%s' does not support a requested action: fully populated load balancer creation", in.Provider))
		return
	}
	taken := map[string]bool{}
	for _, l := range in.Listeners {
		if msg := checkListener(l, taken, sub.IPVersion == 6, c.tlsKnown); msg != "" {
			writeErr(w, http.StatusBadRequest, "Validation failure: "+msg)
			return
		}
		if msg := providerRefusesListener(in.Provider, l); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
		if l.DefaultPool != nil {
			if msg := providerRefusesAlgorithm(in.Provider, l.DefaultPool.Method); msg != "" {
				writeErr(w, http.StatusNotImplemented, msg)
				return
			}
		}
	}
	if in.VipAddress != "" && userPort == nil {
		// As Octavia (through Neutron): a requested VIP must be in the subnet and free.
		a, err := netip.ParseAddr(in.VipAddress)
		if pfx, perr := netip.ParsePrefix(sub.CIDR); err != nil || perr != nil || !pfx.Contains(a) {
			writeErr(w, http.StatusBadRequest, fmt.Sprintf("Validation failure: vip_address %s is not in subnet %s", in.VipAddress, sub.ID))
			return
		}
		for _, p := range c.ports {
			if slices.ContainsFunc(p.FixedIPs, func(f fixedIP) bool { return f.SubnetID == sub.ID && f.IPAddress == a.String() }) {
				writeErr(w, http.StatusConflict, fmt.Sprintf("IP address %s already allocated in subnet %s", in.VipAddress, sub.ID))
				return
			}
		}
	}
	c.vipSeq++
	vip := in.VipAddress
	if userPort != nil && vip == "" {
		vip = userPort.FixedIPs[0].IPAddress // the port's address is the VIP
	}
	if vip == "" && sub.IPVersion == 6 {
		vip = fmt.Sprintf("fd00::2:%x", c.vipSeq)
	} else if vip == "" {
		vip = fmt.Sprintf("10.0.%d.%d", 200+c.vipSeq/250, c.vipSeq%250+1)
	}
	now := time.Now()
	lb := &loadBalancer{ID: c.nextID("lb"), Name: in.Name, Description: in.Description, Status: "PENDING_CREATE",
		VipAddress: vip, VipSubnetID: sub.ID, VipNetworkID: sub.NetworkID, Provider: in.Provider, Tags: in.Tags,
		FlavorID: in.FlavorID, AvailabilityZone: in.AvailabilityZone, created: now, until: now.Add(c.opts.ProvisionDelay)}
	if lb.Provider == "" {
		lb.Provider = "amphora"
	}
	if c.errorNext > 0 {
		c.errorNext--
		lb.willError = true
	}
	if userPort != nil {
		lb.VipPortID = userPort.ID // the user's port, left as it is
	} else {
		vp := &port{ID: c.nextID("port"), NetworkID: sub.NetworkID, DeviceID: "lb-" + lb.ID, DeviceOwner: "Octavia",
			FixedIPs: []fixedIP{{SubnetID: sub.ID, IPAddress: vip}}}
		c.ports[vp.ID] = vp
		lb.VipPortID = vp.ID
	}
	c.lbs[lb.ID] = lb
	for _, l := range in.Listeners {
		li := c.addListener(lb.ID, l)
		if c.opts.NoJobboard {
			c.leavePending(li)
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"loadbalancer": c.lbJSON(lb)})
}

func (c *Cloud) listLBs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []any{}
	var tags []string // Octavia's tags filter: every one of them (comma-separated or repeated)
	for _, v := range q["tags"] {
		tags = append(tags, strings.Split(v, ",")...)
	}
	for _, lb := range c.lbs {
		if n := q.Get("name"); n != "" && n != lb.Name {
			continue
		}
		if v := q.Get("vip_port_id"); v != "" && v != lb.VipPortID {
			continue
		}
		if v := q.Get("vip_address"); v != "" && v != lb.VipAddress {
			continue
		}
		if !hasAll(lb.Tags, tags) {
			continue
		}
		if time.Since(lb.created) < c.opts.ListLag {
			continue
		}
		out = append(out, c.lbJSON(lb))
	}
	writeJSON(w, http.StatusOK, map[string]any{"loadbalancers": out})
}

func (c *Cloud) getLB(w http.ResponseWriter, r *http.Request) {
	lb := c.lbs[r.PathValue("id")]
	if lb == nil {
		writeErr(w, http.StatusNotFound, "Load Balancer not found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"loadbalancer": c.lbJSON(lb)})
}

func (c *Cloud) updateLB(w http.ResponseWriter, r *http.Request) {
	lb := c.activeLB(w, r.PathValue("id"))
	if lb == nil {
		return
	}
	var b struct {
		LB struct {
			Name, Description *string
			Tags              *[]string `json:"tags"`
		} `json:"loadbalancer"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	if b.LB.Name != nil {
		lb.Name = *b.LB.Name
	}
	if b.LB.Description != nil {
		lb.Description = *b.LB.Description
	}
	if b.LB.Tags != nil {
		lb.Tags = *b.LB.Tags
	}
	c.busy(lb)
	writeJSON(w, http.StatusOK, map[string]any{"loadbalancer": c.lbJSON(lb)})
}

func (c *Cloud) deleteLB(w http.ResponseWriter, r *http.Request) {
	lb := c.lbs[r.PathValue("id")]
	if lb == nil {
		writeErr(w, http.StatusNotFound, "Load Balancer not found.")
		return
	}
	if strings.HasPrefix(lb.Status, "PENDING_") {
		writeErr(w, http.StatusConflict, fmt.Sprintf("Invalid state %s of loadbalancer resource %s", lb.Status, lb.ID))
		return
	}
	if r.URL.Query().Get("cascade") != "true" {
		for _, l := range c.lis {
			if l.LBID == lb.ID {
				writeErr(w, http.StatusBadRequest, fmt.Sprintf("Validation failure: Cannot delete Load Balancer %s - it has children", lb.ID))
				return
			}
		}
	}
	lb.Status, lb.until = "PENDING_DELETE", time.Now().Add(c.opts.UpdateDelay)
	lb.Tags = nil // Octavia's cascade delete drops the tags while the load balancer is still listed
	c.tick()
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cloud) listListeners(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("loadbalancer_id")
	out := []any{}
	for _, l := range c.lis {
		if id != "" && l.LBID != id {
			continue
		}
		out = append(out, listenerJSON(l))
	}
	writeJSON(w, http.StatusOK, map[string]any{"listeners": out})
}

func listenerJSON(l *listener) map[string]any {
	cidrs := l.AllowedCIDRs
	if cidrs == nil {
		cidrs = []string{}
	}
	tags := l.Tags
	if tags == nil {
		tags = []string{}
	}
	hs := l.InsertHeaders
	if hs == nil {
		hs = map[string]string{}
	}
	return map[string]any{"id": l.ID, "name": l.Name, "description": l.Description, "protocol": l.Protocol,
		"protocol_port": l.Port, "default_pool_id": l.PoolID, "allowed_cidrs": cidrs, "tags": tags, "insert_headers": hs,
		"default_tls_container_ref": l.TLSRef,
		"connection_limit":          *l.Limits.ConnLimit, "timeout_client_data": *l.Limits.ClientData,
		"timeout_member_connect": *l.Limits.MemberConnect, "timeout_member_data": *l.Limits.MemberData,
		"timeout_tcp_inspect": *l.Limits.TCPInspect, "provisioning_status": statusOf(l.Status), "admin_state_up": l.Up,
		"loadbalancers": []any{map[string]any{"id": l.LBID}}}
}

func (c *Cloud) createListener(w http.ResponseWriter, r *http.Request) {
	var b struct {
		L listenerBody `json:"listener"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	lb := c.activeLB(w, b.L.LBID)
	if lb == nil {
		return
	}
	if b.L.DefaultPool != nil {
		// Octavia builds a listener with its pool only within a load balancer's fully
		// populated create; its listener POST stores the pool as a plain dict and fails.
		writeErr(w, http.StatusInternalServerError, "'dict' object has no attribute '_sa_instance_state'")
		return
	}
	for _, l := range c.lis {
		if l.LBID == lb.ID && portSpace(l.Protocol, l.Port) == portSpace(b.L.Protocol, b.L.Port) {
			writeErr(w, http.StatusConflict, fmt.Sprintf("Another Listener on this Load Balancer is already using protocol %s and protocol_port %d", b.L.Protocol, b.L.Port))
			return
		}
	}
	if msg := checkListener(b.L, map[string]bool{}, strings.Contains(lb.VipAddress, ":"), c.tlsKnown); msg != "" {
		writeErr(w, http.StatusBadRequest, "Validation failure: "+msg)
		return
	}
	if msg := providerRefusesListener(lb.Provider, b.L); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	var reuse *pool
	if id := b.L.DefaultPoolID; id != "" {
		if reuse = c.pools[id]; reuse == nil || reuse.LBID != lb.ID {
			writeErr(w, http.StatusNotFound, "Pool "+id+" not found.")
			return
		}
		if reuse.ListenerID != "" {
			writeErr(w, http.StatusConflict, "Pool "+id+" is already used by listener "+reuse.ListenerID+".")
			return
		}
	}
	li := c.addListener(lb.ID, b.L)
	if reuse != nil {
		li.PoolID, reuse.ListenerID = reuse.ID, li.ID
	}
	c.busy(lb)
	out := listenerJSON(li)
	out["provisioning_status"] = "PENDING_CREATE"
	writeJSON(w, http.StatusCreated, map[string]any{"listener": out})
}

func (c *Cloud) deleteListener(w http.ResponseWriter, r *http.Request) {
	l := c.lis[r.PathValue("id")]
	if l == nil {
		writeErr(w, http.StatusNotFound, "Listener not found.")
		return
	}
	lb := c.activeLB(w, l.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Listener", l.ID, l.Status) {
		return
	}
	delete(c.lis, l.ID)
	if p := c.pools[l.PoolID]; p != nil {
		p.ListenerID = ""
	}
	c.busy(lb)
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cloud) updateListener(w http.ResponseWriter, r *http.Request) {
	l := c.lis[r.PathValue("id")]
	if l == nil {
		writeErr(w, http.StatusNotFound, "Listener not found.")
		return
	}
	lb := c.activeLB(w, l.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Listener", l.ID, l.Status) {
		return
	}
	var b struct {
		L struct {
			Name, Description *string
			AllowedCIDRs      *[]string          `json:"allowed_cidrs"`
			InsertHeaders     *map[string]string `json:"insert_headers"`
			TLSRef            *string            `json:"default_tls_container_ref"`
			AdminStateUp      *bool              `json:"admin_state_up"`
			listenerLimits
		} `json:"listener"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	if b.L.InsertHeaders != nil {
		if msg := checkHeaders(l.Protocol, *b.L.InsertHeaders); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
	}
	if b.L.TLSRef != nil {
		if msg := checkTLS(l.Protocol, *b.L.TLSRef, c.tlsKnown); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
	}
	if b.L.AllowedCIDRs != nil {
		if msg := providerRefusesListener(lb.Provider, listenerBody{AllowedCIDRs: *b.L.AllowedCIDRs}); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
		if msg := checkListener(listenerBody{Protocol: l.Protocol, Port: l.Port, AllowedCIDRs: *b.L.AllowedCIDRs, TLSRef: l.TLSRef}, map[string]bool{},
			strings.Contains(lb.VipAddress, ":"), func(string) bool { return true }); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
		l.AllowedCIDRs = *b.L.AllowedCIDRs
	}
	next := l.Limits
	if msg := next.set(b.L.listenerLimits); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	l.Limits = next
	if b.L.InsertHeaders != nil {
		l.InsertHeaders = maps.Clone(*b.L.InsertHeaders)
	}
	if b.L.TLSRef != nil {
		l.TLSRef = *b.L.TLSRef
	}
	if b.L.AdminStateUp != nil {
		l.Up = *b.L.AdminStateUp
	}
	if b.L.Name != nil {
		l.Name = *b.L.Name
	}
	if b.L.Description != nil {
		l.Description = *b.L.Description
	}
	c.busy(lb)
	writeJSON(w, http.StatusOK, map[string]any{"listener": listenerJSON(l)})
}

func (c *Cloud) poolJSON(p *pool) map[string]any {
	ms := []any{} // Octavia lists member IDs only
	for _, m := range p.Members {
		ms = append(ms, map[string]any{"id": m.ID})
	}
	ls := []any{}
	if p.ListenerID != "" {
		ls = append(ls, map[string]any{"id": p.ListenerID})
	}
	return map[string]any{"id": p.ID, "name": p.Name, "description": p.Description, "protocol": p.Protocol, "lb_algorithm": p.Method,
		"healthmonitor_id": p.MonitorID, "members": ms, "listeners": ls, "loadbalancers": []any{map[string]any{"id": p.LBID}},
		"session_persistence": persistenceJSON(p.Persistence), "provisioning_status": statusOf(p.Status), "admin_state_up": p.Up}
}

func (c *Cloud) getPool(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pool": c.poolJSON(p)})
}

func (c *Cloud) listPools(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("loadbalancer_id")
	out := []any{}
	for _, p := range c.pools {
		if id != "" && p.LBID != id {
			continue
		}
		out = append(out, c.poolJSON(p))
	}
	writeJSON(w, http.StatusOK, map[string]any{"pools": out})
}

// createPool creates a pool on a listener (as its default pool) or on a load balancer.
func (c *Cloud) createPool(w http.ResponseWriter, r *http.Request) {
	var b struct {
		P struct {
			poolBody
			ListenerID string `json:"listener_id"`
			LBID       string `json:"loadbalancer_id"`
		} `json:"pool"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	lbID, li := b.P.LBID, c.lis[b.P.ListenerID]
	if b.P.ListenerID != "" {
		if li == nil {
			writeErr(w, http.StatusNotFound, "Listener "+b.P.ListenerID+" not found.")
			return
		}
		lbID = li.LBID
	}
	lb := c.activeLB(w, lbID)
	if lb == nil {
		return
	}
	if li != nil && c.immutable(w, "Listener", li.ID, li.Status) {
		return
	}
	if li != nil && li.PoolID != "" {
		writeErr(w, http.StatusConflict, "Listener "+li.ID+" is already using a default pool.")
		return
	}
	in := b.P.poolBody
	if len(in.Members) > 0 || in.Monitor != nil {
		// Octavia 11 builds a pool's members and monitor inline only within a load balancer's
		// fully populated create, as it does a listener's pool.
		writeErr(w, http.StatusInternalServerError, "'dict' object has no attribute '_sa_instance_state'")
		return
	}
	if li != nil {
		if msg := checkListener(listenerBody{Protocol: li.Protocol, Port: li.Port, TLSRef: li.TLSRef, DefaultPool: &in}, map[string]bool{},
			strings.Contains(lb.VipAddress, ":"), func(string) bool { return true }); msg != "" {
			writeErr(w, http.StatusBadRequest, "Validation failure: "+msg)
			return
		}
	}
	if msg := providerRefusesListener(lb.Provider, listenerBody{DefaultPool: &in}); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	if msg := providerRefusesAlgorithm(lb.Provider, in.Method); msg != "" {
		writeErr(w, http.StatusNotImplemented, msg)
		return
	}
	lid := ""
	if li != nil {
		lid = li.ID
	}
	po := c.addPool(lb.ID, lid, &in)
	if li != nil {
		li.PoolID = po.ID
	}
	c.busy(lb)
	writeJSON(w, http.StatusCreated, map[string]any{"pool": c.poolJSON(po)})
}

func (c *Cloud) deletePool(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Pool", p.ID, p.Status) {
		return
	}
	delete(c.monitors, p.MonitorID)
	delete(c.pools, p.ID)
	for _, l := range c.lis {
		if l.PoolID == p.ID {
			l.PoolID = ""
		}
	}
	c.busy(lb)
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cloud) listMembers(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	out := []any{}
	for _, m := range p.Members {
		v := map[string]any{"id": m.ID, "address": m.Address, "protocol_port": m.Port, "subnet_id": m.SubnetID,
			"pool_id": p.ID, "provisioning_status": statusOf(m.Status), "operating_status": "ONLINE", "weight": m.Weight, "backup": m.Backup,
			"admin_state_up": m.Up}
		if m.MonitorPort != 0 {
			v["monitor_port"] = m.MonitorPort
		}
		tags := m.Tags
		if tags == nil {
			tags = []string{}
		}
		v["tags"] = tags
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": out})
}

// batchMembers replaces the pool's members in one call (PUT /pools/{id}/members).
func (c *Cloud) batchMembers(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Pool", p.ID, p.Status) {
		return
	}
	var b struct {
		Members []memberBody `json:"members"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	for _, m := range b.Members {
		if msg := checkMember(m); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
	}
	p.Members = c.members(b.Members, p.Members)
	c.busy(lb)
	w.WriteHeader(http.StatusAccepted)
}

func (c *Cloud) deleteMember(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Pool", p.ID, p.Status) {
		return
	}
	for i, m := range p.Members {
		if m.ID == r.PathValue("member") {
			p.Members = append(p.Members[:i:i], p.Members[i+1:]...)
			c.busy(lb)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeErr(w, http.StatusNotFound, "Member not found.")
}

// updateMember changes one member (PUT /pools/{id}/members/{member}): the fields the body
// carries.
func (c *Cloud) updateMember(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	var m *member
	for _, pm := range p.Members {
		if pm.ID == r.PathValue("member") {
			m = pm
		}
	}
	if m == nil {
		writeErr(w, http.StatusNotFound, "Member not found.")
		return
	}
	if c.immutable(w, "Member", m.ID, m.Status) {
		return
	}
	var b struct {
		M struct {
			memberBody
			Address *string `json:"address"`
			Port    *int    `json:"protocol_port"`
		} `json:"member"`
	}
	if err := decode(r, &b); err != nil || b.M.Address != nil || b.M.Port != nil {
		writeErr(w, http.StatusBadRequest, "malformed request (a member's address and protocol_port cannot change)")
		return
	}
	if msg := checkMember(memberBody{Address: m.Address, Port: m.Port, Weight: b.M.Weight}); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	m.set(b.M.memberBody)
	if b.M.MonitorPort != nil {
		m.MonitorPort = *b.M.MonitorPort
	}
	if b.M.Tags != nil {
		m.Tags = b.M.Tags
	}
	c.busy(lb)
	writeJSON(w, http.StatusOK, map[string]any{"member": map[string]any{"id": m.ID, "address": m.Address, "protocol_port": m.Port,
		"weight": m.Weight, "backup": m.Backup, "admin_state_up": m.Up, "provisioning_status": "PENDING_UPDATE"}})
}

func (c *Cloud) updatePool(w http.ResponseWriter, r *http.Request) {
	p := c.pools[r.PathValue("id")]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Pool", p.ID, p.Status) {
		return
	}
	var b struct {
		P struct {
			Name, Description *string
			Method            *string `json:"lb_algorithm"`
			// Persistence: absent leaves it, null removes it, an object replaces it.
			Persistence  json.RawMessage `json:"session_persistence"`
			AdminStateUp *bool           `json:"admin_state_up"`
		} `json:"pool"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	setPersistence, sp := false, (*Persistence)(nil)
	if len(b.P.Persistence) > 0 {
		setPersistence = true
		if err := json.Unmarshal(b.P.Persistence, &sp); err != nil {
			writeErr(w, http.StatusBadRequest, "malformed session_persistence")
			return
		}
		if msg := checkPersistence(p.Protocol, sp); msg != "" {
			writeErr(w, http.StatusBadRequest, msg)
			return
		}
	}
	if b.P.Method != nil {
		if !methods[*b.P.Method] {
			writeErr(w, http.StatusBadRequest, "invalid lb_algorithm")
			return
		}
		if msg := providerRefusesAlgorithm(lb.Provider, *b.P.Method); msg != "" {
			writeErr(w, http.StatusNotImplemented, msg)
			return
		}
		p.Method = *b.P.Method
	}
	if setPersistence {
		p.Persistence = sp
	}
	if b.P.AdminStateUp != nil {
		p.Up = *b.P.AdminStateUp
	}
	if b.P.Name != nil {
		p.Name = *b.P.Name
	}
	if b.P.Description != nil {
		p.Description = *b.P.Description
	}
	c.busy(lb)
	writeJSON(w, http.StatusOK, map[string]any{"pool": c.poolJSON(p)})
}

func monitorJSON(m *monitor) map[string]any {
	return map[string]any{"id": m.ID, "type": m.Type, "delay": m.Delay, "timeout": m.Timeout, "max_retries": m.MaxRetries, "max_retries_down": m.MaxRetriesDown,
		"url_path": nullable(m.URLPath), "http_method": nullable(m.HTTPMethod), "expected_codes": nullable(m.ExpectedCodes),
		"pools": []any{map[string]any{"id": m.PoolID}}, "admin_state_up": m.Up, "provisioning_status": statusOf(m.Status)}
}

func (c *Cloud) listMonitors(w http.ResponseWriter, r *http.Request) {
	pid := r.URL.Query().Get("pool_id")
	out := []any{}
	for _, m := range c.monitors {
		if pid == "" || m.PoolID == pid {
			out = append(out, monitorJSON(m))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"healthmonitors": out})
}

func (c *Cloud) getMonitor(w http.ResponseWriter, r *http.Request) {
	m := c.monitors[r.PathValue("id")]
	if m == nil {
		writeErr(w, http.StatusNotFound, "Health Monitor not found.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"healthmonitor": monitorJSON(m)})
}

type monitorBody struct {
	PoolID     string  `json:"pool_id"`
	Type       *string `json:"type"`
	Delay      *int    `json:"delay"`
	Timeout    *int    `json:"timeout"`
	MaxRetries *int    `json:"max_retries"`
	URLPath    *string `json:"url_path"`
	// MaxRetriesDown: default 3 at creation.
	MaxRetriesDown *int `json:"max_retries_down"`
	// HTTPMethod, ExpectedCodes: HTTP and HTTPS monitors only (defaults GET, 200).
	HTTPMethod    *string `json:"http_method"`
	ExpectedCodes *string `json:"expected_codes"`
	AdminStateUp  *bool   `json:"admin_state_up"`
}

// apply sets the fields b carries and validates the result as Octavia does.
func (b monitorBody) apply(m *monitor) string {
	if b.Type != nil {
		m.Type = *b.Type
	}
	if b.Delay != nil {
		m.Delay = *b.Delay
	}
	if b.Timeout != nil {
		m.Timeout = *b.Timeout
	}
	if b.MaxRetries != nil {
		m.MaxRetries = *b.MaxRetries
	}
	if b.URLPath != nil {
		m.URLPath = *b.URLPath
	}
	if b.MaxRetriesDown != nil {
		m.MaxRetriesDown = *b.MaxRetriesDown
	}
	if m.MaxRetriesDown == 0 {
		m.MaxRetriesDown = 3
	}
	if b.HTTPMethod != nil {
		m.HTTPMethod = *b.HTTPMethod
	}
	if b.ExpectedCodes != nil {
		m.ExpectedCodes = *b.ExpectedCodes
	}
	if b.AdminStateUp != nil {
		m.Up = *b.AdminStateUp
	}
	if !monitorTypes[m.Type] || m.Delay < m.Timeout || m.Delay < 1 || m.MaxRetries < 1 || m.MaxRetries > 10 || m.MaxRetriesDown < 1 || m.MaxRetriesDown > 10 {
		return "invalid health monitor"
	}
	if msg := checkMonitorHTTP(m.Type, m.HTTPMethod, m.ExpectedCodes); msg != "" {
		return msg
	}
	m.httpDefaults()
	return ""
}

// httpMonitor: Octavia's monitor types that send an HTTP request (and have a method, codes and
// a path).
func httpMonitor(typ string) bool { return typ == "HTTP" || typ == "HTTPS" }

// httpDefaults gives an HTTP or HTTPS monitor what Octavia fills in when a create leaves it
// out: http_method GET, expected_codes 200, url_path /.
func (m *monitor) httpDefaults() {
	if !httpMonitor(m.Type) {
		return
	}
	if m.HTTPMethod == "" {
		m.HTTPMethod = "GET"
	}
	if m.ExpectedCodes == "" {
		m.ExpectedCodes = "200"
	}
	if m.URLPath == "" {
		m.URLPath = "/"
	}
}

// httpMethods are the http_method values Octavia accepts.
var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "TRACE": true, "OPTIONS": true, "PATCH": true, "CONNECT": true}

// checkMonitorHTTP validates a monitor's http_method and expected_codes as Octavia does: only
// on HTTP and HTTPS monitors, a known method, codes such as 200, 200,202 or 200-204.
func checkMonitorHTTP(typ, method, codes string) string {
	if !httpMonitor(typ) {
		if method != "" || codes != "" {
			return fmt.Sprintf("http_method and expected_codes are not valid options for health monitors of type %s", typ)
		}
		return ""
	}
	if method != "" && !httpMethods[method] {
		return fmt.Sprintf("Invalid input for field/attribute http_method. Value: '%s'.", method)
	}
	for _, part := range strings.FieldsFunc(codes, func(r rune) bool { return r == ',' || r == '-' }) {
		if len(part) != 3 || part < "100" || part > "599" || strings.Trim(part, "0123456789") != "" {
			return fmt.Sprintf("Invalid input for field/attribute expected_codes. Value: '%s'.", codes)
		}
	}
	return ""
}

func (c *Cloud) createMonitor(w http.ResponseWriter, r *http.Request) {
	var b struct {
		M monitorBody `json:"healthmonitor"`
	}
	if err := decode(r, &b); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed request")
		return
	}
	p := c.pools[b.M.PoolID]
	if p == nil {
		writeErr(w, http.StatusNotFound, "Pool not found.")
		return
	}
	lb := c.activeLB(w, p.LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "Pool", p.ID, p.Status) {
		return
	}
	if p.MonitorID != "" {
		writeErr(w, http.StatusConflict, "This pool already has a health monitor")
		return
	}
	m := &monitor{ID: c.nextID("hm"), PoolID: p.ID, Up: true}
	if msg := b.M.apply(m); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	if msg := providerRefusesMonitor(lb.Provider, m.Type); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	c.monitors[m.ID] = m
	p.MonitorID = m.ID
	c.busy(lb)
	writeJSON(w, http.StatusCreated, map[string]any{"healthmonitor": monitorJSON(m)})
}

func (c *Cloud) updateMonitor(w http.ResponseWriter, r *http.Request) {
	m := c.monitors[r.PathValue("id")]
	if m == nil {
		writeErr(w, http.StatusNotFound, "Health Monitor not found.")
		return
	}
	lb := c.activeLB(w, c.pools[m.PoolID].LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "HealthMonitor", m.ID, m.Status) {
		return
	}
	var b struct {
		M monitorBody `json:"healthmonitor"`
	}
	if err := decode(r, &b); err != nil || b.M.Type != nil {
		writeErr(w, http.StatusBadRequest, "malformed request (the type of a monitor cannot change)")
		return
	}
	next := *m
	if msg := b.M.apply(&next); msg != "" {
		writeErr(w, http.StatusBadRequest, msg)
		return
	}
	*m = next
	c.busy(lb)
	writeJSON(w, http.StatusOK, map[string]any{"healthmonitor": monitorJSON(m)})
}

func (c *Cloud) deleteMonitor(w http.ResponseWriter, r *http.Request) {
	m := c.monitors[r.PathValue("id")]
	if m == nil {
		writeErr(w, http.StatusNotFound, "Health Monitor not found.")
		return
	}
	lb := c.activeLB(w, c.pools[m.PoolID].LBID)
	if lb == nil {
		return
	}
	if c.immutable(w, "HealthMonitor", m.ID, m.Status) {
		return
	}
	delete(c.monitors, m.ID)
	c.pools[m.PoolID].MonitorID = ""
	c.busy(lb)
	w.WriteHeader(http.StatusNoContent)
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// statusOf is a child's provisioning_status as Octavia shows it.
func statusOf(s string) string {
	if s == "" {
		return "ACTIVE"
	}
	return s
}

// immutable answers 409 when the object is PENDING_*, as Octavia refuses every write to it.
func (c *Cloud) immutable(w http.ResponseWriter, kind, id, status string) bool {
	if !strings.HasPrefix(status, "PENDING_") {
		return false
	}
	writeErr(w, http.StatusConflict, fmt.Sprintf("%s %s is immutable and cannot be updated.", kind, id))
	return true
}

// leavePending leaves a listener of a fully populated create, with its pool, members and
// monitor, PENDING_CREATE for good (Options.NoJobboard).
func (c *Cloud) leavePending(li *listener) {
	li.Status = "PENDING_CREATE"
	p := c.pools[li.PoolID]
	if p == nil {
		return
	}
	p.Status = "PENDING_CREATE"
	for _, m := range p.Members {
		m.Status = "PENDING_CREATE"
	}
	if m := c.monitors[p.MonitorID]; m != nil {
		m.Status = "PENDING_CREATE"
	}
}
