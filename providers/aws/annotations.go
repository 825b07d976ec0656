package aws

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// annotationPrefix is upstream's; every Service annotation this provider reads starts with it.
const annotationPrefix = "service.beta.kubernetes.io/aws-load-balancer-"

// The annotations upstream reads (suffixes after annotationPrefix), from its aws.go.
const (
	annType             = "type"
	annInternal         = "internal"
	annSubnets          = "subnets"
	annSecurityGroup    = "security-groups"
	annExtraGroups      = "extra-security-groups"
	annSSLCert          = "ssl-cert"
	annSSLPorts         = "ssl-ports"
	annSSLPolicy        = "ssl-negotiation-policy"
	annBackend          = "backend-protocol"
	annCrossZone        = "cross-zone-load-balancing-enabled"
	annExtraTags        = "additional-resource-tags"
	annNodeLabels       = "target-node-labels"
	annHCHealthy        = "healthcheck-healthy-threshold"
	annHCUnhealthy      = "healthcheck-unhealthy-threshold"
	annHCTimeout        = "healthcheck-timeout"
	annHCInterval       = "healthcheck-interval"
	annHCProtocol       = "healthcheck-protocol"
	annHCPort           = "healthcheck-port"
	annHCPath           = "healthcheck-path"
	annProxyProtocol    = "proxy-protocol"
	annIdleTimeout      = "connection-idle-timeout"
	annDraining         = "connection-draining-enabled"
	annDrainingTimeout  = "connection-draining-timeout"
	annAccessLog        = "access-log-enabled"
	annAccessLogEmit    = "access-log-emit-interval"
	annAccessLogBucket  = "access-log-s3-bucket-name"
	annAccessLogPrefix  = "access-log-s3-bucket-prefix"
	annTGAttributes     = "target-group-attributes"
	annEIPAllocations   = "eip-allocations"
	annPrivateAddresses = "private-ipv4-addresses"
)

// notForNLB and notForClassic are annotations upstream reads for one type only (on the other
// they are accepted with a Warning saying they do nothing, as upstream ignores them).
var (
	notForNLB = map[string]string{
		annExtraGroups:     "upstream supports it only for classic ELBs (it refuses it on an NLB); name all of the NLB's groups in security-groups instead (with NLBSecurityGroupMode = Managed)",
		annProxyProtocol:   "upstream ignores it on an NLB; set target-group-attributes proxy_protocol_v2.enabled=true instead",
		annIdleTimeout:     "NLBs have no idle timeout setting",
		annDraining:        "NLBs have no connection draining setting (target group attribute deregistration_delay.timeout_seconds)",
		annDrainingTimeout: "NLBs have no connection draining setting (target group attribute deregistration_delay.timeout_seconds)",
		annAccessLogEmit:   "NLB access logs have no emit interval",
	}
	notForClassic = map[string]string{
		annTGAttributes:     "a classic ELB has no target groups",
		annEIPAllocations:   "a classic ELB takes no Elastic IPs",
		annPrivateAddresses: "a classic ELB takes no private addresses",
	}
)

// lbOptions is what a Service's annotations and spec ask of its load balancer.
type lbOptions struct {
	NLB            bool
	Internal       bool
	Subnets        []string // IDs or Name tags
	SecurityGroups []string
	ExtraGroups    []string // extra-security-groups: added to the ELB's own (or the named) groups
	SSLCert        string
	SSLPorts       []string       // port numbers or names; empty with a cert means all
	nlbGroupIDErr  error          // security-groups on an NLB names something else than a group ID: refused in Managed mode only
	KeptTLS        map[int32]bool // ports whose encrypted listener is kept though ssl-ports, as upstream reads it, leaves them plain (sslportskept.go)
	SSLPolicy      string         // ssl-negotiation-policy: a predefined ELB security policy name
	Backend        string         // tcp (default), http, https, ssl
	TLSBackend     bool           // an NLB's TLS listeners forward to TLS target groups (backend-protocol ssl)
	CrossZone      bool
	ExtraTags      map[string]string
	SourceRanges   []string        // canonical CIDRs, sorted; IPv4 and IPv6
	NodeLabels     nodeLabelFilter // target-node-labels
	HC             hcOptions
	ProxyProtocol  bool // PROXY protocol v1 towards the nodes (classic ELBs only, as upstream)
	Attrs          elbAttrs
	TGAttributes   map[string]string // target-group-attributes (NLB): only these keys are reconciled
	EIPs           []string          // eip-allocations (NLB, at creation)
	PrivateIPs     []string          // private-ipv4-addresses (NLB, at creation)

	// Advice is one line per annotation set that ccm accepts but does not use for this
	// Service, recorded once as a Warning (see adviseUnused) while the rest is reconciled.
	Advice []string
}

