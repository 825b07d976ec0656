package app

import (
	"fmt"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
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
