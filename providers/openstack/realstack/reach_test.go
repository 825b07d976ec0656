package realstack_test

import (
	"fmt"
	"sort"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/openstack"
)

var _ cloudtest.ReachHarness = (*harness)(nil)

func (h *harness) Annotations() reach.Table { return openstack.AnnotationTable() }

// Foreign makes, through the real APIs, objects of kind no attacking Service owns: the victim
// cluster's load balancer (and the hand-made one of HostileCases, if there), ports tagged for
// the victim, for another namespace and upstream-style, an untagged one and one a device
// uses, and a network with a subnet no config names.
func (h *harness) Foreign(t cloudtest.T, kind, victim string, victimSvc *v1.Service, attacker string) []cloudtest.Foreign {
	neighbour := cloudtest.AttackService(0)
	neighbour.Namespace, neighbour.UID = "neighbour", "uid-neighbour"
	upstream := []string{ownership.ClusterTagPrefix + attacker + "=" + ownership.Owned, ownership.ServiceTag + "=neighbour/old-web"}
	f := func(flavour, value string) cloudtest.Foreign {
		return cloudtest.Foreign{Flavour: flavour, Value: value}
	}
	switch kind {
	case "load balancer":
		out := []cloudtest.Foreign{f(cloudtest.OtherCluster, lbNamed(t, lbname.Octavia.Name(victim, victimSvc.Namespace, victimSvc.Name)).ID)}
		if hand := lbNamed(t, "hand-made-lb"); hand != nil {
			out = append(out, f(cloudtest.Unowned, hand.ID))
		}
		return out
	case "port":
		return []cloudtest.Foreign{
			f(cloudtest.OtherCluster, h.port(t, "reach-victims", "", tagList(ownership.Of(victim, victimSvc).Tags()))),
			f(cloudtest.OtherNamespace, h.port(t, "reach-neighbours", "", tagList(ownership.Of(attacker, neighbour).Tags()))),
			f(cloudtest.Unowned, h.port(t, "reach-hand-made", "", nil)),
			f(cloudtest.UpstreamMade, h.port(t, "reach-upstream", "", upstream)),
			f(cloudtest.InUse, h.port(t, "reach-in-use", "keepalived-1", nil)),
		}
	case "subnet", "network":
		net, sub := h.network(t)
		if kind == "network" {
			return []cloudtest.Foreign{f(cloudtest.Unowned, net)}
		}
		return []cloudtest.Foreign{f(cloudtest.Unowned, sub)}
	}
	t.Errorf("the real-services harness makes no foreign %s", kind)
	return nil
}

// port makes a port on the cluster's subnet, used by device when it is not "", with tags.
func (h *harness) port(t cloudtest.T, name, device string, tags []string) string {
	p := must(ports.Create(ctx, rs.network, ports.CreateOpts{NetworkID: rs.ids["K8S_NET_ID"], Name: name, DeviceID: device,
		FixedIPs: []ports.IP{{SubnetID: rs.ids["K8S_SUBNET_ID"]}}}).Extract())
	h.t.Cleanup(func() { _ = ports.Delete(ctx, rs.network, p.ID).ExtractErr() })
	if len(tags) > 0 {
		must(attributestags.ReplaceAll(ctx, rs.network, "ports", p.ID, attributestags.ReplaceAllOpts{Tags: tags}).Extract())
	}
	return p.ID
}

// network makes (once) a network with a subnet that no cloud config names.
func (h *harness) network(t cloudtest.T) (string, string) {
	if h.foreignNet == "" {
		net := must(networks.Create(ctx, rs.network, networks.CreateOpts{Name: "reach-foreign-net"}).Extract())
		sub := must(subnets.Create(ctx, rs.network, subnets.CreateOpts{NetworkID: net.ID, CIDR: "10.93.0.0/16", IPVersion: 4, Name: "reach-foreign-subnet"}).Extract())
		h.t.Cleanup(func() {
			_ = subnets.Delete(ctx, rs.network, sub.ID).ExtractErr()
			_ = networks.Delete(ctx, rs.network, net.ID).ExtractErr()
		})
		h.foreignNet, h.foreignSubnet = net.ID, sub.ID
	}
	return h.foreignNet, h.foreignSubnet
}

// tagList is tags as Neutron's "key=value" strings, sorted.
func tagList(tags map[string]string) []string {
	var out []string
	for k, v := range tags {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	sort.Strings(out)
	return out
}
