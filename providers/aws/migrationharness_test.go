package aws

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// The migration part of the harness: the fake seeded as the upstream AWS CCM leaves it
// (fakeaws.SeedUpstream, whose comment lists upstream's shapes: names, tags, the ELB's
// k8s-elb-* group and its rules, the node rules, target groups, listeners).

// upstreamOf is what the upstream CCM was given for svc in cluster.
func (h *harness) upstreamOf(cluster string, svc *v1.Service, nodes []*v1.Node) fakeaws.UpstreamService {
	// ClusterName: upstream derives its NLB group's name from the --cluster-name, the name the
	// service controller passes to every call, here the cluster's.
	u := fakeaws.UpstreamService{Cluster: cluster, ClusterName: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID),
		NLB: h.upstreamNLB, NodeGroups: []string{fakeaws.NodeGroup}, ManagedSG: h.managedSG}
	for _, p := range svc.Spec.Ports {
		u.Ports = append(u.Ports, fakeaws.UpstreamPort{Protocol: string(p.Protocol), Port: int(p.Port), NodePort: int(p.NodePort)})
	}
	u.SourceRanges = svc.Spec.LoadBalancerSourceRanges
	// ssl-cert, ssl-ports (numbers or names) and backend-protocol "ssl", as upstream reads them
	// (getPortSets: "" or "*" every port, else the items as written, a number when Atoi reads one).
	if cert := svc.Annotations[annotations.Prefix+annotations.SSLCert]; cert != "" {
		u.SSLCert, u.BackendSSL = cert, svc.Annotations[annotations.Prefix+annotations.Backend] == "ssl"
		if v := svc.Annotations[annotations.Prefix+annotations.SSLPorts]; v != "" && v != "*" {
			for _, s := range strings.Split(v, ",") {
				n, err := strconv.Atoi(s)
				for _, p := range svc.Spec.Ports {
					if (err == nil && n == int(p.Port)) || (err != nil && s == p.Name) {
						u.SSLPorts = append(u.SSLPorts, int(p.Port))
					}
				}
			}
		}
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		u.HealthCheckNodePort = int(svc.Spec.HealthCheckNodePort)
	}
	h.mu.Lock()
	for _, n := range nodes {
		u.Instances = append(u.Instances, h.ids[n.Name])
	}
	h.mu.Unlock()
	return u
}

// SeedUpstream leaves upstream's load balancer for each Service and returns the Services as
// the API server holds them: the NLB annotation (for NLBs) and the DNS name in the status.
func (h *harness) SeedUpstream(t cloudtest.T, cluster string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service {
	var out []*v1.Service
	for _, svc := range svcs {
		svc = svc.DeepCopy()
		if h.upstreamNLB {
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[annotations.Prefix+annotations.Type] = "nlb"
		}
		dns := h.fake.SeedUpstream(h.upstreamOf(cluster, svc, nodes))
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{Hostname: strings.ToLower(dns)}}
		out = append(out, svc)
	}
	return out
}

// MigrationCounts: creates of load balancers (classic and v2); deletes of load balancers,
// listeners, target groups and members (instances, targets).
func (h *harness) MigrationCounts() (creates, deletes int) {
	return servingChanges(h.fake.Calls())
}

func servingChanges(calls map[string]int) (creates, deletes int) {
	for op, n := range calls {
		switch op {
		case "elb:CreateLoadBalancer", "elbv2:CreateLoadBalancer":
			creates += n
		case "elb:DeleteLoadBalancer", "elbv2:DeleteLoadBalancer", "elb:DeleteLoadBalancerListeners", "elbv2:DeleteListener",
			"elbv2:DeleteTargetGroup", "elb:DeregisterInstancesFromLoadBalancer", "elbv2:DeregisterTargets":
			deletes += n
		}
	}
	return creates, deletes
}

