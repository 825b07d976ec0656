package aws

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotations is every annotation this provider reads, with what each can reach in the
// account (common/reach): the parser's list, the docs' table (docs/security.md) and the
// generated hostile suite's input.
var annotations = reach.Table{
	{Name: annotationPrefix + annSubnets, Reach: reach.Object, Object: "subnet", List: true, Cluster: true,
		Check: "by ID or Name tag; tagged kubernetes.io/cluster/<id> (owned or shared)"},
	{Name: annotationPrefix + annSecurityGroup, Reach: reach.Object, Object: "security group", List: true,
		Check: "nothing is written into a named group"},
	{Name: annotationPrefix + annExtraGroups, Reach: reach.Object, Object: "security group", List: true,
		Check: "nothing is written into a named group"},
	{Name: annotationPrefix + annSSLCert, Reach: reach.Object, Untagged: true, Object: "certificate",
		Check: "ccm does not read certificates"},
	{Name: annotationPrefix + annAccessLogBucket, Reach: reach.Object, Untagged: true, Object: "S3 bucket",
		With:  map[string]string{annotationPrefix + annAccessLog: "true"},
		Check: "ccm does not read buckets"},
	{Name: annotationPrefix + annEIPAllocations, Reach: reach.Object, Object: "Elastic IP", List: true,
		With:  map[string]string{annotationPrefix + annType: "nlb"},
		Check: "read with DescribeAddresses before the NLB is made: tagged for this Service and not associated"},
	{Name: annotationPrefix + annHCPort, Reach: reach.NodePort,
		Check: "or traffic-port, or the shared kube-proxy probe port; admitted on the Nodes from the load balancer's subnets only"},
	{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "read only when spec.loadBalancerSourceRanges is empty, as upstream"},
	{Name: annotationPrefix + annExtraTags, Reach: reach.Text, Check: "ownership and ccm tag keys refused"},
	{Name: annotationPrefix + annNodeLabels, Reach: reach.Text},
	{Name: annotationPrefix + annHCPath, Reach: reach.Text},
	{Name: annotationPrefix + annAccessLogPrefix, Reach: reach.Text},
	{Name: annotationPrefix + annTGAttributes, Reach: reach.Text},
	{Name: annotationPrefix + annPrivateAddresses, Reach: reach.Text, Check: "IPv4 addresses; EC2 refuses one in use or outside the subnets"},
	{Name: annotationPrefix + annSSLPolicy, Reach: reach.Text, Check: "a policy name"},
	{Name: annotationPrefix + annType, Reach: reach.Setting},
	{Name: annotationPrefix + annInternal, Reach: reach.Setting},
	{Name: annotationPrefix + annSSLPorts, Reach: reach.Setting},
	{Name: annotationPrefix + annBackend, Reach: reach.Setting},
	{Name: annotationPrefix + annCrossZone, Reach: reach.Setting},
	{Name: annotationPrefix + annHCHealthy, Reach: reach.Setting},
	{Name: annotationPrefix + annHCUnhealthy, Reach: reach.Setting},
	{Name: annotationPrefix + annHCTimeout, Reach: reach.Setting},
	{Name: annotationPrefix + annHCInterval, Reach: reach.Setting},
	{Name: annotationPrefix + annHCProtocol, Reach: reach.Setting},
	{Name: annotationPrefix + annProxyProtocol, Reach: reach.Setting},
	{Name: annotationPrefix + annIdleTimeout, Reach: reach.Setting},
	{Name: annotationPrefix + annDraining, Reach: reach.Setting},
	{Name: annotationPrefix + annDrainingTimeout, Reach: reach.Setting},
	{Name: annotationPrefix + annAccessLog, Reach: reach.Setting},
	{Name: annotationPrefix + annAccessLogEmit, Reach: reach.Setting},
}

// supported are the annotation suffixes ccm implements (those of the table under the prefix);
// upstream reads exactly these too (a test checks the list against upstream's). Any other
// name with the prefix is ignored, as upstream ignores it, with a Warning naming it: a typo
// must not pass silently, and a Service that also carries the AWS Load Balancer Controller's
// annotations (nlb-target-type, scheme, name, ...) must still be reconciled.
var supported = func() []string {
	var out []string
	for _, a := range annotations {
		if s, ok := strings.CutPrefix(a.Name, annotationPrefix); ok {
			out = append(out, s)
		}
	}
	return out
}()

// checker is the table's checks that need no cloud call; the shared kube-proxy probe port is
// the operator's, so a health check may name it.
func (c *Config) checker() *reach.Checker {
	ch := &reach.Checker{Table: annotations, Prefixes: []string{annotationPrefix}, Words: []string{trafficPort}}
	if p, _, ok := c.sharedProbe(); ok {
		ch.ExtraPorts = []int32{p}
	}
	return ch
}

// checkUnreadable decides the named objects whose ownership ccm cannot read (a certificate, a
// bucket): only the operator can allow them. Before any cloud call.
func checkUnreadable(id ownership.Identity, opts *lbOptions, allow ownership.Allow) error {
	for _, named := range []struct{ suffix, value string }{{annSSLCert, opts.SSLCert}, {annAccessLogBucket, opts.Attrs.Bucket}} {
		if named.value == "" || (named.suffix == annAccessLogBucket && !opts.Attrs.AccessLog) {
			continue
		}
		a, _ := annotations.Lookup(annotationPrefix + named.suffix)
		if err := reach.Named(id, allow, a, named.value, reach.Evidence{}); err != nil {
			return err
		}
	}
	return nil
}

// unsupportedSpec refuses the spec fields neither AWS load balancer type can honour, as
// upstream refuses them, before any write: a Service that looks served must be.
func unsupportedSpec(svc *v1.Service) error {
	if svc.Spec.LoadBalancerIP != "" { //nolint:staticcheck // the field upstream refuses
		return fmt.Errorf("spec.loadBalancerIP %q: an AWS load balancer's addresses are chosen by AWS; remove it (an NLB takes Elastic IPs with %s%s)",
			svc.Spec.LoadBalancerIP, annotationPrefix, annEIPAllocations) //nolint:staticcheck
	}
	if svc.Spec.SessionAffinity != "" && svc.Spec.SessionAffinity != v1.ServiceAffinityNone {
		return fmt.Errorf("spec.sessionAffinity %s: neither a classic ELB nor an NLB keeps a client on one Node; set it to None", svc.Spec.SessionAffinity)
	}
	return nil
}
