package aws

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ccm-project/ccm/common/ownership"
)

// annotationPrefix is upstream's; every Service annotation this provider reads starts with it.
const annotationPrefix = "service.beta.kubernetes.io/aws-load-balancer-"

// Supported annotations (suffixes after annotationPrefix).
const (
	annType          = "type"
	annInternal      = "internal"
	annSubnets       = "subnets"
	annSecurityGroup = "security-groups"
	annSSLCert       = "ssl-cert"
	annSSLPorts      = "ssl-ports"
	annBackend       = "backend-protocol"
	annCrossZone     = "cross-zone-load-balancing-enabled"
	annExtraTags     = "additional-resource-tags"
	annNodeLabels    = "target-node-labels"
	annHCHealthy     = "healthcheck-healthy-threshold"
	annHCUnhealthy   = "healthcheck-unhealthy-threshold"
	annHCTimeout     = "healthcheck-timeout"
	annHCInterval    = "healthcheck-interval"
	annProxyProtocol = "proxy-protocol"
)

var supported = []string{annType, annInternal, annSubnets, annSecurityGroup, annSSLCert, annSSLPorts,
	annBackend, annCrossZone, annExtraTags, annNodeLabels, annHCHealthy, annHCUnhealthy, annHCTimeout, annHCInterval, annProxyProtocol}

// lbOptions is what a Service's annotations and spec ask of its load balancer.
type lbOptions struct {
	NLB            bool
	Internal       bool
	Subnets        []string // IDs or Name tags
	SecurityGroups []string
	SSLCert        string
	SSLPorts       []string // port numbers or names; empty with a cert means all
	Backend        string   // tcp (default), http, https, ssl
	CrossZone      bool
	ExtraTags      map[string]string
	SourceRanges   []string // canonical CIDRs, sorted; IPv4 and IPv6
	NodeSelector   labels.Selector
	HC             hcOptions
	ProxyProtocol  bool // PROXY protocol towards the nodes: v1 on a classic ELB, v2 on an NLB
}

type hcOptions struct{ Healthy, Unhealthy, Timeout, Interval int32 }

// sgIDRE is the shape of a security group ID.
var sgIDRE = regexp.MustCompile(`^sg-[0-9a-zA-Z]{1,32}$`)

// annotationError names the annotation at fault; the service controller turns it into a
// Warning event on the Service.
func annotationError(suffix, format string, args ...any) error {
	return fmt.Errorf("annotation %s%s: %s", annotationPrefix, suffix, fmt.Sprintf(format, args...))
}

