package annotations

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotationRule is everything ccm knows of one annotation it reads: what it can reach in the
// account (the embedded reach.Annotation), which load balancer type uses it, how its value is
// parsed into Options, what "" means, and how upstream reads it and what it defaults to (for
// whoever compares ccm with upstream; docs/providers/aws.md's parity table says the same to
// operators, and lists exactly these names).
type annotationRule struct {
	reach.Annotation
	// For is the load balancer type that uses it; on the other one it is accepted with advice
	// that it does nothing, saying NotUsed (upstream ignores it there, or refuses it).
	For     lbTypes
	NotUsed string
	// Empty is what a value of "" means.
	Empty emptyRule
	// Parse sets o's fields from the value, or refuses it naming the annotation; nil for one
	// read beside a spec field after the annotations (the source ranges).
	Parse parseFunc
	// Upstream is how upstream reads the value; Default what it does without the annotation.
	Upstream, Default string
}

// lbTypes are the load balancer types an annotation applies to.
type lbTypes int

const (
	bothTypes lbTypes = iota
	classicOnly
	nlbOnly
)

// emptyRule is what an annotation's "" means, as upstream reads it. A chart's
// {{ .Values.x | quote }} with x unset renders "", so where upstream reads "" as no annotation,
// so does ccm, with no Warning; where upstream refuses it, the parser refuses it too.
type emptyRule int

const (
	emptyUnset           emptyRule = iota // "" is no annotation
	emptyParsed                           // "" goes to Parse (which refuses it)
	emptyParsedOnClassic                  // no annotation on an NLB, parsed on a classic ELB
)

// parseFunc reads the value v of the annotation Prefix+suffix into o: a bad value is
// an Error naming it. o.NLB is already set.
type parseFunc func(o *Options, suffix, v string) error

// Why an annotation of one type is not used on the other.
const (
	whyNoDraining = "NLBs have no connection draining setting (target group attribute deregistration_delay.timeout_seconds)"
	hcRangeText   = "strconv.ParseInt, not trimmed; refused outside AWS's range"
)

