package app

import (
	"fmt"
	"strings"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/names"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/routes"
)

// applyClusterName checks --cluster-name and hands it to a provider that marks what it owns with
// it (ownership.ClusterNameScoped). The deploy manifests' placeholder is refused for every
// provider: it means the operator has not filled it in. The library's default is refused only
// for the providers it scopes, where two clusters that both keep it would take each other's
// load balancers, unless the operator allowed it for a cloud no other cluster shares.
func applyClusterName(c cloudprovider.Interface, name string, allowDefault bool) error {
	s, scoped := c.(ownership.ClusterNameScoped)
	if !scoped {
		if name == ownership.PlaceholderClusterName {
			return ownership.CheckClusterName(name, allowDefault)
		}
		return nil
	}
	if err := ownership.CheckClusterName(name, allowDefault); err != nil {
		return err
	}
	s.UseClusterName(name)
	return nil
}

// clusterNameReport is what check-config says about the cluster name for this provider.
func clusterNameReport(c cloudprovider.Interface, name string, allowDefault bool) (string, error) {
	if _, scoped := c.(ownership.ClusterNameScoped); !scoped {
		if err := applyClusterName(c, name, allowDefault); err != nil {
			return "", err
		}
		return "", nil
	}
	if err := ownership.CheckClusterName(name, allowDefault); err != nil {
		return "", err
	}
	return fmt.Sprintf("cluster name %q: this provider marks every load balancer, address and security group it creates with it; "+
		"keep it unique among the clusters that share this cloud account, project or vCenter, and never change it on a running cluster", name), nil
}

// applyClusterCIDRs hands --cluster-cidr to a provider whose routes are scoped by it
// (routes.ClusterCIDRScoped): a route outside it is never the cluster's to list or delete.
func applyClusterCIDRs(c cloudprovider.Interface, flag string) error {
	s, scoped := c.(routes.ClusterCIDRScoped)
	if !scoped {
		return nil
	}
	cidrs, err := routes.ParseClusterCIDRs(flag)
	if err != nil {
		return err
	}
	s.UseClusterCIDRs(cidrs)
	return nil
}

// routeControllerOn reports whether --controllers runs the route controller: named (by its
// name or the upstream charts' alias "route"), or "*" without "-route". The upstream charts'
// lists without it must start with a [Route] key and no --cluster-cidr, as upstream does.
func routeControllerOn(list []string) bool {
	star := false
	for _, c := range list {
		switch strings.TrimSpace(c) {
		case "-route", "-" + names.NodeRouteController:
			return false
		case "route", names.NodeRouteController:
			return true
		case "*":
			star = true
		}
	}
	return star
}