// hcOptions are the health check's timings and what the annotations set of its target
// (Protocol, Port, Path: "" when not set).
type hcOptions struct {
	Healthy, Unhealthy, Timeout, Interval int32
	Protocol, Port, Path                  string `json:",omitempty"`
}

// elbAttrs are the load balancer attributes upstream reconciles: idle timeout, draining and
// access logs on classic ELBs, access logs on NLBs (cross-zone is lbOptions.CrossZone).
type elbAttrs struct {
	IdleTimeout     int32  `json:",omitempty"` // classic: upstream's default 60
	Draining        bool   `json:",omitempty"`
	DrainingTimeout int32  `json:",omitempty"` // 0: not set (ELB keeps what it has)
	AccessLog       bool   `json:",omitempty"`
	EmitInterval    int32  `json:",omitempty"` // 0: not set
	Bucket          string `json:",omitempty"`
	Prefix          string `json:",omitempty"`
}

// sgIDRE is the shape of a security group ID.
var sgIDRE = regexp.MustCompile(`^sg-[0-9a-zA-Z]{1,32}$`)

// annotationError names the annotation at fault; the service controller turns it into a
// Warning event on the Service.
func annotationError(suffix, format string, args ...any) error {
	return fmt.Errorf("annotation %s%s: %s", annotationPrefix, suffix, fmt.Sprintf(format, args...))
}

// externalType reports whether svc's load balancer is another controller's (the AWS Load
// Balancer Controller): upstream steps aside for type "external" and "nlb-ip".
func externalType(svc *v1.Service) bool {
	t := svc.Annotations[annotationPrefix+annType]
	return t == "external" || t == "nlb-ip"
}