// annotationRules is every annotation this provider reads, one entry each: the parser's table
// (Parse), the docs' reach table (docs/security.md, from Table) and the generated
// hostile suite's input. The order is the reach docs' order within each kind.
var annotationRules = []annotationRule{
	{Annotation: reach.Annotation{Name: Prefix + Subnets, Reach: reach.Object, Object: "subnet", List: true, Cluster: true,
		Check: "by ID or Name tag; tagged kubernetes.io/cluster/<id> (owned or shared)"},
		Empty: emptyParsed, Parse: parseSubnets,
		Upstream: "comma-separated subnet IDs or Name tags; empty refused", Default: "one per zone tagged kubernetes.io/role/elb (internal-elb) and for the cluster"},
	{Annotation: reach.Annotation{Name: Prefix + SecurityGroup, Reach: reach.Object, Object: "security group", List: true,
		Check: "nothing is written into a named group"},
		Parse:    groupsInto(func(o *Options) *[]string { return &o.SecurityGroups }),
		Upstream: "comma-separated group IDs replacing the load balancer's own group", Default: "the load balancer's own group"},
	{Annotation: reach.Annotation{Name: Prefix + ExtraGroups, Reach: reach.Object, Object: "security group", List: true,
		Check: "nothing is written into a named group"},
		For:      classicOnly,
		NotUsed:  "upstream supports it only for classic ELBs (it refuses it on an NLB); name all of the NLB's groups in security-groups instead (with NLBSecurityGroupMode = Managed)",
		Parse:    groupsInto(func(o *Options) *[]string { return &o.ExtraGroups }),
		Upstream: "comma-separated group IDs added to the load balancer's groups", Default: "none"},
	{Annotation: reach.Annotation{Name: Prefix + SSLCert, Reach: reach.Object, Untagged: true, Object: "certificate",
		Check: "ccm does not read certificates"},
		Parse:    parseSSLCert,
		Upstream: "a certificate ARN, read when not empty", Default: "no listener terminates TLS"},
	{Annotation: reach.Annotation{Name: Prefix + AccessLogBucket, Reach: reach.Object, Untagged: true, Object: "S3 bucket",
		With:  map[string]string{Prefix + AccessLog: "true"},
		Check: "ccm does not read buckets"},
		Parse:    trimmedInto(func(o *Options) *string { return &o.Attrs.Bucket }),
		Upstream: "trimmed; read with access-log-enabled true", Default: "none"},
	{Annotation: reach.Annotation{Name: Prefix + EIPAllocations, Reach: reach.Object, Object: "Elastic IP", List: true,
		With:  map[string]string{Prefix + Type: "nlb"},
		Check: "read with DescribeAddresses before the NLB is made: tagged for this Service and not associated"},
		For: nlbOnly, NotUsed: "a classic ELB takes no Elastic IPs", Parse: parseEIPs,
		Upstream: "comma-separated allocation IDs, one per subnet, at creation", Default: "addresses AWS assigns"},
	{Annotation: reach.Annotation{Name: Prefix + HCPort, Reach: reach.NodePort,
		Check: "or traffic-port, or the shared kube-proxy probe port; admitted on the Nodes from the load balancer's subnets only"},
		Empty: emptyParsed, Parse: parseHCPort,
		Upstream: "a port number or \"traffic-port\", not trimmed", Default: "the first nodePort; with Local the health check nodePort; or the shared probe"},
	{Annotation: reach.Annotation{Name: sourceranges.Annotation, Reach: reach.Ranges, Check: "read only when spec.loadBalancerSourceRanges is empty, as upstream"},
		Upstream: "comma-separated CIDRs, when spec.loadBalancerSourceRanges is empty", Default: "0.0.0.0/0"},
	{Annotation: reach.Annotation{Name: Prefix + ExtraTags, Reach: reach.Text, Check: "ownership and ccm tag keys refused"},
		Parse:    func(o *Options, _, v string) (err error) { o.ExtraTags, err = parseExtraTags(v); return err },
		Upstream: "k=v,… (k=v=x is k=v; nothing inside an item trimmed)", Default: "no tags beyond ccm's"},
	{Annotation: reach.Annotation{Name: Prefix + NodeLabels, Reach: reach.Text},
		Parse:    func(o *Options, _, v string) (err error) { o.NodeLabels, err = parseNodeLabels(v); return err },
		Upstream: "k=v,k2 (every key, with the value unless empty), not a label selector", Default: "every Node"},
	{Annotation: reach.Annotation{Name: Prefix + HCPath, Reach: reach.Text},
		Parse:    parseHCPath,
		Upstream: "as written, read when not empty", Default: "/ (/healthz with Local)"},
	{Annotation: reach.Annotation{Name: Prefix + AccessLogPrefix, Reach: reach.Text},
		Parse:    trimmedInto(func(o *Options) *string { return &o.Attrs.Prefix }),
		Upstream: "trimmed", Default: "none"},
	{Annotation: reach.Annotation{Name: Prefix + TGAttributes, Reach: reach.Text},
		For: nlbOnly, NotUsed: "a classic ELB has no target groups",
		Parse:    func(o *Options, _, v string) (err error) { o.TGAttributes, err = parseTGAttributes(v); return err },
		Upstream: "k=v,… as additional-resource-tags; keys other than two refused", Default: "the target groups' own"},
	{Annotation: reach.Annotation{Name: Prefix + PrivateAddresses, Reach: reach.Text, Check: "IPv4 addresses; EC2 refuses one in use or outside the subnets"},
		For: nlbOnly, NotUsed: "a classic ELB takes no private addresses", Parse: parsePrivateIPs,
		Upstream: "comma-separated IPv4 addresses, one per subnet, at creation", Default: "addresses AWS assigns"},
	{Annotation: reach.Annotation{Name: Prefix + SSLPolicy, Reach: reach.Text, Check: "a policy name"},
		// An NLB listener gets a policy only when it is not ""; a classic ELB's policy would
		// refer to "", which ELB refuses.
		Empty: emptyParsedOnClassic, Parse: parseSSLPolicy,
		Upstream: "a predefined policy name, as written", Default: "ELB's default policy"},
	{Annotation: reach.Annotation{Name: Prefix + Type, Reach: reach.Setting},
		Parse:    adviseType,
		Upstream: "exactly \"nlb\" is an NLB; \"external\", \"nlb-ip\" another controller's", Default: "classic ELB"},
	{Annotation: reach.Annotation{Name: Prefix + Internal, Reach: reach.Setting},
		// Upstream: any value but "false" (and empty) is internal, "0.0.0.0/0" included.
		Parse:    func(o *Options, _, v string) error { o.Internal = v != "" && v != "false"; return nil },
		Upstream: "any value but \"false\" (and empty) is internal", Default: "internet-facing"},
	{Annotation: reach.Annotation{Name: Prefix + SSLPorts, Reach: reach.Setting},
		Parse:    func(o *Options, _, v string) error { o.SSLPorts = sslPortItems(v); return nil },
		Upstream: "numbers or port names, items as written; \"*\" alone is every port", Default: "every port (with ssl-cert)"},
	{Annotation: reach.Annotation{Name: Prefix + Backend, Reach: reach.Setting},
		Parse:    parseBackend,
		Upstream: "case-sensitive for listeners, lower-cased for the health check", Default: "tcp"},
	{Annotation: reach.Annotation{Name: Prefix + CrossZone, Reach: reach.Setting},
		Parse:    boolInto(func(o *Options) *bool { return &o.CrossZone }),
		Upstream: "strconv.ParseBool", Default: "false"},
	{Annotation: reach.Annotation{Name: Prefix + HCHealthy, Reach: reach.Setting},
		Empty: emptyParsed, Parse: hcNumber(2, 10, 10, func(h *HCOptions) *int32 { return &h.Healthy }),
		Upstream: hcRangeText, Default: "classic 2, NLB 3 (2 with Local)"},
	{Annotation: reach.Annotation{Name: Prefix + HCUnhealthy, Reach: reach.Setting},
		Empty: emptyParsed, Parse: hcNumber(2, 10, 10, func(h *HCOptions) *int32 { return &h.Unhealthy }),
		Upstream: hcRangeText, Default: "classic 6, NLB 3 (2 with Local)"},
	{Annotation: reach.Annotation{Name: Prefix + HCTimeout, Reach: reach.Setting},
		Empty: emptyParsed, Parse: hcNumber(2, 60, 120, func(h *HCOptions) *int32 { return &h.Timeout }),
		Upstream: hcRangeText, Default: "classic 5 s, NLB 10 s"},
	{Annotation: reach.Annotation{Name: Prefix + HCInterval, Reach: reach.Setting},
		Empty: emptyParsed, Parse: hcNumber(5, 300, 300, func(h *HCOptions) *int32 { return &h.Interval }),
		Upstream: hcRangeText, Default: "classic 10 s, NLB 30 s (10 s with Local)"},
	{Annotation: reach.Annotation{Name: Prefix + HCProtocol, Reach: reach.Setting},
		Empty: emptyParsed, Parse: parseHCProtocol,
		Upstream: "upper-cased, not trimmed", Default: "TCP (SSL behind backend https or ssl on a classic ELB); HTTP with Local"},
	{Annotation: reach.Annotation{Name: Prefix + ProxyProtocol, Reach: reach.Setting},
		For: classicOnly, NotUsed: "upstream ignores it on an NLB; set target-group-attributes proxy_protocol_v2.enabled=true instead",
		Parse:    parseProxyProtocol,
		Upstream: "exactly \"*\" (every backend port)", Default: "off"},
	{Annotation: reach.Annotation{Name: Prefix + IdleTimeout, Reach: reach.Setting},
		For: classicOnly, NotUsed: "NLBs have no idle timeout setting",
		Parse:    rangeInto(1, 4000, func(o *Options) *int32 { return &o.Attrs.IdleTimeout }),
		Upstream: "strconv.ParseInt, seconds", Default: "60 s (written by upstream)"},
	{Annotation: reach.Annotation{Name: Prefix + Draining, Reach: reach.Setting},
		For: classicOnly, NotUsed: whyNoDraining,
		Parse:    boolInto(func(o *Options) *bool { return &o.Attrs.Draining }),
		Upstream: "strconv.ParseBool", Default: "false"},
	{Annotation: reach.Annotation{Name: Prefix + DrainingTimeout, Reach: reach.Setting},
		For: classicOnly, NotUsed: whyNoDraining,
		Parse:    rangeInto(1, 3600, func(o *Options) *int32 { return &o.Attrs.DrainingTimeout }),
		Upstream: "strconv.ParseInt, seconds", Default: "not set (ELB keeps its own)"},
	{Annotation: reach.Annotation{Name: Prefix + AccessLog, Reach: reach.Setting},
		Parse:    boolInto(func(o *Options) *bool { return &o.Attrs.AccessLog }),
		Upstream: "strconv.ParseBool", Default: "false"},
	{Annotation: reach.Annotation{Name: Prefix + AccessLogEmit, Reach: reach.Setting},
		For: classicOnly, NotUsed: "NLB access logs have no emit interval",
		Parse:    parseEmitInterval,
		Upstream: "strconv.ParseInt, minutes", Default: "not set (ELB's 60)"},
}

