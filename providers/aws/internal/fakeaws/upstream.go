package fakeaws

import (
	"crypto/sha1" //nolint:gosec // upstream's target group names are SHA-1 based; naming only
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The state the upstream AWS CCM (kubernetes/cloud-provider-aws, pkg/providers/v1) leaves for a
// Service of type LoadBalancer, written straight into the fake as it would be found after a
// switch to ccm. The shapes follow upstream's code (aws.go, aws_loadbalancer.go, tags.go):
//
//   - Name, classic ELB and NLB alike: cloudprovider.DefaultLoadBalancerName, "a" + the Service
//     UID without dashes, cut to 32 characters.
//   - Load balancer tags: kubernetes.io/service-name=<ns>/<name>, kubernetes.io/cluster/<id>=owned,
//     and KubernetesCluster=<id> when the cluster uses the legacy tag (buildTags).
//   - Classic ELB: one listener per port (TCP:port -> TCP:nodePort), scheme internet-facing, one
//     subnet per zone tagged kubernetes.io/role/elb, the instances, health check
//     TCP:<first nodePort> with interval 10, timeout 5, healthy 2, unhealthy 6; its own group
//     "k8s-elb-<lb name>", described "Security group for Kubernetes ELB <lb name> (<ns>/<name>)"
//     and tagged with the cluster tags only (no Service tag), admitting each port from the
//     source ranges (no description) and ICMP 3-4 (MTU discovery); in each node group one rule
//     for all protocols ("-1") from that group, without a description.
//   - NLB: the same tags; one target group per port named k8s-<ns:8>-<name:8>-<sha1:10>
//     (buildTargetGroupName) on the nodePort, tagged like the NLB, health check TCP on the
//     traffic port (interval 30, timeout 10, thresholds 3) or, for externalTrafficPolicy Local,
//     HTTP on the health check nodePort /healthz (interval 10, timeout 10, thresholds 2); a
//     listener per port forwarding to it, TLS with the ssl-cert on the TCP ports ssl-ports
//     names (all without it), its target group TLS too with backend-protocol "ssl" (the
//     protocol is in the name's hash); in each node group, per nodePort and client range, a
//     rule described "kubernetes.io/rule/nlb/client=<lb name>", a health rule
//     "kubernetes.io/rule/nlb/health=<lb name>" on the health port from the NLB's subnet CIDRs
//     unless the client rule already covers it (0.0.0.0/0, TCP, same port), and ICMP 3-4 from
//     each client range described "kubernetes.io/rule/nlb/mtu" (shared by every NLB); with
//     NLBSecurityGroupMode = Managed, a group of its own attached at creation (ManagedSG).

// UpstreamPort is one Service port as upstream maps it.
type UpstreamPort struct {
	Protocol       string // TCP or UDP
	Port, NodePort int
}

// UpstreamService is what the upstream CCM was given for one Service.
type UpstreamService struct {
	Cluster         string // the cluster ID (KubernetesClusterID or the instance's cluster tag)
	LegacyTag       bool   // the cluster uses the legacy KubernetesCluster tag as well
	Namespace, Name string
	UID             string
	NLB             bool
	Ports           []UpstreamPort
	Instances       []string
	NodeGroups      []string // the node security groups upstream added its rules to
	SourceRanges    []string // default 0.0.0.0/0
	// HealthCheckNodePort is set for externalTrafficPolicy Local.
	HealthCheckNodePort int
	// SSLCert (ssl-cert) makes the NLB's TCP ports in SSLPorts (ssl-ports; empty: all) TLS
	// listeners with that certificate; BackendSSL (backend-protocol "ssl") makes their target
	// groups TLS as well, the protocol in the name's hash.
	SSLCert    string
	SSLPorts   []int
	BackendSSL bool
	// ManagedSG: upstream ran with NLBSecurityGroupMode = Managed (v1.35.0 and later): the NLB
	// was created with a group of its own, named from ClusterName (the controller manager's
	// --cluster-name, default "kubernetes") and the Service (UpstreamNLBGroupName).
	ManagedSG   bool
	ClusterName string
	// BYOGroups: upstream ran in Managed mode (HEAD, after v1.35) with the security-groups
	// annotation naming these groups: the NLB was created with them, no group of its own was
	// made, and no rule or tag was written into them.
	BYOGroups []string
}

// UpstreamNLBGroupDescription is the description of every group upstream's Managed mode makes.
const UpstreamNLBGroupDescription = "[k8s] Managed SecurityGroup for LoadBalancer"

// UpstreamNLBGroupName is the name upstream's Managed mode gives an NLB's group
// (GetSecurityGroupNameForNLB): k8s-<ns:8>-<name:8>-<sha256 of cluster name, Service name,
// namespace and UID, 10 hex digits>.
func UpstreamNLBGroupName(clusterName, ns, name, uid string) string {
	h := sha256.New()
	for _, s := range []string{clusterName, name, ns, uid} {
		_, _ = h.Write([]byte(s))
	}
	return upstreamK8sName(ns, name, h.Sum(nil))
}

// UpstreamLBName is upstream's load balancer name for a Service UID.
func UpstreamLBName(uid string) string {
	n := "a" + strings.ReplaceAll(uid, "-", "")
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

var nonAlnum = regexp.MustCompile("[^[:alnum:]]")

// upstreamK8sName is the shape upstream gives its NLB groups and target groups:
// k8s-<namespace, alphanumerics, 8>-<name, alphanumerics, 8>-<10 hex digits of sum>.
func upstreamK8sName(ns, name string, sum []byte) string {
	cut := func(s string, n int) string {
		if len(s) > n {
			return s[:n]
		}
		return s
	}
	return fmt.Sprintf("k8s-%s-%s-%s", cut(nonAlnum.ReplaceAllString(ns, ""), 8), cut(nonAlnum.ReplaceAllString(name, ""), 8), hex.EncodeToString(sum)[:10])
}

// UpstreamTargetGroupName is upstream's target group name for one port (buildTargetGroupName:
// the hash covers the cluster, Service, ports, protocols, target type and health check).
func UpstreamTargetGroupName(cluster, ns, name string, port, nodePort int, protocol, hcProtocol string, hcInterval int) string {
	h := sha1.New() //nolint:gosec // naming only
	for _, s := range []string{cluster, ns, name, strconv.Itoa(port), strconv.Itoa(nodePort), protocol, "instance", hcProtocol, strconv.Itoa(hcInterval)} {
		_, _ = h.Write([]byte(s))
	}
	return upstreamK8sName(ns, name, h.Sum(nil))
}

// UpstreamTags are the tags upstream puts on a Service's load balancer and target groups.
func UpstreamTags(u UpstreamService) map[string]string {
	t := map[string]string{"kubernetes.io/service-name": u.Namespace + "/" + u.Name, "kubernetes.io/cluster/" + u.Cluster: "owned"}
	if u.LegacyTag {
		t["KubernetesCluster"] = u.Cluster
	}
	return t
}

// NLBRuleDescription is upstream's description of an NLB node rule ("client", "health").
func NLBRuleDescription(kind, lbName string) string {
	return "kubernetes.io/rule/nlb/" + kind + "=" + lbName
}

// NLBMTUDescription describes upstream's ICMP rule, shared by every NLB.
const NLBMTUDescription = "kubernetes.io/rule/nlb/mtu"

// SeedUpstream writes u's load balancer as the upstream CCM leaves it and returns its DNS name.
// Nothing is counted as a call.
func (s *Server) SeedUpstream(u UpstreamService) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(u.SourceRanges) == 0 {
		u.SourceRanges = []string{"0.0.0.0/0"}
	}
	name := UpstreamLBName(u.UID)
	subnets := s.elbSubnetsLocked()
	tags := UpstreamTags(u)
	s.seq++
	if !u.NLB {
		sg := s.newID("sg")
		clusterTags := map[string]string{"kubernetes.io/cluster/" + u.Cluster: "owned"}
		if u.LegacyTag {
			clusterTags["KubernetesCluster"] = u.Cluster
		}
		g := &SecurityGroup{ID: sg, Name: "k8s-elb-" + name, VPC: VPC,
			Description: fmt.Sprintf("Security group for Kubernetes ELB %s (%s/%s)", name, u.Namespace, u.Name)}
		for _, cidr := range u.SourceRanges {
			for _, p := range u.Ports {
				g.Rules = append(g.Rules, Rule{Protocol: strings.ToLower(p.Protocol), From: p.Port, To: p.Port, CIDR: cidr})
			}
			g.Rules = append(g.Rules, Rule{Protocol: "icmp", From: 3, To: 4, CIDR: cidr})
		}
		s.groups[sg], s.tags[sg] = g, clusterTags
		lb := &ClassicLB{Name: name, DNSName: fmt.Sprintf("%s-%d.us-east-1.elb.amazonaws.com", name, s.seq), Scheme: "internet-facing",
			Subnets: subnets, SecurityGroups: []string{sg}, Instances: slices.Clone(u.Instances), Tags: tags, Attributes: defaultELBAttributes,
			HealthCheck: HealthCheck{Target: fmt.Sprintf("TCP:%d", u.Ports[0].NodePort), Interval: 10, Timeout: 5, Healthy: 2, Unhealthy: 6}}
		if u.HealthCheckNodePort != 0 {
			lb.HealthCheck.Target = fmt.Sprintf("HTTP:%d/healthz", u.HealthCheckNodePort)
		}
		for _, p := range u.Ports {
			lb.Listeners = append(lb.Listeners, Listener{Protocol: "TCP", InstanceProtocol: "TCP", Port: p.Port, InstancePort: p.NodePort})
		}
		s.elbs[name] = lb
		for _, ng := range u.NodeGroups {
			if g, ok := s.groups[ng]; ok {
				g.Rules = append(g.Rules, Rule{Protocol: "-1", SourceSG: sg})
			}
		}
		return lb.DNSName
	}
	lb := &NLB{ARN: s.arn("loadbalancer/net", name), Name: name, Scheme: "internet-facing", Subnets: subnets, Tags: tags,
		DNSName: fmt.Sprintf("%s-%08x.elb.us-east-1.amazonaws.com", name, s.seq), readyAt: time.Now()}
	s.nlbs[lb.ARN] = lb
	if len(u.BYOGroups) > 0 {
		lb.SecurityGroups = slices.Clone(u.BYOGroups)
	} else if u.ManagedSG {
		// Its group: the cluster tags only, each listener port (lower-cased listener protocol)
		// and ICMP 3-4 from each source range; EC2's default egress rule.
		cn := u.ClusterName
		if cn == "" {
			cn = "kubernetes"
		}
		sg := s.newID("sg")
		g := &SecurityGroup{ID: sg, Name: UpstreamNLBGroupName(cn, u.Namespace, u.Name, u.UID), VPC: VPC, Description: UpstreamNLBGroupDescription}
		for _, cidr := range u.SourceRanges {
			for _, p := range u.Ports {
				g.Rules = append(g.Rules, Rule{Protocol: strings.ToLower(p.Protocol), From: p.Port, To: p.Port, CIDR: cidr})
			}
			g.Rules = append(g.Rules, Rule{Protocol: "icmp", From: 3, To: 4, CIDR: cidr})
		}
		clusterTags := map[string]string{"kubernetes.io/cluster/" + u.Cluster: "owned"}
		if u.LegacyTag {
			clusterTags["KubernetesCluster"] = u.Cluster
		}
		s.groups[sg], s.tags[sg] = g, clusterTags
		lb.SecurityGroups = []string{sg}
	}
	hcProto, hcPort, hcPath, interval, thresholds := "TCP", "traffic-port", "", 30, "3/3/30/10"
	if u.HealthCheckNodePort != 0 {
		hcProto, hcPort, hcPath, interval, thresholds = "HTTP", strconv.Itoa(u.HealthCheckNodePort), "/healthz", 10, "2/2/10/10"
	}
	clientPorts, healthPorts := map[int]bool{}, map[int]bool{}
	clientProto := "tcp"
	for _, p := range u.Ports {
		front, back := p.Protocol, p.Protocol
		tls := u.SSLCert != "" && p.Protocol == "TCP" && (len(u.SSLPorts) == 0 || slices.Contains(u.SSLPorts, p.Port))
		if tls {
			front = "TLS"
			if u.BackendSSL {
				back = "TLS"
			}
		}
		tgName := UpstreamTargetGroupName(u.Cluster, u.Namespace, u.Name, p.Port, p.NodePort, back, hcProto, interval)
		tg := &TargetGroup{ARN: s.arn("targetgroup", tgName), Name: tgName, Protocol: back, Port: p.NodePort, VPC: VPC,
			HealthProtocol: hcProto, HealthPort: hcPort, HealthPath: hcPath, HealthThresholds: thresholds,
			Targets: slices.Clone(u.Instances), Tags: maps.Clone(tags)}
		s.tgs[tg.ARN] = tg
		l := &NLBListener{ARN: s.arn("listener/net", name), LB: lb.ARN, Protocol: front, TargetGroup: tg.ARN, Port: p.Port}
		if tls {
			l.Cert, l.SSLPolicy = u.SSLCert, "ELBSecurityPolicy-2016-08" // ELBv2's default: upstream names none
		}
		s.listeners[l.ARN] = l
		clientPorts[p.NodePort] = true
		hp := p.NodePort
		if u.HealthCheckNodePort != 0 {
			hp = u.HealthCheckNodePort
		}
		healthPorts[hp] = true
		if p.Protocol == "UDP" {
			clientProto = "udp"
		}
	}
	var subnetCIDRs []string
	for _, id := range subnets {
		subnetCIDRs = append(subnetCIDRs, s.subnets[id].CIDR)
	}
	covered := len(u.SourceRanges) == 1 && u.SourceRanges[0] == "0.0.0.0/0" && clientProto == "tcp" && maps.Equal(clientPorts, healthPorts)
	for _, ng := range u.NodeGroups {
		g, ok := s.groups[ng]
		if !ok {
			continue
		}
		add := func(r Rule) {
			if !slices.ContainsFunc(g.Rules, func(o Rule) bool { return o.key() == r.key() }) {
				g.Rules = append(g.Rules, r)
			}
		}
		if !covered {
			for _, port := range slices.Sorted(maps.Keys(healthPorts)) {
				for _, cidr := range subnetCIDRs {
					add(Rule{Protocol: "tcp", From: port, To: port, CIDR: cidr, Description: NLBRuleDescription("health", name)})
				}
			}
		}
		for _, port := range slices.Sorted(maps.Keys(clientPorts)) {
			for _, cidr := range u.SourceRanges {
				add(Rule{Protocol: clientProto, From: port, To: port, CIDR: cidr, Description: NLBRuleDescription("client", name)})
			}
		}
		for _, cidr := range u.SourceRanges {
			add(Rule{Protocol: "icmp", From: 3, To: 4, CIDR: cidr, Description: NLBMTUDescription})
		}
	}
	return lb.DNSName
}

// elbSubnetsLocked are the subnets upstream picks for an internet-facing load balancer: those
// tagged kubernetes.io/role/elb, one per zone (the lowest ID).
func (s *Server) elbSubnetsLocked() []string {
	byZone := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(s.subnets)) {
		sn := s.subnets[id]
		if _, ok := s.tags[id]["kubernetes.io/role/elb"]; !ok {
			continue
		}
		if _, seen := byZone[sn.Zone]; !seen {
			byZone[sn.Zone] = id
		}
	}
	return slices.Sorted(maps.Values(byZone))
}

// TargetGroups returns copies of every target group.
func (s *Server) TargetGroups() []TargetGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TargetGroup
	for _, tg := range s.tgs {
		c := *tg
		c.Tags, c.Targets = maps.Clone(tg.Tags), slices.Clone(tg.Targets)
		out = append(out, c)
	}
	return out
}

// SecurityGroups returns copies of every security group with its tags.
func (s *Server) SecurityGroups() []SecurityGroupWithTags {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SecurityGroupWithTags
	for id, g := range s.groups {
		c := *g
		c.Rules = slices.Clone(g.Rules)
		out = append(out, SecurityGroupWithTags{SecurityGroup: c, Tags: maps.Clone(s.tags[id])})
	}
	return out
}

// SecurityGroupWithTags is a group and its tags.
type SecurityGroupWithTags struct {
	SecurityGroup
	Tags map[string]string
}
