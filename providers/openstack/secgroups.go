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

	"github.com/ccm-project/ccm/common/ownership"
)

// [LoadBalancer] manage-security-groups: one Neutron security group per LoadBalancer Service,
// named lb-sg-<load balancer name> and described with the Service's ownership mark (cluster,
// namespace/name, UID: the proof of ownership; a group without it is never changed or
// deleted), as is each of its rules (only marked rules are ever deleted). Its ingress
// rules open the Service's NodePorts (and the health-check NodePort for
// externalTrafficPolicy=Local) to the Service's loadBalancerSourceRanges, 0.0.0.0/0 and ::/0
// when none are set, plus the member subnets (where Octavia amphorae connect from) when they
// are set; it is attached to the member nodes' Neutron ports, next to the groups they have
// (except a port with port security disabled, which Neutron lets take no group: skipped).
// A node's port is found by its server (the port's device_id is the Nova server ID of the
// Node's providerID) and its address, never by the address alone: another cluster's machine
// on an overlapping network may hold the same one. A port's group list is changed with
// Neutron's compare-and-swap (If-Match: revision_number=N), so a concurrent change by someone
// else is never overwritten.

func sgName(lbName string) string { return "lb-sg-" + lbName }

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
	ranges, err := sourceRanges(svc)
	if err != nil {
		return nil, err
	}
	set := map[sgRule]bool{}
	for _, spec := range specs {
		et, v6 := "IPv4", spec.family == v1.IPv6Protocol
		if v6 {
			et = "IPv6"
		}
		var prefixes []string
		for _, r := range ranges {
			if p, err := netip.ParsePrefix(r); err == nil && p.Addr().Is6() == v6 {
				prefixes = append(prefixes, r)
			}
		}
		switch {
		case len(ranges) == 0 && v6:
			prefixes = []string{"::/0"}
		case len(ranges) == 0:
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

// findSG returns the Service's group, nil if none, and whether an earlier ccm made it; with
// foreign set, a group of that name not marked as the Service's is an error (never touched),
// else it is ignored.
func findSG(ctx context.Context, cl *clients, id ownership.Identity, name string, foreign bool) (*groups.SecGroup, bool, error) {
	pages, err := groups.List(cl.network, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("listing security groups named %s: %w", name, err)
	}
	all, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, false, err
	}
	return pickSG(all, id, name, foreign)
}

// pickSG is findSG on groups already listed.
func pickSG(all []groups.SecGroup, id ownership.Identity, name string, foreign bool) (*groups.SecGroup, bool, error) {
	for i := range all {
		if all[i].Name != name {
			continue
		}
		if owned, legacy := sgOwnership(id, &all[i]); owned {
			return &all[i], legacy, nil
		}
	}
	if len(all) > 0 && foreign {
		return nil, false, fmt.Errorf("a security group named %s exists but is not marked as this Service's; not touching it: %w", name, ownership.ErrNotOwned)
	}
	return nil, false, nil
}

// syncSecurityGroup makes the Service's group, its rules and its attachment to the member
// ports match; nothing is written when they already do.
func (r *svcRun) syncSecurityGroup(ctx context.Context, specs []*lbSpec) error {
	l, cl, id, svc, rep := r.l, r.cl, r.id, r.svc, r.rep
	want, err := sgRules(ctx, cl, svc, specs)
	if err != nil {
		return err
	}
	name := sgName(l.GetLoadBalancerName(ctx, r.clusterName, svc))
	var sg *groups.SecGroup
	var legacy bool
	inSnapshot := false
	if all, ok := rep.seen.group(name); ok && len(all) > 0 {
		if sg, legacy, err = pickSG(all, id, name, true); err != nil {
			return err
		}
		inSnapshot = sg != nil
	}
	if sg == nil { // none in the snapshot: look before creating one
		if sg, legacy, err = findSG(ctx, cl, id, name, true); err != nil {
			return err
		}
	}
	created := false
	if sg == nil {
		if sg, err = groups.Create(ctx, cl.network, groups.CreateOpts{Name: name, Description: sgDescription(id)}).Extract(); err != nil {
			return fmt.Errorf("creating security group %s: %w", name, err)
		}
		klog.InfoS("Created security group", "service", klog.KObj(svc), "name", name, "id", sg.ID)
		rep.created, created = true, true
	}
	var have []rules.SecGroupRule
	switch {
	case inSnapshot:
		have = rep.seen.rules[sg.ID]
	case created:
		// A new group has only Neutron's default egress rules: no ingress rule to list.
	default:
		if have, err = listRules(ctx, cl, sg.ID); err != nil {
			return err
		}
	}
	added, err := r.syncRules(ctx, sg, want, have, legacy)
	if err != nil {
		return err
	}
	if len(added) > 0 && !rep.created && !rep.specChanged {
		// The group and the Service's listeners were there as the spec asks: a rule the
		// spec needs was revoked out of band.
		for _, a := range added {
			rep.repairs = append(rep.repairs, fmt.Sprintf("security group rule %s was revoked", a))
		}
	}
	var attached []ports.Port // a group just created is on no port yet
	if !created {
		if attached, err = listPorts(ctx, cl, ports.ListOpts{SecurityGroups: []string{sg.ID}}); err != nil {
			return err
		}
	}
	wantPorts, err := l.memberPorts(ctx, cl, r.nodes, specs, attached)
	if err != nil {
		return err
	}
	without := func(gs []string) []string { return slices.DeleteFunc(gs, func(g string) bool { return g == sg.ID }) }
	with := func(gs []string) []string {
		if slices.Contains(gs, sg.ID) {
			return gs
		}
		return append(gs, sg.ID)
	}
	served := map[string]bool{} // the ports that hold the group once this sync is done
	for pid := range wantPorts {
		served[pid] = true
	}
	for _, p := range attached {
		if _, ok := wantPorts[p.ID]; ok {
			delete(wantPorts, p.ID) // already there
			continue
		}
		if err := updatePortGroups(ctx, cl, p, without); err != nil {
			return err
		}
	}
	ids := make([]string, 0, len(wantPorts))
	for id := range wantPorts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, pid := range ids {
		if err := updatePortGroups(ctx, cl, wantPorts[pid], with); err != nil {
			return err
		}
	}
	// The group serves: the upstream CCM's group for the Service is no longer needed.
	return r.retireUpstreamSG(ctx, served)
}

// nodeServers caches node name -> Nova server ID for Nodes without a providerID yet (found
// by their name once).
var nodeServers sync.Map

// serverOf is the Nova server ID of a Node: from its providerID, else found by its name.
func (l *loadBalancers) serverOf(ctx context.Context, n *v1.Node) (string, error) {
	if n.Spec.ProviderID != "" {
		return serverID(n.Spec.ProviderID)
	}
	if v, ok := nodeServers.Load(n.Name); ok {
		return v.(string), nil
	}
	s, err := (&instances{c: l.c}).server(ctx, n)
	if err != nil {
		return "", err
	}
	if s == nil {
		return "", nil
	}
	nodeServers.Store(n.Name, s.ID)
	return s.ID, nil
}

// memberPorts are the Neutron ports of the member nodes that hold their member address of
// each family: the ports of the node's own server (device_id) with that fixed IP. A port
// already attached to the group (known) is found there; only the servers of the other members
// have their ports listed, so an unchanged Service costs no read here.
func (l *loadBalancers) memberPorts(ctx context.Context, cl *clients, nodes []*v1.Node, specs []*lbSpec, known []ports.Port) (map[string]ports.Port, error) {
	byName := map[string]*v1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	serverPorts := map[string][]securedPort{} // server ID -> its ports, listed once
	out := map[string]ports.Port{}
	for _, spec := range specs {
		ms, err := l.members(ctx, nodes, spec)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			sid, err := l.serverOf(ctx, byName[m.Node])
			if err != nil {
				return nil, fmt.Errorf("server of node %s: %w", m.Node, err)
			}
			if sid == "" {
				klog.InfoS("No server for the node; security group not attached", "node", m.Node)
				continue
			}
			holds := func(p ports.Port) bool {
				return p.DeviceID == sid && slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return ip.IPAddress == m.Address })
			}
			if i := slices.IndexFunc(known, holds); i >= 0 {
				out[known[i].ID] = known[i]
				continue
			}
			ps, ok := serverPorts[sid]
			if !ok {
				if ps, err = listServerPorts(ctx, cl, sid); err != nil {
					return nil, err
				}
				serverPorts[sid] = ps
			}
			found := false
			for _, p := range ps {
				if !holds(p.Port) {
					continue
				}
				found = true
				if !p.takesGroups() {
					// Neutron refuses any security group on such a port (400): it is skipped, as
					// upstream does, and the other members still get the group.
					klog.InfoS("The node's port has port security disabled; security group not attached", "node", m.Node, "port", p.ID)
					continue
				}
				out[p.ID] = p.Port
			}
			if !found {
				klog.InfoS("No port of the node's server holds its address; security group not attached", "node", m.Node, "address", m.Address)
			}
		}
	}
	return out, nil
}

