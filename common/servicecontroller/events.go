package servicecontroller

// The Event reasons and messages of k8s.io/cloud-provider v0.37's service controller: alerts,
// dashboards and runbooks written for it match on them, so they are kept as they are.
const (
	reasonEnsuring      = "EnsuringLoadBalancer"
	reasonEnsured       = "EnsuredLoadBalancer"
	reasonSyncFailed    = "SyncLoadBalancerFailed"
	reasonDeleting      = "DeletingLoadBalancer"
	reasonDeleted       = "DeletedLoadBalancer"
	reasonDeleteFailed  = "DeleteLoadBalancerFailed"
	reasonUpdated       = "UpdatedLoadBalancer"
	reasonUpdateFailed  = "UpdateLoadBalancerFailed"
	reasonNoNodes       = "UnAvailableLoadBalancer"
	messageEnsuring     = "Ensuring load balancer"
	messageEnsured      = "Ensured load balancer"
	messageDeleting     = "Deleting load balancer"
	messageDeleted      = "Deleted load balancer"
	messageUpdated      = "Updated load balancer with new hosts"
	messageNoNodes      = "There are no available nodes for LoadBalancer"
	formatSyncFailed    = "Error syncing load balancer: %v"
	formatDeleteFailed  = "Error deleting load balancer: %v"
	formatUpdateFailed  = "Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v"
	maxNodeNamesInEvent = 20
	eventSource         = "service-controller"
)
