// Package annotations reads a Service's AWS load balancer annotations as upstream reads them:
// their names (Prefix and the suffixes), one rule each (which load balancer type uses it, how
// its value is parsed, what "" means, how upstream reads it and what it defaults to, and its
// reach, Table, from which docs/security.md and the hostile suite are generated), and Parse,
// which turns them with the spec into Options or an error naming the annotation, with advice
// for what is accepted but not used. It is pure: package aws records the advice as Warnings
// and makes the load balancer from Options.
package annotations

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// Prefix is upstream's; every Service annotation this provider reads starts with it.
const Prefix = "service.beta.kubernetes.io/aws-load-balancer-"

// The annotations upstream reads (suffixes after Prefix), from its aws.go.
const (
	Type             = "type"
	Internal         = "internal"
	Subnets          = "subnets"
	SecurityGroup    = "security-groups"
	ExtraGroups      = "extra-security-groups"
	SSLCert          = "ssl-cert"
	SSLPorts         = "ssl-ports"
	SSLPolicy        = "ssl-negotiation-policy"
	Backend          = "backend-protocol"
	CrossZone        = "cross-zone-load-balancing-enabled"
	ExtraTags        = "additional-resource-tags"
	NodeLabels       = "target-node-labels"
	HCHealthy        = "healthcheck-healthy-threshold"
	HCUnhealthy      = "healthcheck-unhealthy-threshold"
	HCTimeout        = "healthcheck-timeout"
	HCInterval       = "healthcheck-interval"
	HCProtocol       = "healthcheck-protocol"
	HCPort           = "healthcheck-port"
	HCPath           = "healthcheck-path"
	ProxyProtocol    = "proxy-protocol"
	IdleTimeout      = "connection-idle-timeout"
	Draining         = "connection-draining-enabled"
	DrainingTimeout  = "connection-draining-timeout"
	AccessLog        = "access-log-enabled"
	AccessLogEmit    = "access-log-emit-interval"
	AccessLogBucket  = "access-log-s3-bucket-name"
	AccessLogPrefix  = "access-log-s3-bucket-prefix"
	TGAttributes     = "target-group-attributes"
	EIPAllocations   = "eip-allocations"
	PrivateAddresses = "private-ipv4-addresses"
)

// Options is what a Service's annotations and spec ask of its load balancer.
type Options struct {
	NLB            bool
	Internal       bool
	Subnets        []string // IDs or Name tags
	SecurityGroups []string
	ExtraGroups    []string // extra-security-groups: added to the ELB's own (or the named) groups
	SSLCert        string
	SSLPorts       []string       // port numbers or names; empty with a cert means all
	NLBGroupIDErr  error          // security-groups on an NLB names something else than a group ID: refused in Managed mode only
	KeptTLS        map[int32]bool // ports whose encrypted listener is kept though ssl-ports, as upstream reads it, leaves them plain (sslportskept.go)
	SSLPolicy      string         // ssl-negotiation-policy: a predefined ELB security policy name
	Backend        string         // tcp (default), http, https, ssl
	TLSBackend     bool           // an NLB's TLS listeners forward to TLS target groups (backend-protocol ssl)
	CrossZone      bool
	ExtraTags      map[string]string
	SourceRanges   []string        // canonical CIDRs, sorted; IPv4 and IPv6
	NodeLabels     NodeLabelFilter // target-node-labels
	HC             HCOptions
	ProxyProtocol  bool // PROXY protocol v1 towards the nodes (classic ELBs only, as upstream)
	Attrs          ELBAttrs
	TGAttributes   map[string]string // target-group-attributes (NLB): only these keys are reconciled
	EIPs           []string          // eip-allocations (NLB, at creation)
	PrivateIPs     []string          // private-ipv4-addresses (NLB, at creation)

	// Advice is one line per annotation set that ccm accepts but does not use for this
	// Service, recorded once as a Warning (the provider's adviseUnused) while the rest is reconciled.
	Advice []string
}

// HCOptions are the health check's timings and what the annotations set of its target
// (Protocol, Port, Path: "" when not set).
type HCOptions struct {
	Healthy, Unhealthy, Timeout, Interval int32
	Protocol, Port, Path                  string `json:",omitempty"`
}

