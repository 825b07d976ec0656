package vsphere

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

const providerIDPrefix = "vsphere://"

// missRefreshAge: a look-up that finds nothing reads the inventory again unless the
// snapshot began this recently, so a burst of unknown nodes costs one read, not one each.
const missRefreshAge = 2 * time.Second

type instances struct{ c *Cloud }

var _ cloudprovider.InstancesV2 = instances{}

// InstanceExists is false only when a successful, fresh read of every configured vCenter and
// datacenter does not hold the VM. Any failed read is an error (the node deletion guard
// then holds the deletion back).
// With a providerID, a UUID missing from the inventory of the configured datacenters is no
// answer about the VM (a datacenter left out of the config lists none of its VMs): vCenter is
// asked for that UUID itself, in every datacenter, before the VM counts as gone.
func (i instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	v, err := i.find(ctx, node, i.stateTTL())
	if err != nil || v != nil {
		return v != nil, err
	}
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, providerIDPrefix); ok {
		return false, i.confirmGone(ctx, node, strings.ToLower(id))
	}
	return false, nil
}

// confirmGone asks every vCenter for the VM with this BIOS UUID in all its datacenters: nil
// only when none knows it; an error when one does (it is outside the configured datacenters)
// or a call fails.
func (i instances) confirmGone(ctx context.Context, node *v1.Node, uuid string) error {
	for _, c := range i.c.conns {
		client, _, err := c.get(ctx)
		if err != nil {
			return err
		}
		ref, err := object.NewSearchIndex(client).FindByUuid(ctx, nil, uuid, true, nil)
		if err != nil {
			return fmt.Errorf("vCenter %s: looking up VM %s of node %s by UUID: %w", c.vc.Server, uuid, node.Name, err)
		}
		if ref != nil {
			return fmt.Errorf("node %s: VM %s exists in vCenter %s but outside the configured datacenters; not treating it as gone", node.Name, uuid, c.vc.Server)
		}
	}
	return nil
}

// InstanceShutdown is true for a powered-off VM.
func (i instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	v, err := i.find(ctx, node, i.stateTTL())
	if err != nil {
		return false, err
	}
	if v == nil {
		return false, cloudprovider.InstanceNotFound
	}
	return v.power == types.VirtualMachinePowerStatePoweredOff, nil
}

// InstanceMetadata returns the providerID, addresses, instance type, zone and region.
func (i instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	v, err := i.find(ctx, node, i.c.cfg.Global.CacheTTL.Duration)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	c := i.c.conn(v.vc)
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    providerIDPrefix + v.uuid,
		InstanceType:  instanceType(v),
		NodeAddresses: i.c.rules.nodeAddresses(v.nics, c.vc.IPFamilies, or(v.hostName, v.name)),
	}
	md.Zone, md.Region, err = i.c.zones.zoneOf(ctx, c, i.c.inv.current(), v)
	if err != nil {
		return nil, err
	}
	return md, nil
}

// stateTTL bounds the age of the snapshot that answers InstanceExists and InstanceShutdown.
// The node lifecycle controller asks them only for NotReady Nodes, so a tighter bound costs
// little and a powered-off or deleted VM is seen within seconds, not within cache-ttl.
func (i instances) stateTTL() time.Duration {
	return min(i.c.cfg.Global.CacheTTL.Duration, stateMaxAge)
}

const stateMaxAge = 5 * time.Second

// find looks the Node's VM up: by providerID, then SystemUUID, then DNS name, then IP. It
// answers from the snapshot when it holds the VM and is younger than ttl; otherwise it reads
// the inventory again. nil, nil means authoritatively not found.
func (i instances) find(ctx context.Context, node *v1.Node, ttl time.Duration) (*vm, error) {
	asked := time.Now()
	snap, err := i.c.inv.fresh(ctx, asked.Add(-ttl))
	if err != nil {
		return nil, err
	}
	if v, err := match(snap, node); v != nil || err != nil {
		return v, err
	}
	if snap, err = i.c.inv.fresh(ctx, asked.Add(-missRefreshAge)); err != nil {
		return nil, err
	}
	return match(snap, node)
}

func match(s *snapshot, node *v1.Node) (*vm, error) {
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, providerIDPrefix); ok {
		// With a providerID, only that UUID counts: a VM of the same name is another machine.
		return s.byUUID[strings.ToLower(id)], nil
	} else if node.Spec.ProviderID != "" {
		return nil, fmt.Errorf("node %s has providerID %q, which is not vsphere://<uuid>", node.Name, node.Spec.ProviderID)
	}
	if u := strings.ToLower(node.Status.NodeInfo.SystemUUID); u != "" {
		if v := s.byUUID[u]; v != nil {
			return v, nil
		}
		if v := s.byUUID[swapUUID(u)]; v != nil {
			return v, nil
		}
	}
	var byName []*vm
	for _, v := range s.vms {
		if sameHost(v.hostName, node.Name) || strings.EqualFold(v.name, node.Name) {
			byName = append(byName, v)
		}
	}
	switch {
	case len(byName) == 1:
		return byName[0], nil
	case len(byName) > 1:
		return nil, fmt.Errorf("%d VMs match node name %s; set the Node's providerID or SystemUUID", len(byName), node.Name)
	}
	for _, a := range node.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || (a.Type != v1.NodeInternalIP && a.Type != v1.NodeExternalIP) {
			continue
		}
		for _, v := range s.vms {
			for _, nic := range v.nics {
				for _, s := range nic.IpAddress {
					if x, err := netip.ParseAddr(s); err == nil && x == ip {
						return v, nil
					}
				}
			}
		}
	}
	return nil, nil
}

// sameHost compares a guest hostname with a node name, fully or by the first label.
func sameHost(guest, node string) bool {
	if guest == "" {
		return false
	}
	g, n := strings.ToLower(guest), strings.ToLower(node)
	short := func(s string) string { return strings.SplitN(s, ".", 2)[0] }
	return g == n || short(g) == n || g == short(n)
}

// swapUUID turns a UUID into the byte order older VM hardware versions report to the guest
// (the first three fields little-endian), so a SystemUUID read inside either kind matches.
func swapUUID(u string) string {
	p := strings.Split(u, "-")
	if len(p) != 5 || len(p[0]) != 8 || len(p[1]) != 4 || len(p[2]) != 4 {
		return u
	}
	rev := func(s string) string {
		var b strings.Builder
		for i := len(s) - 2; i >= 0; i -= 2 {
			b.WriteString(s[i : i+2])
		}
		return b.String()
	}
	return strings.Join([]string{rev(p[0]), rev(p[1]), rev(p[2]), p[3], p[4]}, "-")
}

// instanceType is node.kubernetes.io/instance-type as the upstream vSphere CCM writes it:
// vsphere-vm.cpu-<vCPUs>.mem-<GiB>gb.os-<name>, memory in whole GiB rounded down (1,536 MB is
// mem-1gb) and the OS named by guestOSName. Every part is a label-value character.
func instanceType(v *vm) string {
	return fmt.Sprintf("vsphere-vm.cpu-%d.mem-%dgb.os-%s", v.cpus, v.memMB/1024, guestOSName(v.guestID))
}
