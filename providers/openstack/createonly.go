package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
)

// Settings Octavia takes only when it creates a load balancer (its PUT has none of them):
// the flavor, the availability zone, the VIP port, and the VIP address (vipaddress.go).
const (
	annFlavorID         = annPrefix + "flavor-id"
	annAvailabilityZone = annPrefix + "availability-zone"
	annPortID           = annPrefix + "port-id"
)

// Warning reasons of the create-only settings. reasonAZIgnored is upstream's.
const (
	reasonAZIgnored       = "LoadBalancerAvailabilityZonesIgnored"
	reasonFlavorIgnored   = "LoadBalancerFlavorIgnored"
	reasonVIPNotApplied   = "LoadBalancerIPNotApplied"
	reasonSettingNotFixed = "LoadBalancerSettingNotApplied"
)

// advice is one Warning of a sync, given at most once an hour (svcevents.Advise).
type advice struct{ reason, msg string }

// createOnly is what a Service asks of its load balancer's creation besides its VIP address.
type createOnly struct {
	flavorID, availabilityZone string
	// askedFlavor, askedZone: the value is the Service's annotation, not the config's
	// default. Only what the Service asks for is compared with an existing load balancer: a
	// new default is for new load balancers and is no news about every Service.
	askedFlavor, askedZone bool
	// vipPortID (port-id): an existing Neutron port, the user's, made the VIP port of the
	// Service's first family's load balancer; its fixed IP is the VIP.
	vipPortID string
}

// createOnlyOf reads flavor-id, availability-zone and port-id as upstream does: an
// annotation, even empty, wins over the [LoadBalancer] key of the same name. Upstream sends
// a flavor or an availability zone only when Octavia supports it (API 2.6 and 2.14) and the
// provider is not ovn. ccm assumes an Octavia of Ussuri (API 2.14) or later, which every
// supported OpenStack has, so only the ovn case remains: the ovn provider has neither, and
// Octavia would refuse the create; the value is dropped with a Warning (upstream's
// LoadBalancerAvailabilityZonesIgnored for the zone; upstream is silent about the flavor).
// A port-id that cannot be an ID is an error naming the annotation. Pure.
func createOnlyOf(svc *v1.Service, cfg LBConfig, provider string) (createOnly, []advice, error) {
	var c createOnly
	var out []advice
	// As upstream, the value is sent as it is (no trimming: Octavia answers for it).
	pick := func(key string, def *string) (string, bool) {
		if v, ok := svc.Annotations[key]; ok {
			return v, true
		}
		if def != nil {
			return *def, false
		}
		return "", false
	}
	c.flavorID, c.askedFlavor = pick(annFlavorID, cfg.FlavorID)
	c.availabilityZone, c.askedZone = pick(annAvailabilityZone, cfg.AvailabilityZone)
	if provider == providerOVN {
		// Only what the Service's annotation asks for is news about the Service; the config's
		// key is reported once at start-up and by check-config (ovnCreateOnlyNotices).
		if c.flavorID != "" && c.askedFlavor {
			out = append(out, advice{reasonFlavorIgnored, fmt.Sprintf("annotation %s: flavor-id %q is not used: lb-provider = ovn has no flavors, as upstream", annFlavorID, c.flavorID)})
		}
		if c.availabilityZone != "" && c.askedZone {
			out = append(out, advice{reasonAZIgnored, fmt.Sprintf("annotation %s: availability-zone %q is not used: lb-provider = ovn has no availability zones, as upstream", annAvailabilityZone, c.availabilityZone)})
		}
		c.flavorID, c.availabilityZone, c.askedFlavor, c.askedZone = "", "", false, false
	}
	c.vipPortID = strings.TrimSpace(svc.Annotations[annPortID])
	if c.vipPortID != "" && !objectIDRE.MatchString(c.vipPortID) {
		return createOnly{}, nil, fmt.Errorf("annotation %s: %q is not a Neutron port ID", annPortID, c.vipPortID)
	}
	return c, out, nil
}

// ovnCreateOnlyNotices are the start-up notices for a [LoadBalancer] flavor-id or
// availability-zone that lb-provider = ovn cannot use (createOnlyOf drops them), with their
// lines: said once for the config, not once an hour on every Service. Pure.
func (c *Config) ovnCreateOnlyNotices() []string {
	lb := c.LoadBalancer
	if lb.LBProvider != providerOVN {
		return nil
	}
	var out []string
	for _, k := range []struct {
		key string
		v   *string
		why string
	}{{"flavor-id", lb.FlavorID, "flavors"}, {"availability-zone", lb.AvailabilityZone, "availability zones"}} {
		if k.v != nil && *k.v != "" {
			out = append(out, config.Problem{Line: c.line(secLB, "", k.key), Section: secLB, Key: k.key,
				Msg: fmt.Sprintf("%q is not used: lb-provider = ovn has no %s, so load balancers are created without it, as upstream", *k.v, k.why)}.String())
		}
	}
	return out
}