// Table is the reach part of annotationRules (common/reach): the docs' table
// (docs/security.md), the checks made before parsing, and the generated hostile suite's input.
var Table = func() reach.Table {
	out := make(reach.Table, 0, len(annotationRules))
	for _, r := range annotationRules {
		out = append(out, r.Annotation)
	}
	return out
}()

// rulesBySuffix are the rules of the annotations under Prefix, by suffix.
var rulesBySuffix = func() map[string]*annotationRule {
	out := map[string]*annotationRule{}
	for i, r := range annotationRules {
		if s, ok := strings.CutPrefix(r.Name, Prefix); ok {
			out[s] = &annotationRules[i]
		}
	}
	return out
}()

// usedFor reports whether the annotation does something for this load balancer type, and the
// advice when it does not.
func (r *annotationRule) usedFor(nlb bool) (bool, string) {
	switch {
	case nlb && r.For == classicOnly:
		return false, fmt.Sprintf("%s is not used for an NLB: %s", r.Name, r.NotUsed)
	case !nlb && r.For == nlbOnly:
		return false, fmt.Sprintf("%s is not used for a classic ELB: %s", r.Name, r.NotUsed)
	}
	return true, ""
}

// EmptyIsUnset reports whether upstream reads the annotation's empty value as no annotation
// (its rule's Empty); the parity table in docs/providers/aws.md says which is which.
func EmptyIsUnset(suffix string, nlb bool) bool {
	r, ok := rulesBySuffix[suffix]
	if !ok {
		return true
	}
	return r.Empty == emptyUnset || (r.Empty == emptyParsedOnClassic && nlb)
}