// ELBAttrs are the load balancer attributes upstream reconciles: idle timeout, draining and
// access logs on classic ELBs, access logs on NLBs (cross-zone is Options.CrossZone). Its
// fields are elbplan.Attrs's, so the plan takes it by conversion; it stays here for its JSON
// tags, which keep the fingerprints of ELBs made before.
type ELBAttrs struct {
	IdleTimeout     int32  `json:",omitempty"` // classic: upstream's default 60
	Draining        bool   `json:",omitempty"`
	DrainingTimeout int32  `json:",omitempty"` // 0: not set (ELB keeps what it has)
	AccessLog       bool   `json:",omitempty"`
	EmitInterval    int32  `json:",omitempty"` // 0: not set
	Bucket          string `json:",omitempty"`
	Prefix          string `json:",omitempty"`
}

// SecurityGroupIDRE is the shape of a security group ID.
var SecurityGroupIDRE = regexp.MustCompile(`^sg-[0-9a-zA-Z]{1,32}$`)

// Error names the annotation at fault; the service controller turns it into a
// Warning event on the Service.
func Error(suffix, format string, args ...any) error {
	return fmt.Errorf("annotation %s%s: %s", Prefix, suffix, fmt.Sprintf(format, args...))
}

// ExternalType reports whether svc's load balancer is another controller's (the AWS Load
// Balancer Controller): upstream steps aside for type "external" and "nlb-ip".
func ExternalType(svc *v1.Service) bool {
	t := svc.Annotations[Prefix+Type]
	return t == "external" || t == "nlb-ip"
}

// Parse reads the annotations, each by its rule (annotationRules): a bad value is an
// error that names it; an unknown name, or an upstream annotation that does nothing for this
// Service's load balancer type, is advice. What needs several annotations or the spec is
// settled after them, by type.
func Parse(svc *v1.Service) (*Options, error) {
	// Upstream: exactly "nlb" is an NLB; "external" and "nlb-ip" are another controller's;
	// every other value, "NLB" and "elb" included, is a classic ELB.
	o := &Options{Backend: "tcp", NLB: svc.Annotations[Prefix+Type] == "nlb"}
	for _, k := range slices.Sorted(maps.Keys(svc.Annotations)) {
		if suffix, ok := strings.CutPrefix(k, Prefix); ok {
			if err := o.read(suffix, svc.Annotations[k]); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if o.SourceRanges, err = parseSourceRanges(svc); err != nil {
		return nil, err
	}
	o.adviseSSLPorts(svc)
	if o.Attrs.AccessLog && o.Attrs.Bucket == "" {
		return nil, Error(AccessLog, "true needs %s%s", Prefix, AccessLogBucket)
	}
	o.HC.setTimings(o.NLB, svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal)
	if err := o.otherBackend(svc); err != nil {
		return nil, err
	}
	if o.NLB {
		err = o.settleNLB(svc)
	} else {
		err = o.settleClassic(svc)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// read applies the rule of the annotation Prefix+suffix to its value v.
func (o *Options) read(suffix, v string) error {
	r, ok := rulesBySuffix[suffix]
	if !ok {
		o.Advice = append(o.Advice, unknownAdvice(suffix, v))
		return nil
	}
	if v == "" && EmptyIsUnset(suffix, o.NLB) {
		return nil // as upstream: no value, no Warning
	}
	if used, why := r.usedFor(o.NLB); !used {
		o.Advice = append(o.Advice, why)
		return nil
	}
	return r.Parse(o, suffix, v)
}

// adviseSSLPorts advises the ssl-ports values upstream reads otherwise than they look.
func (o *Options) adviseSSLPorts(svc *v1.Service) {
	if len(o.SSLPorts) > 0 && o.SSLCert == "" {
		// Upstream reads ssl-ports only with a certificate: without one every listener is plain.
		o.Advice = append(o.Advice, fmt.Sprintf("%s%s has no effect without %s%s: no listener terminates TLS", Prefix, SSLPorts, Prefix, SSLCert))
		o.SSLPorts = nil
	}
	if odd := oddSSLPortItems(o.SSLPorts); len(odd) > 0 {
		o.Advice = append(o.Advice, fmt.Sprintf("%s%s: %s read as port names, as upstream reads them, and no port has such a name; write the list without spaces (443,8443), or \"*\" alone for every port",
			Prefix, SSLPorts, strings.Join(odd, ", ")))
	}
	if slices.Contains(o.SSLPorts, "") && len(o.SSLPorts) > 1 {
		o.Advice = append(o.Advice, emptySSLPortItemAdvice(svc))
	}
}

// settleNLB decides what an NLB's annotations mean together, and refuses the ports it cannot
// serve.
func (o *Options) settleNLB(svc *v1.Service) error {
	if o.Backend == "ssl" && o.SSLCert != "" {
		// Upstream makes the TLS listeners' target groups TLS then, on the value "ssl" as
		// written (other values it ignores on NLBs, as ccm does): another case would turn an
		// upstream NLB's TCP target groups to TLS at the takeover, so it is advised instead.
		if o.TLSBackend = svc.Annotations[Prefix+Backend] == "ssl"; !o.TLSBackend {
			o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q on an NLB: the target groups stay TCP, as upstream keeps them (it reads only \"ssl\", lower case); write ssl for TLS to the nodes",
				Prefix, Backend, svc.Annotations[Prefix+Backend]))
		}
	}
	if len(o.EIPs) > 0 && len(o.PrivateIPs) > 0 {
		return Error(EIPAllocations, "and %s%s exclude each other (an internet-facing NLB takes Elastic IPs, an internal one private addresses)", Prefix, PrivateAddresses)
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
			return fmt.Errorf("port %q: protocol %s is not supported by an NLB (TCP or UDP)", p.Name, p.Protocol)
		}
	}
	return nil
}

// settleClassic decides what a classic ELB's annotations mean together, and refuses the ports
// it cannot serve.
func (o *Options) settleClassic(svc *v1.Service) error {
	if err := o.classicBackendCase(svc); err != nil {
		return err
	}
	if o.Attrs.IdleTimeout == 0 {
		o.Attrs.IdleTimeout = 60 // upstream writes its default
	}
	if o.HC.Timeout >= o.HC.Interval {
		return Error(HCTimeout, "(%ds) must be less than %s%s (%ds)", o.HC.Timeout, Prefix, HCInterval, o.HC.Interval)
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP {
			return fmt.Errorf("port %q: protocol %s is not supported by a classic ELB (TCP only)", p.Name, p.Protocol)
		}
	}
	return nil
}

// backendProtocols are the backend-protocol values upstream acts on (after lower-casing).
var backendProtocols = []string{"tcp", "http", "https", "ssl"}

// otherBackend decides a backend-protocol that is none of backendProtocols in any case, as
// upstream does: empty is the default (TCP behind plain listeners, SSL in front of TCP on TLS
// ports); another value on a TLS port of a classic ELB is refused (upstream: "Invalid backend
// protocol"); anywhere else it is ignored, the listeners, target groups and health check stay
// TCP, and the Service gets a Warning naming it, so a migrated Service is still reconciled.
func (o *Options) otherBackend(svc *v1.Service) error {
	v, ok := svc.Annotations[Prefix+Backend]
	if !ok || v == "" || slices.Contains(backendProtocols, strings.ToLower(v)) {
		return nil
	}
	if !o.NLB {
		for _, p := range svc.Spec.Ports {
			if o.SSLPort(p) {
				return Error(Backend, "%q on the TLS port %d: must be http, https, ssl or tcp (upstream refuses other values there too)", v, p.Port)
			}
		}
	}
	o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q is not http, https, ssl or tcp and is ignored, as upstream ignores it here: the %s TCP",
		Prefix, Backend, v, map[bool]string{true: "target groups and health checks are", false: "listeners and health check are"}[o.NLB]))
	return nil
}

