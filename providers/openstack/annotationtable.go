package openstack

import (
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotations is every annotation this provider reads, with what each can reach in the
// project (common/reach): the parser's list (supportedAnnotations), the docs' table
// (docs/security.md) and the generated hostile suite's input.
var annotations = reach.Table{
	{Name: annLoadBalancerID, Reach: reach.Object, Object: "load balancer",
		Check: "read with its tags; a CCM's record of the Service's own is followed only while the Service's status serves its address"},
	{Name: annPortID, Reach: reach.Object, Object: "port", Check: "read before the load balancer is made: free (no device) and tagged for this Service"},
	{Name: annSubnetID, Reach: reach.Object, Untagged: true, Object: "subnet", Check: "or named in the cloud config"},
	{Name: annNetworkID, Reach: reach.Object, Untagged: true, Object: "network", Check: "or named in the cloud config"},
	{Name: annMemberSubnetID, Reach: reach.Object, Untagged: true, Object: "subnet", Check: "or named in the cloud config"},
	{Name: annFloatingNetworkID, Reach: reach.Object, Untagged: true, Object: "network", Check: "or named in the cloud config"},
	{Name: annFloatingSubnetID, Reach: reach.Object, Untagged: true, Object: "subnet", Check: "or named in the cloud config"},
	{Name: annFloatingSubnet, Reach: reach.Pattern, Check: "a glob or ~regexp; every subnet it picks must be one floating-subnet-id would take"},
	{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "read only when spec.loadBalancerSourceRanges is empty, as upstream"},
	{Name: annFloatingSubnetTags, Reach: reach.Text, Check: "a Neutron tag filter; every subnet it picks must be one floating-subnet-id would take"},
	{Name: annTLSContainerRef, Reach: reach.Text, Check: "a Barbican reference Octavia reads with its own credentials"},
	{Name: annFlavorID, Reach: reach.Text, Check: "an Octavia flavor, the operator's catalogue"},
	{Name: annAvailabilityZone, Reach: reach.Text, Check: "an Octavia availability zone, the operator's catalogue"},
	{Name: annHostname, Reach: reach.Text},
	{Name: annNodeSelector, Reach: reach.Text},
	{Name: annClass, Reach: reach.Setting, Check: "a [LoadBalancerClass] of the cloud config"},
	{Name: annInternal, Reach: reach.Setting},
	{Name: annKeepFloatingIP, Reach: reach.Setting},
	{Name: annProxyProtocol, Reach: reach.Setting},
	{Name: annLBMethod, Reach: reach.Setting},
	{Name: annHealthMonitor, Reach: reach.Setting},
	{Name: annXForwardedFor, Reach: reach.Setting},
	{Name: annLoadBalancerAddress, Reach: reach.Setting, Check: "written by ccm, never read"},
	{Name: annConnLimit, Reach: reach.Setting},
	{Name: annTimeoutClientData, Reach: reach.Setting},
	{Name: annTimeoutMemberConnect, Reach: reach.Setting},
	{Name: annTimeoutMemberData, Reach: reach.Setting},
	{Name: annTimeoutTCPInspect, Reach: reach.Setting},
	{Name: annMonitorDelay, Reach: reach.Setting},
	{Name: annMonitorTimeout, Reach: reach.Setting},
	{Name: annMonitorMaxRetries, Reach: reach.Setting},
	{Name: annMonitorRetriesDown, Reach: reach.Setting},
}

// supportedAnnotations are the table's annotations under this provider's prefix; any other
// name with the prefix gets a Warning that it is ignored.
var supportedAnnotations = func() map[string]bool {
	out := map[string]bool{}
	for _, a := range annotations {
		out[a.Name] = true
	}
	return out
}()

var patterns = reach.NewPatterns()

var checker = &reach.Checker{Table: annotations, Prefixes: []string{annPrefix}, Patterns: patterns}

// checkValues applies the table's checks that need no cloud call, before any.
func checkValues(svc *v1.Service) error { return checker.Values(svc) }

// AnnotationTable is the provider's annotation table, for the suites that run outside the
// package (the real services' conformance run).
func AnnotationTable() reach.Table { return annotations }