// parseOptions reads the annotations: a bad value is an error that names it; an unknown name,
// or an upstream annotation that does nothing for this Service's load balancer type, is advice.
func parseOptions(svc *v1.Service) (*lbOptions, error) {
	// Upstream: exactly "nlb" is an NLB; "external" and "nlb-ip" are another controller's;
	// every other value, "NLB" and "elb" included, is a classic ELB.
	o := &lbOptions{Backend: "tcp", NLB: svc.Annotations[annotationPrefix+annType] == "nlb"}
	hcSet := map[string]int32{}
	for _, k := range slices.Sorted(maps.Keys(svc.Annotations)) {
		v := svc.Annotations[k]
		suffix, ok := strings.CutPrefix(k, annotationPrefix)
		if !ok {
			continue
		}
		if !slices.Contains(supported, suffix) {
			o.Advice = append(o.Advice, unknownAdvice(suffix, v))
			continue
		}
		if v == "" && emptyIsUnset(suffix, o.NLB) {
			continue // as upstream: no value, no Warning
		}
		if why, ok := notForNLB[suffix]; ok && o.NLB {
			o.Advice = append(o.Advice, fmt.Sprintf("%s%s is not used for an NLB: %s", annotationPrefix, suffix, why))
			continue
		}
		if why, ok := notForClassic[suffix]; ok && !o.NLB {
			o.Advice = append(o.Advice, fmt.Sprintf("%s%s is not used for a classic ELB: %s", annotationPrefix, suffix, why))
			continue
		}
		var err error
		switch suffix {
		case annType:
			if v != "" && v != "nlb" && !strings.EqualFold(v, "classic") {
				o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q: a classic ELB is made, as upstream makes one for every value but \"nlb\" (write nlb, lower case, for an NLB; external and nlb-ip leave the Service to the AWS Load Balancer Controller)",
					annotationPrefix, suffix, v))
			}
		case annInternal:
			// Upstream: any value but "false" (and empty) is internal, "0.0.0.0/0" included.
			o.Internal = v != "" && v != "false"
		case annCrossZone:
			o.CrossZone, err = parseBool(suffix, v)
		case annSubnets:
			o.Subnets = splitList(v)
			if len(o.Subnets) == 0 {
				err = annotationError(suffix, "names no subnet")
			}
		case annSecurityGroup, annExtraGroups:
			gs := splitList(v)
			for _, g := range gs {
				if !sgIDRE.MatchString(g) {
					err = annotationError(suffix, "%q is not a security group ID (sg-…)", g)
				}
			}
			if err != nil && o.NLB {
				// An NLB uses the annotation only in Managed mode (the provider's config, checked
				// in ensureNLB); elsewhere upstream ignores it, as ccm does with a Warning.
				o.nlbGroupIDErr, err = err, nil
			}
			if suffix == annSecurityGroup {
				// No ID (blank or only commas): the ELB's own group, as upstream reads an empty
				// list (docs/providers/aws.md, parity table).
				o.SecurityGroups = gs
			} else {
				o.ExtraGroups = gs
			}
		case annSSLCert:
			o.SSLCert = v
			if !strings.HasPrefix(v, "arn:") {
				err = annotationError(suffix, "must be a certificate ARN")
			}
		case annSSLPorts:
			o.SSLPorts = sslPortItems(v)
		case annSSLPolicy:
			// As written (upstream sends it so; ELB refuses spaces).
			o.SSLPolicy = v
			if !sslPolicyRE.MatchString(o.SSLPolicy) {
				err = annotationError(suffix, "%q is not an ELB security policy name (such as ELBSecurityPolicy-TLS-1-2-2017-01)", v)
			}
		case annBackend:
			// Upstream refuses another value only on a TLS port of a classic ELB and ignores
			// it elsewhere: settled below (otherBackend), once ssl-cert and ssl-ports are read,
			// as is the case of the value.
			if b := strings.ToLower(v); slices.Contains(backendProtocols, b) {
				o.Backend = b
			}
		case annExtraTags:
			o.ExtraTags, err = parseExtraTags(v)
		case annNodeLabels:
			o.NodeLabels, err = parseNodeLabels(v)
		case annHCHealthy, annHCUnhealthy, annHCTimeout, annHCInterval:
			var n int32
			n, err = parseHC(o.NLB, suffix, v)
			hcSet[suffix] = n
		case annHCProtocol:
			o.HC.Protocol = strings.ToUpper(v) // not trimmed: " HTTP" is refused, as upstream refuses it
			allowed := []string{"TCP", "HTTP", "HTTPS", "SSL"}
			if o.NLB {
				allowed = allowed[:3]
			}
			if !slices.Contains(allowed, o.HC.Protocol) {
				err = annotationError(suffix, "must be one of %s, not %q", strings.Join(allowed, ", "), v)
			}
		case annHCPort:
			o.HC.Port = v // not trimmed: " 80" is refused, as upstream refuses it
			if n, perr := strconv.Atoi(o.HC.Port); o.HC.Port != trafficPort && (perr != nil || n < 1 || n > 65535) {
				err = annotationError(suffix, "must be a port number (1-65535) or %q, not %q", trafficPort, v)
			}
		case annHCPath:
			o.HC.Path = v // as written, as upstream puts it in the target
			if o.HC.Path != "" && (!strings.HasPrefix(o.HC.Path, "/") || len(o.HC.Path) > 1024 || strings.ContainsAny(o.HC.Path, " \t\n")) {
				err = annotationError(suffix, "must be a path starting with / (at most 1024 characters, no spaces), not %q", v)
			}
		case annProxyProtocol:
			// Upstream's only value: "*" is every backend port.
			o.ProxyProtocol = v == "*"
			if !o.ProxyProtocol {
				err = annotationError(suffix, "must be \"*\" (PROXY protocol on every backend port), not %q", v)
			}
		case annIdleTimeout:
			o.Attrs.IdleTimeout, err = parseRange(suffix, v, 1, 4000)
		case annDraining:
			o.Attrs.Draining, err = parseBool(suffix, v)
		case annDrainingTimeout:
			o.Attrs.DrainingTimeout, err = parseRange(suffix, v, 1, 3600)
		case annAccessLog:
			o.Attrs.AccessLog, err = parseBool(suffix, v)
		case annAccessLogEmit:
			o.Attrs.EmitInterval, err = parseRange(suffix, v, 5, 60)
			if err == nil && o.Attrs.EmitInterval != 5 && o.Attrs.EmitInterval != 60 {
				err = annotationError(suffix, "must be 5 or 60 (minutes), not %q", v)
			}
		case annAccessLogBucket:
			o.Attrs.Bucket = strings.TrimSpace(v)
		case annAccessLogPrefix:
			o.Attrs.Prefix = strings.TrimSpace(v)
		case annTGAttributes:
			o.TGAttributes, err = parseTGAttributes(v)
		case annEIPAllocations:
			o.EIPs = splitList(v)
			for _, a := range o.EIPs {
				if !strings.HasPrefix(a, "eipalloc-") {
					err = annotationError(suffix, "%q is not an Elastic IP allocation ID (eipalloc-…)", a)
				}
			}
		case annPrivateAddresses:
			o.PrivateIPs = splitList(v)
			for _, a := range o.PrivateIPs {
				if ip, perr := netip.ParseAddr(a); perr != nil || !ip.Is4() {
					err = annotationError(suffix, "%q is not an IPv4 address", a)
				}
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
		// Upstream reads ssl-ports only with a certificate: without one every listener is plain.
		o.Advice = append(o.Advice, fmt.Sprintf("%s%s has no effect without %s%s: no listener terminates TLS", annotationPrefix, annSSLPorts, annotationPrefix, annSSLCert))
		o.SSLPorts = nil
	}
	if odd := oddSSLPortItems(o.SSLPorts); len(odd) > 0 {
		o.Advice = append(o.Advice, fmt.Sprintf("%s%s: %s read as port names, as upstream reads them, and no port has such a name; write the list without spaces (443,8443), or \"*\" alone for every port",
			annotationPrefix, annSSLPorts, strings.Join(odd, ", ")))
	}
	if slices.Contains(o.SSLPorts, "") && len(o.SSLPorts) > 1 {
		o.Advice = append(o.Advice, emptySSLPortItemAdvice(svc))
	}
	if o.Attrs.AccessLog && o.Attrs.Bucket == "" {
		return nil, annotationError(annAccessLog, "true needs %s%s", annotationPrefix, annAccessLogBucket)
	}
	o.HC.setTimings(o.NLB, svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal, hcSet)
	if err := o.otherBackend(svc); err != nil {
		return nil, err
	}
	if o.NLB {
		if o.Backend == "ssl" && o.SSLCert != "" {
			// Upstream makes the TLS listeners' target groups TLS then, on the value "ssl" as
			// written (other values it ignores on NLBs, as ccm does): another case would turn an
			// upstream NLB's TCP target groups to TLS at the takeover, so it is advised instead.
			if o.TLSBackend = svc.Annotations[annotationPrefix+annBackend] == "ssl"; !o.TLSBackend {
				o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q on an NLB: the target groups stay TCP, as upstream keeps them (it reads only \"ssl\", lower case); write ssl for TLS to the nodes",
					annotationPrefix, annBackend, svc.Annotations[annotationPrefix+annBackend]))
			}
		}
		if len(o.EIPs) > 0 && len(o.PrivateIPs) > 0 {
			return nil, annotationError(annEIPAllocations, "and %s%s exclude each other (an internet-facing NLB takes Elastic IPs, an internal one private addresses)", annotationPrefix, annPrivateAddresses)
		}
		for _, p := range svc.Spec.Ports {
			if p.Protocol != v1.ProtocolTCP && p.Protocol != v1.ProtocolUDP {
				return nil, fmt.Errorf("port %q: protocol %s is not supported by an NLB (TCP or UDP)", p.Name, p.Protocol)
			}
		}
		return o, nil
	}
	if err := o.classicBackendCase(svc); err != nil {
		return nil, err
	}
	if o.Attrs.IdleTimeout == 0 {
		o.Attrs.IdleTimeout = 60 // upstream writes its default
	}
	if o.HC.Timeout >= o.HC.Interval {
		return nil, annotationError(annHCTimeout, "(%ds) must be less than %s%s (%ds)", o.HC.Timeout, annotationPrefix, annHCInterval, o.HC.Interval)
	}
	for _, p := range svc.Spec.Ports {
		if p.Protocol != v1.ProtocolTCP {
			return nil, fmt.Errorf("port %q: protocol %s is not supported by a classic ELB (TCP only)", p.Name, p.Protocol)
		}
	}
	return o, nil
}

