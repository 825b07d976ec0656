package openstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// The upstream CCM's per-Service security groups (manage-security-groups there): one group
// named lb-sg-<Service UID>-<namespace>-<name> (cut to 255), described "Security Group for
// <ns>/<name> Service LoadBalancer in cluster <cluster>", with rules without description,
// attached to the member nodes' ports. ccm's own group has another name (sgName), so after a
// migration upstream's would stay attached to the nodes forever. ccm removes it:
//   - on a sync with manage-security-groups, once ccm's group is attached to every port
//     upstream's is attached to (the replacement serves), detached from those ports and
//     deleted; while a port holds upstream's group and not ccm's, it stays;
//   - when the Service is deleted, whatever the setting (as upstream does), detached and
//     deleted.
// Without manage-security-groups ccm leaves it as it is while the Service lives: it may be
// what opens the NodePorts to the load balancer.
// Only a group with both the name (the Service's UID) and the description (the cluster and
// the Service) is ever touched.

// upstreamSGName is the upstream CCM's group name for svc.
func upstreamSGName(svc *v1.Service) string {
	n := fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, svc.Namespace, svc.Name)
	if len(n) > 255 {
		n = n[:255]
	}
	return n
}

// upstreamSGDescription is the description the upstream CCM gives it.
func upstreamSGDescription(clusterName string, svc *v1.Service) string {
	return fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterName)
}

// upstreamSGs are the groups among all that are provably upstream's group for svc. Pure.
func upstreamSGs(all []groups.SecGroup, clusterName string, svc *v1.Service) []groups.SecGroup {
	name, desc := upstreamSGName(svc), upstreamSGDescription(clusterName, svc)
	var out []groups.SecGroup
	for _, g := range all {
		if svc.UID != "" && g.Name == name && g.Description == desc {
			out = append(out, g)
		}
	}
	return out
}

// findUpstreamSGs lists upstream's groups for svc: from the snapshot when it holds groups,
// else by name.
func findUpstreamSGs(ctx context.Context, cl *clients, clusterName string, svc *v1.Service, seen *snapshot) ([]groups.SecGroup, error) {
	if all, ok := seen.group(upstreamSGName(svc)); ok {
		return upstreamSGs(all, clusterName, svc), nil
	}
	pages, err := groups.List(cl.network, groups.ListOpts{Name: upstreamSGName(svc)}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing security groups named %s: %w", upstreamSGName(svc), err)
	}
	all, err := groups.ExtractGroups(pages)
	if err != nil {
		return nil, err
	}
	return upstreamSGs(all, clusterName, svc), nil
}

// retireUpstreamSG removes upstream's group for the Service once ccm's group is on every port
// it is on (served: the ports that hold ccm's group now). served nil: the Service is being
// deleted, remove it from every port.
func (r *svcRun) retireUpstreamSG(ctx context.Context, served map[string]bool) error {
	cl, svc := r.cl, r.svc
	gs, err := findUpstreamSGs(ctx, cl, r.clusterName, svc, r.rep.seen)
	if err != nil || len(gs) == 0 {
		return err
	}
	for _, g := range gs {
		attached, err := listPorts(ctx, cl, ports.ListOpts{SecurityGroups: []string{g.ID}})
		if err != nil {
			return err
		}
		if served != nil {
			if i := slices.IndexFunc(attached, func(p ports.Port) bool { return !served[p.ID] }); i >= 0 {
				klog.V(2).InfoS("Keeping the upstream CCM's security group: a port holds it and not ccm's", "service", klog.KObj(svc), "group", g.ID, "port", attached[i].ID)
				continue
			}
		}
		for _, p := range attached {
			if err := updatePortGroups(ctx, cl, p, func(ids []string) []string {
				return slices.DeleteFunc(ids, func(id string) bool { return id == g.ID })
			}); err != nil {
				return err
			}
		}
		if err := groups.Delete(ctx, cl.network, g.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return fmt.Errorf("deleting the upstream CCM's security group %s: %w", g.ID, err)
		}
		klog.InfoS("Deleted the upstream CCM's security group", "service", klog.KObj(svc), "group", g.ID, "name", g.Name, "ports", len(attached))
	}
	return nil
}