// Leftovers: what upstream made for svc that ccm neither took over nor retired: its ELB group
// without ccm's ownership tags, its all-traffic node rule from that group, its NLB node rules
// still described as upstream's, its target groups without ccm's tags.
func (h *harness) Leftovers(t cloudtest.T, cluster string, svc *v1.Service) []string {
	up := fakeaws.UpstreamLBName(string(svc.UID))
	id := ownership.Of(cluster, svc)
	var out []string
	var elbGroup string
	nlbGroup := fakeaws.UpstreamNLBGroupName(cluster, svc.Namespace, svc.Name, string(svc.UID))
	for _, g := range h.fake.SecurityGroups() {
		if g.Name == "k8s-elb-"+up {
			elbGroup = g.ID
		}
		// The ELB's group, and with NLBSecurityGroupMode = Managed the NLB's, taken over.
		if (g.Name == "k8s-elb-"+up || (h.managedSG && g.Name == nlbGroup)) && !ownership.Is(id, g.Tags) {
			out = append(out, fmt.Sprintf("security group %s (%s)", g.Name, g.Description))
		}
	}
	for _, g := range h.fake.SecurityGroups() {
		for _, r := range g.Rules {
			if (elbGroup != "" && r.SourceSG == elbGroup && r.Protocol == "-1") ||
				r.Description == fakeaws.NLBRuleDescription("client", up) || r.Description == fakeaws.NLBRuleDescription("health", up) {
				out = append(out, fmt.Sprintf("rule %s in %s", r, g.ID))
			}
		}
	}
	for _, tg := range h.fake.TargetGroups() {
		if tg.Tags[ownership.ServiceTag] == id.Service() && !ownership.Is(id, tg.Tags) || (ownership.Is(id, tg.Tags) && tg.Tags[ownership.ServiceUIDTag] == "") {
			out = append(out, "target group "+tg.Name)
		}
	}
	return out
}

// Remains: the Service's load balancers (ccm's name or upstream's), target groups and groups
// made for it, and every rule described as its own (ccm's or upstream's) or from its groups.
func (h *harness) Remains(t cloudtest.T, cluster string, svc *v1.Service) []string {
	up := fakeaws.UpstreamLBName(string(svc.UID))
	own := lbname.AWSELB.Name(cluster, svc.Namespace, svc.Name)
	id := ownership.Of(cluster, svc)
	var out []string
	for _, n := range []string{own, up} {
		if _, ok := h.fake.ClassicLB(n); ok {
			out = append(out, "elb "+n)
		}
		if _, _, _, ok := h.fake.NLBByName(n); ok {
			out = append(out, "nlb "+n)
		}
	}
	for _, tg := range h.fake.TargetGroups() {
		if tg.Tags[ownership.ServiceTag] == id.Service() {
			out = append(out, "target group "+tg.Name)
		}
	}
	var groups []string
	for _, g := range h.fake.SecurityGroups() {
		if g.Name == groupName(own) || g.Name == groupName(up) || g.Name == nlbGroupName(own) || g.Name == nlbGroupName(up) ||
			g.Name == fakeaws.UpstreamNLBGroupName(cluster, svc.Namespace, svc.Name, string(svc.UID)) {
			groups = append(groups, g.ID)
			out = append(out, "security group "+g.Name)
		}
	}
	for _, g := range h.fake.SecurityGroups() {
		for _, r := range g.Rules {
			if slices.Contains(groups, r.SourceSG) || ownership.DescribedBy(id, r.Description) ||
				r.Description == fakeaws.NLBRuleDescription("client", up) || r.Description == fakeaws.NLBRuleDescription("health", up) {
				out = append(out, fmt.Sprintf("rule %s in %s", r, g.ID))
			}
		}
	}
	return out
}

var _ cloudtest.MigrationHarness = (*harness)(nil)

// runCheck runs one check of the conformance suite by name.
func runCheck(t *testing.T, name string, c cloudtest.Config) {
	for _, check := range cloudtest.Checks {
		if check.Name == name {
			check.Run(t, c)
			return
		}
	}
	t.Fatalf("no conformance check %q", name)
}

// The conformance suite's migration check (TestConformance runs it for classic ELBs) with the
// upstream CCM's NLBs.
func TestConformanceMigrationNLB(t *testing.T) {
	h := newHarness(t, "conformance")
	h.upstreamNLB = true
	runCheck(t, "UpstreamStateIsTakenOverInPlace", cloudtest.Config{Harness: h, ClusterName: "conformance"})
}

// The migration check with upstream's NLBs made in NLBSecurityGroupMode = Managed (a group of
// their own), ccm in the same mode: the groups are taken over in place, removed with the NLB.
func TestConformanceMigrationNLBManagedGroups(t *testing.T) {
	h := newHarness(t, "conformance")
	h.upstreamNLB, h.managedSG = true, true
	runCheck(t, "UpstreamStateIsTakenOverInPlace", cloudtest.Config{Harness: h, ClusterName: "conformance"})
}

// The same check on its own for classic ELBs, to run it alone (-run Migration).
func TestConformanceMigrationClassic(t *testing.T) {
	h := newHarness(t, "conformance")
	runCheck(t, "UpstreamStateIsTakenOverInPlace", cloudtest.Config{Harness: h, ClusterName: "conformance"})
}