// backendProtocols are the backend-protocol values upstream acts on (after lower-casing).
var backendProtocols = []string{"tcp", "http", "https", "ssl"}

// otherBackend decides a backend-protocol that is none of backendProtocols in any case, as
// upstream does: empty is the default (TCP behind plain listeners, SSL in front of TCP on TLS
// ports); another value on a TLS port of a classic ELB is refused (upstream: "Invalid backend
// protocol"); anywhere else it is ignored, the listeners, target groups and health check stay
// TCP, and the Service gets a Warning naming it, so a migrated Service is still reconciled.
func (o *lbOptions) otherBackend(svc *v1.Service) error {
	v, ok := svc.Annotations[annotationPrefix+annBackend]
	if !ok || v == "" || slices.Contains(backendProtocols, strings.ToLower(v)) {
		return nil
	}
	if !o.NLB {
		for _, p := range svc.Spec.Ports {
			if o.sslPort(p) {
				return annotationError(annBackend, "%q on the TLS port %d: must be http, https, ssl or tcp (upstream refuses other values there too)", v, p.Port)
			}
		}
	}
	o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q is not http, https, ssl or tcp and is ignored, as upstream ignores it here: the %s TCP",
		annotationPrefix, annBackend, v, map[bool]string{true: "target groups and health checks are", false: "listeners and health check are"}[o.NLB]))
	return nil
}

