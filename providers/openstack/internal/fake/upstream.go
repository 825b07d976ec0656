package fake

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The state the upstream CCM (kubernetes/cloud-provider-openstack, pkg/openstack) leaves in
// the cloud for a Service, written straight into the fake (no call counted), so tests can start
// ccm on a cloud upstream managed. Shapes as upstream writes them:
//   - load balancer "kube_service_<cluster>_<namespace>_<name>" (cut to 255), description
//     "Kubernetes external service <ns>/<name> from cluster <cluster>", tags [its own name]
//     (plus the name of each Service sharing it);
//   - per port i: listener "listener_<i>_<lb name>" tagged [<lb name>] (no description),
//     its default pool "pool_<i>_<lb name>" (ROUND_ROBIN, SOURCE_IP_PORT with ovn; no
//     description) with one member per node (name = node name, protocol_port = NodePort,
//     subnet = member subnet), and
//     session_persistence SOURCE_IP for sessionAffinity ClientIP (none otherwise);
//   - a floating IP described "Floating IP for Kubernetes external service <ns>/<name> from
//     cluster <cluster>" on the VIP port, unless internal;
//   - with manage-security-groups: group "lb-sg-<uid>-<ns>-<name>" described "Security Group
//     for <ns>/<name> Service LoadBalancer in cluster <cluster>", one ingress rule per NodePort
//     from the member subnet's CIDR (no description), attached to the member nodes' ports.