// classicBackendCase applies upstream's case rule for backend-protocol on a classic ELB, where
// the listeners compare the value as written: on a TLS port a value not in lower case is
// refused, as upstream refuses it; elsewhere only "http" makes HTTP listeners, so "HTTP" gives
// TCP ones. The health check lower-cases it upstream too ("HTTPS" or "SSL" is an SSL check), so
// the other values act as their lower case. Each such value is advised.
func (o *Options) classicBackendCase(svc *v1.Service) error {
	v, ok := svc.Annotations[Prefix+Backend]
	if !ok || v == o.Backend || !slices.Contains(backendProtocols, strings.ToLower(v)) {
		return nil // the value as written, or one otherBackend settled
	}
	for _, p := range svc.Spec.Ports {
		if o.SSLPort(p) {
			return Error(Backend, "%q on the TLS port %d: write it in lower case (%s), as upstream accepts only that", v, p.Port, o.Backend)
		}
	}
	effect := "it acts as " + strconv.Quote(o.Backend)
	if o.Backend == "http" {
		o.Backend, effect = "tcp", "the listeners are TCP, as upstream makes them (only \"http\" makes HTTP listeners)"
	}
	o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q is read case-sensitively by upstream: %s; write it in lower case", Prefix, Backend, v, effect))
	return nil
}