// classicBackendCase applies upstream's case rule for backend-protocol on a classic ELB, where
// the listeners compare the value as written: on a TLS port a value not in lower case is
// refused, as upstream refuses it; elsewhere only "http" makes HTTP listeners, so "HTTP" gives
// TCP ones. The health check lower-cases it upstream too ("HTTPS" or "SSL" is an SSL check), so
// the other values act as their lower case. Each such value is advised.
func (o *lbOptions) classicBackendCase(svc *v1.Service) error {
	v, ok := svc.Annotations[annotationPrefix+annBackend]
	if !ok || v == o.Backend || !slices.Contains(backendProtocols, strings.ToLower(v)) {
		return nil // the value as written, or one otherBackend settled
	}
	for _, p := range svc.Spec.Ports {
		if o.sslPort(p) {
			return annotationError(annBackend, "%q on the TLS port %d: write it in lower case (%s), as upstream accepts only that", v, p.Port, o.Backend)
		}
	}
	effect := "it acts as " + strconv.Quote(o.Backend)
	if o.Backend == "http" {
		o.Backend, effect = "tcp", "the listeners are TCP, as upstream makes them (only \"http\" makes HTTP listeners)"
	}
	o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q is read case-sensitively by upstream: %s; write it in lower case", annotationPrefix, annBackend, v, effect))
	return nil
}

