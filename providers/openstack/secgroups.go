package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// [LoadBalancer] manage-security-groups: one Neutron security group per LoadBalancer Service,
// named lb-sg-<load balancer name> and described with the Service and cluster (the proof of
// ownership: a group without that exact description is never changed or deleted). Its ingress
// rules open the Service's NodePorts (and the health-check NodePort for
// externalTrafficPolicy=Local) to the Service's loadBalancerSourceRanges, 0.0.0.0/0 and ::/0
// when none are set, plus the member subnets (where Octavia amphorae connect from) when they
// are set; it is attached to the member nodes' Neutron ports, next to the groups they have.

func sgName(lbName string) string { return "lb-sg-" + lbName }

func sgDescription(clusterName string, svc *v1.Service) string {
	return fmt.Sprintf("Security Group for Service %s/%s LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterName)
}

// sgRule is one ingress rule as compared with Neutron's.
type sgRule struct {
	EtherType, Protocol, Prefix string
	Port                        int
}

func (r sgRule) String() string {
	return fmt.Sprintf("%s/%s/%d/%s", r.EtherType, r.Protocol, r.Port, r.Prefix)
}

// subnetCIDRs caches subnet ID -> CIDR: a subnet's CIDR never changes.
var subnetCIDRs sync.Map

func subnetCIDR(ctx context.Context, cl *clients, id string) (string, error) {
	if v, ok := subnetCIDRs.Load(id); ok {
		return v.(string), nil
	}
	s, err := subnets.Get(ctx, cl.network, id).Extract()
	if err != nil {
		return "", fmt.Errorf("getting subnet %s: %w", id, err)
	}
	subnetCIDRs.Store(id, s.CIDR)
	return s.CIDR, nil
}

// sgRules is the rule set the Service needs for the families of specs.
func sgRules(ctx context.Context, cl *clients, svc *v1.Service, specs []*lbSpec) ([]sgRule, error) {
	type proto struct {
		p    string
		port int
	}
	var ports []proto
	for _, p := range svc.Spec.Ports {
		switch p.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
			if p.NodePort > 0 {
				ports = append(ports, proto{strings.ToLower(string(p.Protocol)), int(p.NodePort)})
			}
		}
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort > 0 {
		ports = append(ports, proto{"tcp", int(svc.Spec.HealthCheckNodePort)})
	}
	set := map[sgRule]bool{}
	for _, spec := range specs {
		et, v6 := "IPv4", spec.family == v1.IPv6Protocol
		if v6 {
			et = "IPv6"
		}
		var prefixes []string
		for _, r := range svc.Spec.LoadBalancerSourceRanges {
			p, err := netip.ParsePrefix(strings.TrimSpace(r))
			if err != nil {
				return nil, fmt.Errorf("loadBalancerSourceRanges: %q is not a CIDR", r)
			}
			if p.Addr().Is6() == v6 {
				prefixes = append(prefixes, p.Masked().String())
			}
		}
		switch {
		case len(svc.Spec.LoadBalancerSourceRanges) == 0 && v6:
			prefixes = []string{"::/0"}
		case len(svc.Spec.LoadBalancerSourceRanges) == 0:
			prefixes = []string{"0.0.0.0/0"}
		case or(spec.memberSubnetID, spec.subnetID) != "":
			// Amphorae connect to the NodePorts from the member subnet, not from the client.
			cidr, err := subnetCIDR(ctx, cl, or(spec.memberSubnetID, spec.subnetID))
			if err != nil {
				return nil, err
			}
			prefixes = append(prefixes, cidr)
		}
		for _, pfx := range prefixes {
			for _, p := range ports {
				set[sgRule{EtherType: et, Protocol: p.p, Port: p.port, Prefix: pfx}] = true
			}
		}
	}
	out := make([]sgRule, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// findSG returns our group for the Service, nil if none; with foreign set, a group of that
// name not described as ours is an error (never touched), else it is ignored.
func findSG(ctx context.Context, cl *clients, name, desc string, foreign bool) (*groups.SecGroup, error) {
	pages, err := groups.List(cl.network, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing security groups named %s: %w", name, err)
	}
	all, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Name == name && all[i].Description == desc {
			return &all[i], nil
		}
	}
	if len(all) > 0 && foreign {
		return nil, fmt.Errorf("a security group named %s exists but is not described as this Service's; not touching it", name)
	}
	return nil, nil
}

// syncSecurityGroup makes the Service's group, its rules and its attachment to the member
// ports match; nothing is written when they already do.
func (l *loadBalancers) syncSecurityGroup(ctx context.Context, cl *clients, clusterName string, svc *v1.Service, nodes []*v1.Node, specs []*lbSpec) error {
	want, err := sgRules(ctx, cl, svc, specs)
	if err != nil {
		return err
	}
	name, desc := sgName(l.GetLoadBalancerName(ctx, clusterName, svc)), sgDescription(clusterName, svc)
	sg, err := findSG(ctx, cl, name, desc, true)
	if err != nil {
		return err
	}
	if sg == nil {
		if sg, err = groups.Create(ctx, cl.network, groups.CreateOpts{Name: name, Description: desc}).Extract(); err != nil {
			return fmt.Errorf("creating security group %s: %w", name, err)
		}
		klog.InfoS("Created security group", "service", klog.KObj(svc), "name", name, "id", sg.ID)
	}
	if err := syncRules(ctx, cl, sg, want); err != nil {
		return err
	}
	// The member ports: the ports holding a member address of each family.
	wantPorts := map[string]ports.Port{}
	for _, spec := range specs {
		ms, err := l.members(ctx, nodes, spec)
		if err != nil {
			return err
		}
		for _, m := range ms {
			ps, err := listPorts(ctx, cl, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: m.Address}}})
			if err != nil {
				return err
			}
			if len(ps) == 0 {
				klog.InfoS("No Neutron port holds the node's address; security group not attached", "node", m.Node, "address", m.Address)
			}
			for _, p := range ps {
				wantPorts[p.ID] = p
			}
		}
	}
	attached, err := listPorts(ctx, cl, ports.ListOpts{SecurityGroups: []string{sg.ID}})
	if err != nil {
		return err
	}
	for _, p := range attached {
		if _, ok := wantPorts[p.ID]; ok {
			delete(wantPorts, p.ID) // already there
			continue
		}
		if err := setPortGroups(ctx, cl, p, slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(g string) bool { return g == sg.ID })); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(wantPorts))
	for id := range wantPorts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := wantPorts[id]
		if slices.Contains(p.SecurityGroups, sg.ID) {
			continue
		}
		if err := setPortGroups(ctx, cl, p, append(slices.Clone(p.SecurityGroups), sg.ID)); err != nil {
			return err
		}
	}
	return nil
}