// unknownAdvice is the Warning for an annotation with this provider's prefix that neither ccm
// nor upstream reads (a typo, or the AWS Load Balancer Controller's): it is ignored.
func unknownAdvice(suffix, v string) string {
	msg := fmt.Sprintf("%s%s is not read by ccm or by the upstream AWS cloud provider and is ignored (see docs/providers/aws.md)", Prefix, suffix)
	switch {
	case suffix == "scheme" && strings.EqualFold(strings.TrimSpace(v), "internal"):
		// The AWS Load Balancer Controller's word for internal: the load balancer is not.
		msg += "; this load balancer is internet-facing: write " + Prefix + Internal + ": \"true\" for an internal one"
	case lbcAnnotations[suffix]:
		msg += "; it is an AWS Load Balancer Controller annotation, which that controller reads only with " + Prefix + Type + " external or nlb-ip"
	}
	return msg
}

// lbcAnnotations are annotations of the AWS Load Balancer Controller that upstream does not read
// (from its documentation): a hint in their Warning.
var lbcAnnotations = map[string]bool{"nlb-target-type": true, "scheme": true, "name": true, "ip-address-type": true,
	"alpn-policy": true, "attributes": true, "healthcheck-success-codes": true, "manage-backend-security-group-rules": true,
	"security-group-prefix-lists": true, "ipv6-addresses": true}

// TrafficPort is the health check port value meaning "the port traffic goes to".
const TrafficPort = "traffic-port"

// sslPolicyRE is the shape of an ELB security policy name.
var sslPolicyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// setTimings sets upstream's defaults where no annotation set a timing (0; no annotation's
// range holds 0): classic ELBs 2/6/5s/10s (healthy/unhealthy/timeout/interval); NLBs 3/3/10s/30s,
// or 2/2/10s/10s with externalTrafficPolicy Local.
func (h *HCOptions) setTimings(nlb, local bool) {
	d := HCOptions{Healthy: 2, Unhealthy: 6, Timeout: 5, Interval: 10}
	switch {
	case nlb && local:
		d = HCOptions{Healthy: 2, Unhealthy: 2, Timeout: 10, Interval: 10}
	case nlb:
		d = HCOptions{Healthy: 3, Unhealthy: 3, Timeout: 10, Interval: 30}
	}
	fill := func(v *int32, d int32) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&h.Healthy, d.Healthy)
	fill(&h.Unhealthy, d.Unhealthy)
	fill(&h.Timeout, d.Timeout)
	fill(&h.Interval, d.Interval)
}

// parseRange reads a number as upstream's strconv.ParseInt does: not trimmed (" 60" is refused
// there too), a sign allowed.
func parseRange(suffix, v string, lo, hi int) (int32, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, Error(suffix, "must be a number from %d to %d, not %q", lo, hi, v)
	}
	return int32(n), nil
}

// parseTGAttributes reads target-group-attributes with upstream's item syntax: "k = v" is the
// key "k ". An empty value is refused (upstream and
// ELB refuse it). Upstream's validateServiceAnnotationTargetGroupAttributes (aws_validations.go,
// HEAD and v1.36.1) refuses the whole Service for any key but preserve_client_ip.enabled and
// proxy_protocol_v2.enabled, and for the annotation on a classic ELB even when ""; ccm
// deliberately does not: a key the target groups do not have gets a Warning and the rest of the
// Service is reconciled (a Service that fails upstream's check is one upstream never served).
func parseTGAttributes(v string) (map[string]string, error) {
	out := upstreamKeyValues(v)
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if out[k] == "" {
			return nil, Error(TGAttributes, "%q has no value (ELB refuses an empty attribute value)", k)
		}
	}
	return out, nil
}

func parseBool(suffix, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, Error(suffix, "must be true or false, not %q", v)
	}
	return b, nil
}

func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseExtraTags reads additional-resource-tags as upstream reads it: "k=v=x" is k=v, "k" and "k=" an empty value, an item without a key
// is skipped, nothing inside an item is trimmed, so an upstream load balancer's tags are read
// back unchanged. Other kubernetes.io/ and k8s.io/ keys are accepted, as upstream accepts them;
// the keys that say who owns an object (ReservedTag) are refused: a Service must not be able to
// forge who owns a load balancer or what its delete removes.
func parseExtraTags(v string) (map[string]string, error) {
	out := upstreamKeyValues(v)
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(out)) {
		switch {
		case len(k) > 128 || len(out[k]) > 256:
			return nil, Error(ExtraTags, "tag %q: AWS takes keys of at most 128 and values of at most 256 characters", k)
		case ReservedTag(k):
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return nil, Error(ExtraTags, "tag key(s) %s are reserved: %s cannot be set by a Service",
			strings.Join(bad, ", "), reservedTagsText)
	}
	return out, nil
}