// unknownAdvice is the Warning for an annotation with this provider's prefix that neither ccm
// nor upstream reads (a typo, or the AWS Load Balancer Controller's): it is ignored.
func unknownAdvice(suffix, v string) string {
	msg := fmt.Sprintf("%s%s is not read by ccm or by the upstream AWS cloud provider and is ignored (see docs/providers/aws.md)", annotationPrefix, suffix)
	switch {
	case suffix == "scheme" && strings.EqualFold(strings.TrimSpace(v), "internal"):
		// The AWS Load Balancer Controller's word for internal: the load balancer is not.
		msg += "; this load balancer is internet-facing: write " + annotationPrefix + annInternal + ": \"true\" for an internal one"
	case lbcAnnotations[suffix]:
		msg += "; it is an AWS Load Balancer Controller annotation, which that controller reads only with " + annotationPrefix + annType + " external or nlb-ip"
	}
	return msg
}

// lbcAnnotations are annotations of the AWS Load Balancer Controller that upstream does not read
// (from its documentation): a hint in their Warning.
var lbcAnnotations = map[string]bool{"nlb-target-type": true, "scheme": true, "name": true, "ip-address-type": true,
	"alpn-policy": true, "attributes": true, "healthcheck-success-codes": true, "manage-backend-security-group-rules": true,
	"security-group-prefix-lists": true, "ipv6-addresses": true}

// trafficPort is the health check port value meaning "the port traffic goes to".
const trafficPort = "traffic-port"

// sslPolicyRE is the shape of an ELB security policy name.
var sslPolicyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// setTimings sets upstream's defaults, then the annotations' values: classic ELBs 2/6/5s/10s
// (healthy/unhealthy/timeout/interval); NLBs 3/3/10s/30s, or 2/2/10s/10s with
// externalTrafficPolicy Local.
func (h *hcOptions) setTimings(nlb, local bool, set map[string]int32) {
	switch {
	case !nlb:
		h.Healthy, h.Unhealthy, h.Timeout, h.Interval = 2, 6, 5, 10
	case local:
		h.Healthy, h.Unhealthy, h.Timeout, h.Interval = 2, 2, 10, 10
	default:
		h.Healthy, h.Unhealthy, h.Timeout, h.Interval = 3, 3, 10, 30
	}
	for k, n := range set {
		switch k {
		case annHCHealthy:
			h.Healthy = n
		case annHCUnhealthy:
			h.Unhealthy = n
		case annHCTimeout:
			h.Timeout = n
		case annHCInterval:
			h.Interval = n
		}
	}
}

// adviseUnused records o's advice as one Warning on svc (once an hour while it holds).
func (l *loadBalancers) adviseUnused(svc *v1.Service, o *lbOptions) {
	if len(o.Advice) > 0 {
		l.c.events.Advise(svc, reasonUnusedAnnotation, strings.Join(o.Advice, "; "))
	}
}

// reasonUnusedAnnotation is the Warning's reason for annotations accepted but not used; the
// OpenStack provider's word for the same.
const reasonUnusedAnnotation = "UnsupportedAnnotation"

// parseRange reads a number as upstream's strconv.ParseInt does: not trimmed (" 60" is refused
// there too), a sign allowed.
func parseRange(suffix, v string, lo, hi int) (int32, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, annotationError(suffix, "must be a number from %d to %d, not %q", lo, hi, v)
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
			return nil, annotationError(annTGAttributes, "%q has no value (ELB refuses an empty attribute value)", k)
		}
	}
	return out, nil
}