// syncRules creates the missing ingress rules and deletes the ingress rules of our group that
// are no longer wanted; egress rules (Neutron's defaults) are left alone.
func syncRules(ctx context.Context, cl *clients, sg *groups.SecGroup, want []sgRule) error {
	pages, err := rules.List(cl.network, rules.ListOpts{SecGroupID: sg.ID, Direction: "ingress"}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("listing rules of security group %s: %w", sg.ID, err)
	}
	have, err := rules.ExtractRules(pages)
	if err != nil {
		return err
	}
	wanted := map[sgRule]bool{}
	for _, r := range want {
		wanted[r] = true
	}
	for _, h := range have {
		if h.SecGroupID != sg.ID || h.Direction != "ingress" {
			continue
		}
		k := sgRule{EtherType: h.EtherType, Protocol: h.Protocol, Prefix: h.RemoteIPPrefix, Port: h.PortRangeMin}
		if wanted[k] && h.PortRangeMax == h.PortRangeMin && h.RemoteGroupID == "" {
			delete(wanted, k)
			continue
		}
		if err := rules.Delete(ctx, cl.network, h.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return fmt.Errorf("deleting rule %s of security group %s: %w", h.ID, sg.ID, err)
		}
	}
	for _, r := range want {
		if !wanted[r] {
			continue
		}
		_, err := rules.Create(ctx, cl.network, rules.CreateOpts{SecGroupID: sg.ID, Direction: rules.DirIngress,
			EtherType: rules.RuleEtherType(r.EtherType), Protocol: rules.RuleProtocol(r.Protocol),
			PortRangeMin: r.Port, PortRangeMax: r.Port, RemoteIPPrefix: r.Prefix}).Extract()
		if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			return fmt.Errorf("creating rule %s in security group %s: %w", r, sg.ID, err)
		}
	}
	return nil
}

func listPorts(ctx context.Context, cl *clients, opts ports.ListOpts) ([]ports.Port, error) {
	pages, err := ports.List(cl.network, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	return ports.ExtractPorts(pages)
}

func setPortGroups(ctx context.Context, cl *clients, p ports.Port, groups []string) error {
	if _, err := ports.Update(ctx, cl.network, p.ID, ports.UpdateOpts{SecurityGroups: &groups}).Extract(); err != nil {
		return fmt.Errorf("setting the security groups of port %s: %w", p.ID, err)
	}
	return nil
}

// deleteSecurityGroup detaches the Service's group from every port and deletes it. Groups
// not described as this Service's are never touched.
func (l *loadBalancers) deleteSecurityGroup(ctx context.Context, cl *clients, clusterName string, svc *v1.Service) error {
	name := sgName(l.GetLoadBalancerName(ctx, clusterName, svc))
	sg, err := findSG(ctx, cl, name, sgDescription(clusterName, svc), false)
	if err != nil || sg == nil {
		return err
	}
	attached, err := listPorts(ctx, cl, ports.ListOpts{SecurityGroups: []string{sg.ID}})
	if err != nil {
		return err
	}
	for _, p := range attached {
		if err := setPortGroups(ctx, cl, p, slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(g string) bool { return g == sg.ID })); err != nil {
			return err
		}
	}
	if err := groups.Delete(ctx, cl.network, sg.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("deleting security group %s: %w", sg.ID, err)
	}
	klog.InfoS("Deleted security group", "service", klog.KObj(svc), "name", name, "id", sg.ID)
	return nil
}
