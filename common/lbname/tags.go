package lbname

import "strings"

// Ownership tags, in the upstream AWS provider's vocabulary so that resources created by it are
// recognised after a migration.
const (
	// ClusterTagPrefix + cluster ID = "owned" marks a resource this cluster created and may delete.
	ClusterTagPrefix = "kubernetes.io/cluster/"
	// ServiceTag holds "namespace/name" of the Service a load balancer serves.
	ServiceTag = "kubernetes.io/service-name"

	Owned  = "owned"
	Shared = "shared"
)

// Tags returns the ownership tags for a resource created for Service namespace/name.
func Tags(cluster, namespace, name string) map[string]string {
	return map[string]string{
		ClusterTagPrefix + cluster: Owned,
		ServiceTag:                 namespace + "/" + name,
	}
}

// Owner reports which Service of cluster owns a resource with these tags. ok is false unless the
// resource is tagged as owned by this cluster: "shared" resources are never ours to delete.
func Owner(cluster string, tags map[string]string) (namespace, name string, ok bool) {
	if tags[ClusterTagPrefix+cluster] != Owned {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(tags[ServiceTag], "/")
	if !ok || namespace == "" || name == "" {
		return "", "", false
	}
	return namespace, name, true
}