// updatePortGroups applies change to a port's security group list with Neutron's
// compare-and-swap (casPort). Nothing is written when change leaves the list as it is.
func updatePortGroups(ctx context.Context, cl *clients, p ports.Port, change func([]string) []string) error {
	return casPort(ctx, cl, p, "the security groups", func(p ports.Port) (ports.UpdateOpts, bool) {
		groups := change(slices.Clone(p.SecurityGroups))
		return ports.UpdateOpts{SecurityGroups: &groups}, !slices.Equal(groups, p.SecurityGroups)
	})
}

// syncRules creates the missing ingress rules and deletes the ingress rules of the Service's
// group that are no longer wanted and carry its mark (in a group of an earlier ccm, rules
// without a description are taken as its); egress rules (Neutron's defaults) and rules someone
// else added are left alone.
func (r *svcRun) syncRules(ctx context.Context, sg *groups.SecGroup, want []sgRule, have []rules.SecGroupRule, legacy bool) (added []sgRule, _ error) {
	cl, id := r.cl, r.id
	wanted := map[sgRule]bool{}
	for _, w := range want {
		wanted[w] = true
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
		if !ownership.DescribedBy(id, h.Description) && !(legacy && h.Description == "") {
			continue // not ours to delete
		}
		if err := rules.Delete(ctx, cl.network, h.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return added, fmt.Errorf("deleting rule %s of security group %s: %w", h.ID, sg.ID, err)
		}
	}
	for _, w := range want {
		if !wanted[w] {
			continue
		}
		_, err := rules.Create(ctx, cl.network, rules.CreateOpts{SecGroupID: sg.ID, Direction: rules.DirIngress,
			EtherType: rules.RuleEtherType(w.EtherType), Protocol: rules.RuleProtocol(w.Protocol), Description: ruleDescription(id),
			PortRangeMin: w.Port, PortRangeMax: w.Port, RemoteIPPrefix: w.Prefix}).Extract()
		if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
			return added, fmt.Errorf("creating rule %s in security group %s: %w", w, sg.ID, err)
		}
		added = append(added, w)
	}
	return added, nil
}