// fill sets what Octavia takes at creation: the VIP port instead of the VIP subnet
// (as upstream: Octavia takes the subnet and the address from the port; a VIP address asked
// for must then be on the port, which Octavia checks), the flavor and the zone.
func (c createOnly) fill(opts *loadbalancers.CreateOpts) {
	if c.vipPortID != "" {
		opts.VipPortID, opts.VipSubnetID = c.vipPortID, ""
	}
	opts.FlavorID, opts.AvailabilityZone = c.flavorID, c.availabilityZone
}

// notApplied is the advice about the create-only settings lb does not have. Octavia cannot
// change them, so, as upstream, a later or different value changes nothing (compare, write
// nothing); ccm says so in a Warning naming the annotation (upstream is silent). Only what
// the Service asks for by annotation is compared: a load balancer made before the config's
// default changed, or taken over with a flavor nobody names any more, is fine. A load
// balancer the Service does not own is another matter (adopted). Pure.
func notApplied(spec *lbSpec, lb *loadbalancers.LoadBalancer, adopted bool) []advice {
	if adopted {
		return nil
	}
	var out []advice
	if msg := vipNotApplied(spec, lb, adopted); msg != "" {
		out = append(out, advice{reasonVIPNotApplied, msg})
	}
	for _, d := range []struct {
		key, want, have, what string
		asked                 bool
	}{
		{annFlavorID, spec.flavorID, lb.FlavorID, "flavor", spec.askedFlavor},
		{annAvailabilityZone, spec.availabilityZone, lb.AvailabilityZone, "availability zone", spec.askedZone},
		{annPortID, spec.vipPortID, lb.VipPortID, "VIP port", true},
	} {
		if d.asked && d.want != "" && d.want != d.have {
			out = append(out, advice{reasonSettingNotFixed, fmt.Sprintf("annotation %s: %s %q is not the %s %q of load balancer %s: Octavia cannot change it, so it is used only when the load balancer is created (recreate the Service to change it)",
				d.key, d.what, d.want, d.what, or(d.have, "(none)"), spec.name)})
		}
	}
	return out
}

// checkVIPPort checks, before a load balancer is created on it, that the port port-id names
// is this Service's to use: free (no device uses it) and tagged with the Service's ownership
// tags, or allowed by the operator by namespace or ID; a tenant must not put its load
// balancer (and its floating IP) on a port another Service, a keepalived pair or another
// cluster uses or was given. Then that it has an address of the load balancer's IP family
// (port-id names the Service's first family's load balancer; Octavia would take the port's
// address whatever the family). Reads only.
func (l *loadBalancers) checkVIPPort(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec) error {
	if spec.vipPortID == "" {
		return nil
	}
	p, err := ports.Get(ctx, cl.network, spec.vipPortID).Extract()
	if err != nil {
		return fmt.Errorf("annotation %s: getting port %s: %w", annPortID, spec.vipPortID, err)
	}
	a, _ := annotations.Lookup(annPortID)
	ev := reach.Evidence{Tags: tagMap(p.Tags)}
	if p.DeviceID != "" || p.DeviceOwner != "" {
		ev.InUse = "a device"
	}
	if err := reach.Named(id, l.c.cfg.LoadBalancer.allow, a, spec.vipPortID, ev); err != nil {
		return err
	}
	if !hasFamilyAddress(p.FixedIPs, spec.family) {
		return fmt.Errorf("annotation %s: port %q has no %s address, and it is the VIP port of the Service's first IP family (%s): give the port an address of that family or put %s first in spec.ipFamilies",
			annPortID, spec.vipPortID, spec.family, spec.family, otherFamily(spec.family))
	}
	return nil
}

// hasFamilyAddress: one of the fixed IPs is of family f. Pure.
func hasFamilyAddress(ips []ports.IP, f v1.IPFamily) bool {
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip.IPAddress); err == nil && a.Unmap().Is6() == (f == v1.IPv6Protocol) {
			return true
		}
	}
	return false
}

func otherFamily(f v1.IPFamily) v1.IPFamily {
	if f == v1.IPv6Protocol {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}
