package ownership

import (
	"fmt"
	"regexp"
)

// DefaultClusterName is the library's default --cluster-name. Two clusters that both keep it in
// one cloud account, project or vCenter would take each other's objects for their own.
const DefaultClusterName = "kubernetes"

// PlaceholderClusterName is what the deploy overlays ship, so that an install that forgot to
// set a name fails at start with a message saying what to do.
const PlaceholderClusterName = "CHANGE-ME"

// clusterNameRE: the name lands in tags, descriptions and load balancer names; keep it to a
// DNS-label-like set that every cloud accepts and that cannot break the description format.
var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// ClusterNameScoped is implemented by providers that scope ownership by --cluster-name (the
// name the library passes to every LoadBalancer call). ccm calls UseClusterName once, before
// Initialize, after CheckClusterName accepted the name.
type ClusterNameScoped interface {
	UseClusterName(name string)
}

// CheckClusterName refuses the library's default and the overlays' placeholder unless the
// operator allowed the default explicitly, and names that do not fit clouds' tags and names.
func CheckClusterName(name string, allowDefault bool) error {
	switch {
	case name == PlaceholderClusterName:
		return fmt.Errorf("--cluster-name is still the placeholder %q from the deploy manifests: set it to a name unique among the clusters that share this cloud account, project or vCenter", name)
	case name == DefaultClusterName && !allowDefault:
		return fmt.Errorf("--cluster-name is the default %q: this provider marks what it owns with the cluster name, so two clusters that both keep the default "+
			"in one cloud account, project or vCenter would take each other's load balancers for their own. Set --cluster-name to a unique name, "+
			"or pass --allow-default-cluster-name if no other cluster shares this cloud", name)
	case !clusterNameRE.MatchString(name):
		return fmt.Errorf("--cluster-name %q: use 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", name)
	}
	return nil
}

// ClusterScope is the part of a provider that remembers the accepted cluster name; embed it.
type ClusterScope struct{ name string }

// UseClusterName implements ClusterNameScoped.
func (c *ClusterScope) UseClusterName(name string) { c.name = name }

// HasClusterID reports whether ccm has handed the provider a checked cluster name.
func (c *ClusterScope) HasClusterID() bool { return c.name != "" }

// ClusterName returns the accepted name ("" before UseClusterName).
func (c *ClusterScope) ClusterName() string { return c.name }