// listRules are the ingress rules of group sgID.
func listRules(ctx context.Context, cl *clients, sgID string) ([]rules.SecGroupRule, error) {
	pages, err := rules.List(cl.network, rules.ListOpts{SecGroupID: sgID, Direction: "ingress"}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing rules of security group %s: %w", sgID, err)
	}
	return rules.ExtractRules(pages)
}

// PortSecurity is a port's port_security_enabled (Neutron's portsecurity extension); nil on a
// cloud without that extension, where every port takes security groups. gophercloud's
// portsecurity.PortSecurityExt reads a missing field as false, which would skip every port
// there.
type PortSecurity struct {
	Enabled *bool `json:"port_security_enabled"`
}

// securedPort is a port read with its port security.
type securedPort struct {
	ports.Port
	PortSecurity
}

// takesGroups: Neutron accepts security groups on the port (port security is not disabled).
func (p securedPort) takesGroups() bool { return p.Enabled == nil || *p.Enabled }

// listServerPorts are the ports of Nova server sid, with their port security.
func listServerPorts(ctx context.Context, cl *clients, sid string) ([]securedPort, error) {
	pages, err := ports.List(cl.network, ports.ListOpts{DeviceID: sid}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ports of server %s: %w", sid, err)
	}
	var out []securedPort
	if err := ports.ExtractPortsInto(pages, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func listPorts(ctx context.Context, cl *clients, opts ports.ListOpts) ([]ports.Port, error) {
	pages, err := ports.List(cl.network, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	return ports.ExtractPorts(pages)
}

// deleteSecurityGroup detaches the Service's group from every port and deletes it. Groups
// not marked as this Service's are never touched.
func (r *svcRun) deleteSecurityGroup(ctx context.Context) error {
	cl, id, svc := r.cl, r.id, r.svc
	name := sgName(r.l.GetLoadBalancerName(ctx, r.clusterName, svc))
	sg, _, err := findSG(ctx, cl, id, name, false)
	if err != nil || sg == nil {
		return err
	}
	attached, err := listPorts(ctx, cl, ports.ListOpts{SecurityGroups: []string{sg.ID}})
	if err != nil {
		return err
	}
	for _, p := range attached {
		if err := updatePortGroups(ctx, cl, p, func(gs []string) []string {
			return slices.DeleteFunc(gs, func(g string) bool { return g == sg.ID })
		}); err != nil {
			return err
		}
	}
	if err := groups.Delete(ctx, cl.network, sg.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("deleting security group %s: %w", sg.ID, err)
	}
	klog.InfoS("Deleted security group", "service", klog.KObj(svc), "name", name, "id", sg.ID)
	return nil
}
