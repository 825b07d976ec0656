package openstack

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// fipDescription marks a floating IP we allocated: only those are ever deleted. It is the
// upstream provider's wording, so floating IPs it allocated are released the same way.
func fipDescription(clusterName string, svc *v1.Service) string {
	return fmt.Sprintf("Floating IP for Kubernetes external service %s/%s from cluster %s", svc.Namespace, svc.Name, clusterName)
}

func (l *loadBalancers) portFIP(ctx context.Context, cl *clients, portID string) (*floatingips.FloatingIP, error) {
	if portID == "" {
		return nil, nil
	}
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{PortID: portID})
	if err != nil || len(fips) == 0 {
		return nil, err
	}
	return &fips[0], nil
}

func listFIPs(ctx context.Context, cl *clients, o floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(cl.network, o).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing floating IPs: %w", err)
	}
	return floatingips.ExtractFloatingIPs(pages)
}

// ensureFIP gives the VIP port a floating IP and returns its address: the one it has, the
// Service's spec.loadBalancerIP (associated if it exists, allocated if not), or a new one
// from the floating network.
func (l *loadBalancers) ensureFIP(ctx context.Context, cl *clients, clusterName string, svc *v1.Service, spec *lbSpec, lb *loadbalancers.LoadBalancer) (string, error) {
	cur, err := l.portFIP(ctx, cl, lb.VipPortID)
	if err != nil {
		return "", err
	}
	if cur != nil && (spec.fixedFIP == "" || cur.FloatingIP == spec.fixedFIP) {
		return cur.FloatingIP, nil
	}
	if cur != nil { // spec.loadBalancerIP changed: give the old one back first
		if err := l.releaseFIP(ctx, cl, clusterName, svc, lb.VipPortID, spec.keepFIP); err != nil {
			return "", err
		}
	}
	port := lb.VipPortID
	if spec.fixedFIP != "" {
		fips, err := listFIPs(ctx, cl, floatingips.ListOpts{FloatingIP: spec.fixedFIP})
		if err != nil {
			return "", err
		}
		if len(fips) > 0 {
			f := fips[0]
			if f.PortID != "" && f.PortID != port {
				return "", fmt.Errorf("spec.loadBalancerIP %s is a floating IP already in use by port %s", spec.fixedFIP, f.PortID)
			}
			if _, err := floatingips.Update(ctx, cl.network, f.ID, floatingips.UpdateOpts{PortID: &port}).Extract(); err != nil {
				return "", fmt.Errorf("associating floating IP %s: %w", f.FloatingIP, err)
			}
			klog.InfoS("Associated existing floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP)
			return f.FloatingIP, nil
		}
	}
	netID := spec.floatingNetworkID
	if netID == "" {
		if netID, err = l.externalNetwork(ctx, cl); err != nil {
			return "", err
		}
	}
	f, err := floatingips.Create(ctx, cl.network, floatingips.CreateOpts{
		FloatingNetworkID: netID, SubnetID: spec.floatingSubnetID, FloatingIP: spec.fixedFIP,
		PortID: port, Description: fipDescription(clusterName, svc),
	}).Extract()
	if err != nil {
		return "", fmt.Errorf("allocating a floating IP on network %s: %w", netID, err)
	}
	klog.InfoS("Allocated floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP, "network", netID)
	return f.FloatingIP, nil
}

// releaseFIP deletes the port's floating IP if we allocated it and keep is false; otherwise
// it only disassociates it, so the user's address survives.
func (l *loadBalancers) releaseFIP(ctx context.Context, cl *clients, clusterName string, svc *v1.Service, portID string, keep bool) error {
	f, err := l.portFIP(ctx, cl, portID)
	if err != nil || f == nil {
		return err
	}
	if f.Description == fipDescription(clusterName, svc) && !keep {
		if err := floatingips.Delete(ctx, cl.network, f.ID).ExtractErr(); err != nil {
			return fmt.Errorf("deleting floating IP %s: %w", f.FloatingIP, err)
		}
		klog.InfoS("Deleted floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP)
		return nil
	}
	empty := ""
	if _, err := floatingips.Update(ctx, cl.network, f.ID, floatingips.UpdateOpts{PortID: &empty}).Extract(); err != nil {
		return fmt.Errorf("disassociating floating IP %s: %w", f.FloatingIP, err)
	}
	klog.InfoS("Kept floating IP (not allocated by us, or keep-floatingip)", "service", klog.KObj(svc), "ip", f.FloatingIP)
	return nil
}

// externalNetwork finds the one external network when none is configured.
func (l *loadBalancers) externalNetwork(ctx context.Context, cl *clients) (string, error) {
	yes := true
	pages, err := networks.List(cl.network, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("looking for an external network: %w", err)
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil {
		return "", err
	}
	switch len(nets) {
	case 0:
		return "", fmt.Errorf("no external network for floating IPs: set [LoadBalancer] floating-network-id or annotation %s", annFloatingNetworkID)
	case 1:
		return nets[0].ID, nil
	default:
		return "", fmt.Errorf("%d external networks: set [LoadBalancer] floating-network-id or annotation %s", len(nets), annFloatingNetworkID)
	}
}