// parseOptions reads the annotations strictly: an unknown or unsupported one is an error that
// names it, never silently ignored.
func parseOptions(svc *v1.Service) (*lbOptions, error) {
	o := &lbOptions{Backend: "tcp", NodeSelector: labels.Everything(),
		HC: hcOptions{Healthy: 2, Unhealthy: 6, Timeout: 5, Interval: 10}}
	for k, v := range svc.Annotations {
		suffix, ok := strings.CutPrefix(k, annotationPrefix)
		if !ok {
			continue
		}
		if !slices.Contains(supported, suffix) {
			return nil, annotationError(suffix, "is not supported by this provider (see docs/providers/aws.md)")
		}
		var err error
		switch suffix {
		case annType:
			o.NLB = v == "nlb"
			if v == "external" {
				err = annotationError(suffix, "%q (the AWS Load Balancer Controller's) is not this provider's to serve", v)
			} else if v != "" && v != "classic" && v != "nlb" {
				err = annotationError(suffix, "%q is not a load balancer type", v)
			}
		case annInternal:
			o.Internal, err = parseBool(suffix, v)
		case annCrossZone:
			o.CrossZone, err = parseBool(suffix, v)
		case annSubnets:
			o.Subnets = splitList(v)
			if len(o.Subnets) == 0 {
				err = annotationError(suffix, "names no subnet")
			}
		case annSecurityGroup:
			o.SecurityGroups = splitList(v)
			for _, g := range o.SecurityGroups {
				if !sgIDRE.MatchString(g) {
					err = annotationError(suffix, "%q is not a security group ID (sg-…)", g)
				}
			}
			if len(o.SecurityGroups) == 0 {
				err = annotationError(suffix, "names no security group")
			}
		case annSSLCert:
			o.SSLCert = v
			if !strings.HasPrefix(v, "arn:") {
				err = annotationError(suffix, "must be a certificate ARN")
			}
		case annSSLPorts:
			o.SSLPorts = splitList(v)
		case annBackend:
			o.Backend = strings.ToLower(v)
			if !slices.Contains([]string{"tcp", "http", "https", "ssl"}, o.Backend) {
				err = annotationError(suffix, "must be tcp, http, https or ssl, not %q", v)
			}
		case annExtraTags:
			o.ExtraTags, err = parseExtraTags(v)
		case annNodeLabels:
			o.NodeSelector, err = labels.Parse(v)
			if err != nil {
				err = annotationError(suffix, "%v", err)
			}
		case annHCHealthy, annHCUnhealthy, annHCTimeout, annHCInterval:
			err = parseHC(o, suffix, v)
		case annProxyProtocol:
			// Upstream's only value: "*" is every backend port (every target group of an NLB).
			o.ProxyProtocol = v == "*"
			if !o.ProxyProtocol {
				err = annotationError(suffix, "must be \"*\" (PROXY protocol on every backend port), not %q", v)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	var err error
	if o.SourceRanges, err = parseSourceRanges(svc); err != nil {
		return nil, err
	}
	if len(o.SSLPorts) > 0 && o.SSLCert == "" {
		return nil, annotationError(annSSLPorts, "needs %s%s", annotationPrefix, annSSLCert)
	}
	if o.HC.Timeout >= o.HC.Interval {
		return nil, annotationError(annHCTimeout, "(%ds) must be less than %s%s (%ds)", o.HC.Timeout, annotationPrefix, annHCInterval, o.HC.Interval)
	}
	if o.NLB {
		for _, a := range []string{annSecurityGroup, annBackend, annCrossZone} {
			if _, set := svc.Annotations[annotationPrefix+a]; set {
				return nil, annotationError(a, "is not supported with type nlb")
			}
		}
		for _, p := range svc.Spec.Ports {
			if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
				return nil, fmt.Errorf("port %q: protocol %s is not supported by an NLB (TCP or UDP)", p.Name, p.Protocol)
			}
		}
		return o, nil
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP {
			return nil, fmt.Errorf("port %q: protocol %s is not supported by a classic ELB (TCP only)", p.Name, p.Protocol)
		}
	}
	return o, nil
}

func parseHC(o *lbOptions, suffix, v string) error {
	n, err := strconv.Atoi(v)
	limits := map[string][2]int{annHCHealthy: {2, 10}, annHCUnhealthy: {2, 10}, annHCTimeout: {2, 60}, annHCInterval: {5, 300}}[suffix]
	if err != nil || n < limits[0] || n > limits[1] {
		return annotationError(suffix, "must be a number from %d to %d, not %q", limits[0], limits[1], v)
	}
	switch suffix {
	case annHCHealthy:
		o.HC.Healthy = int32(n)
	case annHCUnhealthy:
		o.HC.Unhealthy = int32(n)
	case annHCTimeout:
		o.HC.Timeout = int32(n)
	case annHCInterval:
		o.HC.Interval = int32(n)
	}
	return nil
}

func parseBool(suffix, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, annotationError(suffix, "must be true or false, not %q", v)
	}
	return b, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseExtraTags reads additional-resource-tags ("k=v,k2=v2"). Keys of ccm's ownership records
// and bookkeeping (kubernetes.io/, k8s.io/, ccm.k8s.io/) and AWS's own (aws:) are refused:
// a Service must not be able to forge who owns a load balancer or what its delete removes.
func parseExtraTags(v string) (map[string]string, error) {
	out := map[string]string{}
	var bad []string
	for _, kv := range splitList(v) {
		k, val, _ := strings.Cut(kv, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case k == "":
			return nil, annotationError(annExtraTags, "tag %q has no key", kv)
		case len(k) > 128 || len(val) > 256:
			return nil, annotationError(annExtraTags, "tag %q: AWS takes keys of at most 128 and values of at most 256 characters", kv)
		case ownership.Reserved(k):
			bad = append(bad, k)
		}
		out[k] = val
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, annotationError(annExtraTags, "tag key(s) %s are reserved for ccm's ownership records and bookkeeping (prefixes %s) and cannot be set by a Service",
			strings.Join(bad, ", "), strings.Join(ownership.ReservedTagPrefixes, ", "))
	}
	return out, nil
}

// parseSourceRanges reads spec.loadBalancerSourceRanges (or, when empty, upstream's
// service.beta.kubernetes.io/load-balancer-source-ranges annotation) as canonical, sorted
// prefixes; none means every IPv4 client (classic ELBs and these NLBs are IPv4). IPv6 ranges
// become IPv6 rules.
func parseSourceRanges(svc *v1.Service) ([]string, error) {
	field, raw := "spec.loadBalancerSourceRanges", svc.Spec.LoadBalancerSourceRanges
	if len(raw) == 0 {
		if v, ok := svc.Annotations[annSourceRanges]; ok {
			field, raw = "annotation "+annSourceRanges, splitList(v)
		}
	}
	var out []string
	for _, r := range raw {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR (such as 192.0.2.0/24 or 2001:db8::/32)", field, r)
		}
		out = append(out, p.Masked().String())
	}
	if len(out) == 0 {
		out = []string{"0.0.0.0/0"}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// annSourceRanges is the core annotation upstream reads when the spec field is empty.
const annSourceRanges = "service.beta.kubernetes.io/load-balancer-source-ranges"

// sslPort reports whether the Service port p terminates TLS.
func (o *lbOptions) sslPort(p v1.ServicePort) bool {
	if o.SSLCert == "" {
		return false
	}
	if len(o.SSLPorts) == 0 {
		return true
	}
	return slices.Contains(o.SSLPorts, "*") || slices.Contains(o.SSLPorts, strconv.Itoa(int(p.Port))) || (p.Name != "" && slices.Contains(o.SSLPorts, p.Name))
}