// ReservedTag reports whether a Service may not set the tag key k: the ownership tags (ccm's and
// upstream's, the legacy KubernetesCluster included), ccm's bookkeeping (a forged fingerprint
// would hide drift, forged node groups would point a delete at another group) and AWS's own
// prefix (which AWS refuses). Compared case-insensitively, to be safe.
func ReservedTag(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	return strings.HasPrefix(k, ownership.ClusterTagPrefix) || k == ownership.ServiceTag || k == ownership.ServiceUIDTag ||
		k == strings.ToLower(legacyClusterTag) || strings.HasPrefix(k, ccmTagPrefix) || strings.HasPrefix(k, "aws:")
}

// ccmTagPrefix is the prefix of ccm's bookkeeping tags (the provider's fingerprint and node
// groups tags; TestProviderTagsReserved checks them).
const ccmTagPrefix = "ccm.k8s.io/"

// legacyClusterTag is upstream's legacy cluster tag, which the provider reads for ownership.
const legacyClusterTag = "KubernetesCluster"

// reservedTagsText names what ReservedTag refuses, for its error.
const reservedTagsText = "the ownership tags (" + ownership.ClusterTagPrefix + "<id>, " + legacyClusterTag + ", " + ownership.ServiceTag + ", " +
	ownership.ServiceUIDTag + "), ccm's bookkeeping (" + ccmTagPrefix + ") and AWS's own (aws:)"

// parseSourceRanges reads the Service's source ranges by upstream's rule (common/sourceranges:
// spec.loadBalancerSourceRanges, else the legacy annotation
// service.beta.kubernetes.io/load-balancer-source-ranges) as canonical, sorted prefixes; none
// means every IPv4 client (classic ELBs and these NLBs are IPv4). IPv6 ranges become IPv6 rules.
func parseSourceRanges(svc *v1.Service) ([]string, error) {
	r, err := sourceranges.Of(svc)
	if err != nil {
		return nil, err
	}
	if len(r.CIDRs) == 0 {
		return []string{"0.0.0.0/0"}, nil
	}
	return r.CIDRs, nil
}

// SourceRanges is the core annotation upstream reads when the spec field is empty.
const SourceRanges = sourceranges.Annotation

// SSLPort reports whether the Service port p terminates TLS.
func (o *Options) SSLPort(p v1.ServicePort) bool {
	if o.SSLCert == "" {
		return false
	}
	if o.KeptTLS[p.Port] {
		return true
	}
	if len(o.SSLPorts) == 0 || (len(o.SSLPorts) == 1 && o.SSLPorts[0] == "*") {
		return true
	}
	for _, item := range o.SSLPorts {
		if n, err := strconv.Atoi(item); err == nil {
			if n == int(p.Port) {
				return true
			}
		} else if item == p.Name {
			return true
		}
	}
	return false
}

// sslPortItems reads ssl-ports as upstream does: "" or "*" is
// every port; otherwise the items split on "," and taken as written, a number when strconv.Atoi
// reads one, else a port name. So "443, 8443" is port 443 and the name " 8443", which no port
// has, and "443,*" is port 443 and the name "*".
func sslPortItems(v string) []string {
	if v == "*" {
		return []string{"*"}
	}
	return strings.Split(v, ",")
}

// oddSSLPortItems are the ssl-ports items upstream reads as port names that no Service port can
// have (port names are lower-case letters, digits and dashes): " 8443", "*" in a list. The
// empty item is not one of them: an unnamed port has the name "" (emptySSLPortItemAdvice).
func oddSSLPortItems(items []string) []string {
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	var odd []string
	for _, item := range items {
		if _, err := strconv.Atoi(item); err != nil && item != "" && !portNameRE.MatchString(item) {
			odd = append(odd, strconv.Quote(item))
		}
	}
	return odd
}

// emptySSLPortItemAdvice is the Warning for an empty item in an ssl-ports list ("8443," or
// "443,,80"): upstream reads it as the port name "", which is the name of a Service's only port
// when that is unnamed (a Service of several ports names them all), so that port terminates TLS.
func emptySSLPortItemAdvice(svc *v1.Service) string {
	what := "no port of the Service is unnamed, so it selects none"
	if len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Name == "" {
		what = fmt.Sprintf("it is the name of the Service's only port, unnamed, so port %d terminates TLS", svc.Spec.Ports[0].Port)
	}
	return fmt.Sprintf("%s%s: an empty item is read as the port name \"\", as upstream reads it: %s; remove the empty item (a trailing or doubled comma)", Prefix, SSLPorts, what)
}

// portNameRE is the shape of a Service port name (an IANA service name).
var portNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
