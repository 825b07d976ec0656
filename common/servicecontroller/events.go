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

// eventCacheSize bounds each of the three caches of the Event correlator (client-go's default
// 4,096 entries): it remembers, per Service and reason, what was recorded lately, to count
// repeats, aggregate similar Events and rate-limit a Service that floods. The default cost 5.5
// MB of heap once 4,096 Services had Events (a burst of new Services fills it: two Events each);
// 1,024 cost 1.6 MB, and still cover every Service that is failing or flapping at one time in
// all but the largest clusters. Forgetting an older Service only means its next Event is
// created anew rather than counted on the last one (one API write either way).
const eventCacheSize = 1024