// UpstreamService is one Service as the upstream CCM served it.
type UpstreamService struct {
	Cluster, Namespace, Name, UID string
	Ports                         []UpstreamPort
	// Nodes are the members: node name -> address on the private subnet.
	Nodes map[string]string
	// Internal: no floating IP (the address is the VIP).
	Internal bool
	// SecurityGroupPorts, when set (manage-security-groups = true), are the Neutron ports of
	// the nodes that upstream attached the Service's group to.
	SecurityGroupPorts []string
	// Monitor (create-monitor = true): a health monitor per pool with upstream's defaults
	// (delay 5, timeout 3, max_retries 1) of the port's protocol: TCP (also on the HTTP pool
	// of x-forwarded-for or TLS), UDP-CONNECT for UDP, SCTP for SCTP; with
	// HealthCheckNodePort (externalTrafficPolicy Local) HTTP GET /healthz, and members get it
	// as their monitor_port.
	Monitor             bool
	HealthCheckNodePort int
	// UserFloatingIP, when set, is the address of a floating IP a user allocated (no
	// description) and named in spec.loadBalancerIP; upstream associated it with the VIP.
	UserFloatingIP string
	// Early: as early upstream versions left it, before Octavia tags and shared load
	// balancers: the load balancer named "a" + the UID without dashes (cut to 32), no tags
	// on it or its listeners, and no load-balancer-id annotation written.
	Early bool
	// XForwardedFor (loadbalancer.openstack.org/x-forwarded-for): upstream makes every
	// listener HTTP with insert_headers X-Forwarded-For=true, and every pool HTTP.
	XForwardedFor bool
	// TLSContainerRef (default-tls-container-ref): upstream makes every listener
	// TERMINATED_HTTPS with it (with X-Forwarded-For when XForwardedFor), every pool HTTP.
	TLSContainerRef string
	// IPv6: the Service's first IP family (spec.ipFamilies[0]) is IPv6. Upstream serves a
	// Service, dual-stack or not, on one load balancer of that family: its VIP on the IPv6
	// subnet, no floating IP (upstream skips it for IPv6), members at the nodes' IPv6
	// addresses (Nodes must give them).
	IPv6 bool
	// Provider is the load balancer's Octavia provider (lb-provider), default amphora. With
	// "ovn" upstream makes no HTTP monitors (ovn-octavia-provider has none): its pools keep
	// the port's type even for externalTrafficPolicy Local, members get no monitor_port, and
	// pools balance by SOURCE_IP_PORT, the only algorithm the provider has.
	Provider string
	// MonitorDelay, MonitorTimeout, MonitorMaxRetries, MonitorMaxRetriesDown: the
	// health-monitor-* annotations upstream applied (0: its defaults 5, 3, 1, 3).
	MonitorDelay, MonitorTimeout, MonitorMaxRetries, MonitorMaxRetriesDown int
	// ConnLimit and the Timeout* fields: the connection-limit and timeout-* annotations
	// upstream set on every listener (nil: Octavia's defaults, which upstream writes too).
	ConnLimit, TimeoutClientData, TimeoutMemberConnect, TimeoutMemberData, TimeoutTCPInspect *int
	// FlavorID and AvailabilityZone: the flavor-id and availability-zone upstream created the
	// load balancer with (annotation or [LoadBalancer] key).
	FlavorID, AvailabilityZone string
	// ClientIP: the Service's sessionAffinity is ClientIP; upstream creates every pool with
	// session_persistence SOURCE_IP (whatever the pool's protocol), else with none.
	ClientIP bool
	// VipPortID (loadbalancer.openstack.org/port-id): a port the user made (AddPort), the
	// load balancer's VIP port; its address is the VIP.
	VipPortID string
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// UpstreamPort is one Service port.
type UpstreamPort struct {
	Protocol       string // TCP, UDP, SCTP
	Port, NodePort int
}

// UpstreamLBName is the upstream CCM's load balancer name.
func UpstreamLBName(cluster, namespace, name string) string {
	return cut255(fmt.Sprintf("kube_service_%s_%s_%s", cluster, namespace, name))
}

// UpstreamSGName is the upstream CCM's security group name for a Service.
func UpstreamSGName(uid, namespace, name string) string {
	return cut255(fmt.Sprintf("lb-sg-%s-%s-%s", uid, namespace, name))
}

func cut255(s string) string {
	if len(s) > 255 {
		return s[:255]
	}
	return s
}

// SeedUpstream writes s's load balancer, listeners, pools, members, floating IP and (with
// SecurityGroupPorts) security group as the upstream CCM leaves them, and returns the load
// balancer's ID and the Service's address (floating IP, or VIP when internal).
func (c *Cloud) SeedUpstream(s UpstreamService) (lbID, address string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, tags := UpstreamLBName(s.Cluster, s.Namespace, s.Name), []string{UpstreamLBName(s.Cluster, s.Namespace, s.Name)}
	if s.Early {
		name, tags = strings.ReplaceAll("a"+s.UID, "-", ""), nil
		if len(name) > 32 {
			name = name[:32]
		}
	}
	c.vipSeq++
	vip, vipSubnet := fmt.Sprintf("10.0.%d.%d", 200+c.vipSeq/250, c.vipSeq%250+1), PrivateSubnetID
	if s.IPv6 {
		vip, vipSubnet = fmt.Sprintf("fd00::2:%x", c.vipSeq), PrivateSubnetV6ID
	}
	lb := &loadBalancer{ID: c.nextID("lb"), Name: name, Description: fmt.Sprintf("Kubernetes external service %s/%s from cluster %s", s.Namespace, s.Name, s.Cluster),
		Status: "ACTIVE", VipAddress: vip, VipSubnetID: vipSubnet, VipNetworkID: PrivateNetworkID,
		Provider: "amphora", created: time.Now(), Tags: tags, FlavorID: s.FlavorID, AvailabilityZone: s.AvailabilityZone}
	if s.Provider != "" {
		lb.Provider = s.Provider
	}
	vp := c.ports[s.VipPortID]
	if vp != nil {
		lb.VipAddress, lb.VipSubnetID, lb.VipNetworkID = vp.FixedIPs[0].IPAddress, vp.FixedIPs[0].SubnetID, vp.NetworkID
	} else {
		vp = &port{ID: c.nextID("port"), NetworkID: PrivateNetworkID, DeviceID: "lb-" + lb.ID, DeviceOwner: "Octavia",
			FixedIPs: []fixedIP{{SubnetID: vipSubnet, IPAddress: lb.VipAddress}}}
		c.ports[vp.ID] = vp
	}
	lb.VipPortID = vp.ID
	c.lbs[lb.ID] = lb
	c.seedListeners(lb, s)
	address = lb.VipAddress
	if !s.Internal && !s.IPv6 {
		c.fipSeq++
		f := &floatingIP{ID: c.nextID("fip"), FloatingIP: fmt.Sprintf("172.24.4.%d", 100+c.fipSeq%150), NetworkID: PublicNetworkID,
			PortID: vp.ID, FixedIP: lb.VipAddress, Status: "ACTIVE",
			Description: fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", s.Namespace, s.Name, s.Cluster)}
		if s.UserFloatingIP != "" {
			f.FloatingIP, f.Description = s.UserFloatingIP, ""
		}
		c.fips[f.ID] = f
		address = f.FloatingIP
	}
	c.seedGroup(s)
	return lb.ID, address
}

// ShareUpstream adds s's listeners to load balancer lbID as the upstream CCM does for a Service
// naming it by load-balancer-id (a shared load balancer): its listeners tagged with s's own
// load balancer name, which is added to the load balancer's tags; its group as SeedUpstream.
func (c *Cloud) ShareUpstream(lbID string, s UpstreamService) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lb := c.lbs[lbID]
	if lb == nil {
		return
	}
	c.seedListeners(lb, s)
	lb.Tags = append(lb.Tags, UpstreamLBName(s.Cluster, s.Namespace, s.Name))
	c.seedGroup(s)
}

// upstreamMethod is the lb_algorithm upstream gives its pools: SOURCE_IP_PORT with the ovn
// provider (the only one it accepts), else its default lb-method.
func upstreamMethod(provider string) string {
	if provider == "ovn" {
		return "SOURCE_IP_PORT"
	}
	return "ROUND_ROBIN"
}

// seedListeners adds s's listeners to lb. Callers hold c.mu.
func (c *Cloud) seedListeners(lb *loadBalancer, s UpstreamService) {
	own := UpstreamLBName(s.Cluster, s.Namespace, s.Name)
	for i, p := range s.Ports {
		var ms []memberBody
		for _, node := range sortedKeys(s.Nodes) {
			m := memberBody{Address: s.Nodes[node], Port: p.NodePort, SubnetID: PrivateSubnetID}
			if s.IPv6 {
				m.SubnetID = PrivateSubnetV6ID
			}
			if s.Monitor && s.HealthCheckNodePort > 0 && s.Provider != "ovn" {
				hc := s.HealthCheckNodePort
				m.MonitorPort = &hc
			}
			ms = append(ms, m)
		}
		proto := strings.ToUpper(p.Protocol)
		lproto, hs := proto, map[string]string(nil)
		if s.XForwardedFor {
			proto, lproto, hs = "HTTP", "HTTP", map[string]string{"X-Forwarded-For": "true"}
		}
		if s.TLSContainerRef != "" {
			proto, lproto = "HTTP", "TERMINATED_HTTPS"
		}
		pb := &poolBody{Name: cut255(fmt.Sprintf("pool_%d_%s", i, own)), Method: upstreamMethod(s.Provider), Protocol: proto, Members: ms}
		if s.ClientIP {
			pb.Persistence = &Persistence{Type: "SOURCE_IP"}
		}
		if s.Monitor {
			// The type is the Service port's protocol, not the pool's: TCP on the HTTP pool
			// behind x-forwarded-for or TLS (upstream's buildMonitorCreateOpts).
			pb.Monitor = &PoolMonitor{Type: strings.ToUpper(p.Protocol), Delay: or(s.MonitorDelay, 5), Timeout: or(s.MonitorTimeout, 3), MaxRetries: or(s.MonitorMaxRetries, 1),
				MaxRetriesDown: or(s.MonitorMaxRetriesDown, 3)}
			switch {
			case s.HealthCheckNodePort > 0 && s.Provider != "ovn":
				// upstream sends the method and codes explicitly (Octavia's defaults too)
				pb.Monitor.Type, pb.Monitor.URLPath, pb.Monitor.HTTPMethod, pb.Monitor.ExpectedCodes = "HTTP", "/healthz", "GET", "200"
			case pb.Monitor.Type == "UDP":
				pb.Monitor.Type = "UDP-CONNECT"
			}
		}
		lt := []string{own}
		if s.Early {
			lt = nil
		}
		li := c.addListener(lb.ID, listenerBody{Name: cut255(fmt.Sprintf("listener_%d_%s", i, own)), Protocol: lproto, Port: p.Port, Tags: lt,
			DefaultPool: pb, InsertHeaders: hs, TLSRef: s.TLSContainerRef,
			listenerLimits: listenerLimits{s.ConnLimit, s.TimeoutClientData, s.TimeoutMemberConnect, s.TimeoutMemberData, s.TimeoutTCPInspect}})
		li.AllowedCIDRs = []string{"0.0.0.0/0"} // upstream sets the default source range explicitly
		if s.IPv6 {
			li.AllowedCIDRs = []string{"::/0"}
		}
	}
}

// seedGroup writes s's security group, rules and attachments. Callers hold c.mu.
func (c *Cloud) seedGroup(s UpstreamService) {
	if len(s.SecurityGroupPorts) == 0 {
		return
	}
	g := c.newGroup(UpstreamSGName(s.UID, s.Namespace, s.Name),
		fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", s.Namespace, s.Name, s.Cluster))
	cidr := c.subnets[PrivateSubnetID].CIDR
	for _, p := range s.Ports {
		np := p.NodePort
		r := &sgRule{ID: c.nextID("sgr"), GroupID: g.ID, Direction: "ingress", EtherType: "IPv4", Protocol: strings.ToLower(p.Protocol),
			RemoteIPPrefix: cidr, PortMin: &np, PortMax: &np}
		c.sgRules[r.ID] = r
	}
	for _, pid := range s.SecurityGroupPorts {
		if p := c.ports[pid]; p != nil {
			c.setPortGroups(p, append(append([]string(nil), p.SecurityGroups...), g.ID))
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