func parseHC(nlb bool, suffix, v string) (int32, error) {
	limits := map[string][2]int{annHCHealthy: {2, 10}, annHCUnhealthy: {2, 10}, annHCTimeout: {2, 60}, annHCInterval: {5, 300}}[suffix]
	if nlb && suffix == annHCTimeout {
		limits[1] = 120
	}
	return parseRange(suffix, v, limits[0], limits[1])
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

// parseExtraTags reads additional-resource-tags as upstream reads it: "k=v=x" is k=v, "k" and "k=" an empty value, an item without a key
// is skipped, nothing inside an item is trimmed, so an upstream load balancer's tags are read
// back unchanged. Other kubernetes.io/ and k8s.io/ keys are accepted, as upstream accepts them;
// the keys that say who owns an object (reservedTag) are refused: a Service must not be able to
// forge who owns a load balancer or what its delete removes.
func parseExtraTags(v string) (map[string]string, error) {
	out := upstreamKeyValues(v)
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(out)) {
		switch {
		case len(k) > 128 || len(out[k]) > 256:
			return nil, annotationError(annExtraTags, "tag %q: AWS takes keys of at most 128 and values of at most 256 characters", k)
		case reservedTag(k):
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return nil, annotationError(annExtraTags, "tag key(s) %s are reserved: %s cannot be set by a Service",
			strings.Join(bad, ", "), reservedTagsText)
	}
	return out, nil
}

// reservedTag reports whether a Service may not set the tag key k: the ownership tags (ccm's and
// upstream's, the legacy KubernetesCluster included), ccm's bookkeeping (a forged fingerprint
// would hide drift, forged node groups would point a delete at another group) and AWS's own
// prefix (which AWS refuses). Compared case-insensitively, to be safe.
func reservedTag(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	return strings.HasPrefix(k, ownership.ClusterTagPrefix) || k == ownership.ServiceTag || k == ownership.ServiceUIDTag ||
		k == strings.ToLower(legacyClusterTag) || strings.HasPrefix(k, ccmTagPrefix) || strings.HasPrefix(k, "aws:")
}

// ccmTagPrefix is the prefix of ccm's bookkeeping tags (fingerprintTag, nodeGroupsTag).
const ccmTagPrefix = "ccm.k8s.io/"

// reservedTagsText names what reservedTag refuses, for its error.
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

// annSourceRanges is the core annotation upstream reads when the spec field is empty.
const annSourceRanges = sourceranges.Annotation

// sslPort reports whether the Service port p terminates TLS.
func (o *lbOptions) sslPort(p v1.ServicePort) bool {
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
	return fmt.Sprintf("%s%s: an empty item is read as the port name \"\", as upstream reads it: %s; remove the empty item (a trailing or doubled comma)", annotationPrefix, annSSLPorts, what)
}

// portNameRE is the shape of a Service port name (an IANA service name).
var portNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// emptyIsUnset reports whether upstream reads the annotation's empty value as no annotation
// (a chart's {{ .Values.x | quote }} with x unset renders ""). Where upstream refuses ""
// instead, the annotation's parser refuses it too: subnets, the health check's numbers,
// protocol and port, and ssl-negotiation-policy on a classic ELB (a policy referring to "",
// which ELB refuses). The parity table in docs/providers/aws.md says which is which.
func emptyIsUnset(suffix string, nlb bool) bool {
	switch suffix {
	case annSubnets, annHCHealthy, annHCUnhealthy, annHCTimeout, annHCInterval, annHCProtocol, annHCPort:
		return false
	case annSSLPolicy:
		return nlb // an NLB listener gets a policy only when it is not ""
	}
	// type, internal, backend-protocol: compared with fixed values; ssl-cert, proxy-protocol,
	// the classic and the NLB attributes, healthcheck-path: read only when != "";
	// security-groups, extra-security-groups, additional-resource-tags, target-group-attributes,
	// target-node-labels: empty lists; ssl-ports: every port.
	return true
}