// Supported are the annotation suffixes ccm implements (those of the table under the prefix);
// upstream reads exactly these too (a test checks the list against upstream's). Any other
// name with the prefix is ignored, as upstream ignores it, with a Warning naming it: a typo
// must not pass silently, and a Service that also carries the AWS Load Balancer Controller's
// annotations (nlb-target-type, scheme, name, ...) must still be reconciled.
var Supported = func() []string {
	var out []string
	for _, a := range Table {
		if s, ok := strings.CutPrefix(a.Name, Prefix); ok {
			out = append(out, s)
		}
	}
	return out
}()

// CheckUnreadable decides the named objects whose ownership ccm cannot read (a certificate, a
// bucket): only the operator can allow them. Before any cloud call.
func CheckUnreadable(id ownership.Identity, opts *Options, allow ownership.Allow) error {
	for _, named := range []struct{ suffix, value string }{{SSLCert, opts.SSLCert}, {AccessLogBucket, opts.Attrs.Bucket}} {
		if named.value == "" || (named.suffix == AccessLogBucket && !opts.Attrs.AccessLog) {
			continue
		}
		a, _ := Table.Lookup(Prefix + named.suffix)
		if err := reach.Named(id, allow, a, named.value, reach.Evidence{}); err != nil {
			return err
		}
	}
	return nil
}

// UnsupportedSpec refuses the spec fields neither AWS load balancer type can honour, as
// upstream refuses them, before any write: a Service that looks served must be.
func UnsupportedSpec(svc *v1.Service) error {
	if svc.Spec.LoadBalancerIP != "" { //nolint:staticcheck // the field upstream refuses
		return fmt.Errorf("spec.loadBalancerIP %q: an AWS load balancer's addresses are chosen by AWS; remove it (an NLB takes Elastic IPs with %s%s)",
			svc.Spec.LoadBalancerIP, Prefix, EIPAllocations) //nolint:staticcheck
	}
	if svc.Spec.SessionAffinity != "" && svc.Spec.SessionAffinity != v1.ServiceAffinityNone {
		return fmt.Errorf("spec.sessionAffinity %s: neither a classic ELB nor an NLB keeps a client on one Node; set it to None", svc.Spec.SessionAffinity)
	}
	return nil
}
