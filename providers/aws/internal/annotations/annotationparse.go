package annotations

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The parsers of annotationRules: each reads one annotation's value into Options, as
// upstream reads it, and refuses a value that ccm cannot act on with an error naming it.

// boolInto reads true or false (strconv.ParseBool, as upstream) into the field f gives.
func boolInto(f func(*Options) *bool) parseFunc {
	return func(o *Options, suffix, v string) (err error) {
		*f(o), err = parseBool(suffix, v)
		return err
	}
}

// rangeInto reads a number from lo to hi (parseRange) into the field f gives.
func rangeInto(lo, hi int, f func(*Options) *int32) parseFunc {
	return func(o *Options, suffix, v string) (err error) {
		*f(o), err = parseRange(suffix, v, lo, hi)
		return err
	}
}

// hcNumber reads a health check timing from lo to hi (nlbHi on an NLB, whose timeout goes
// further) into the field f gives; setTimings fills the timings no annotation set.
func hcNumber(lo, hi, nlbHi int, f func(*HCOptions) *int32) parseFunc {
	return func(o *Options, suffix, v string) (err error) {
		top := hi
		if o.NLB {
			top = nlbHi
		}
		*f(&o.HC), err = parseRange(suffix, v, lo, top)
		return err
	}
}

// trimmedInto sets the field f gives to the value, trimmed as upstream trims it.
func trimmedInto(f func(*Options) *string) parseFunc {
	return func(o *Options, _, v string) error {
		*f(o) = strings.TrimSpace(v)
		return nil
	}
}

// adviseType reads nothing (Parse decided the type) but advises a value that makes a
// classic ELB though it looks like it asks for something else.
func adviseType(o *Options, suffix, v string) error {
	if v != "" && v != "nlb" && !strings.EqualFold(v, "classic") {
		o.Advice = append(o.Advice, fmt.Sprintf("%s%s %q: a classic ELB is made, as upstream makes one for every value but \"nlb\" (write nlb, lower case, for an NLB; external and nlb-ip leave the Service to the AWS Load Balancer Controller)",
			Prefix, suffix, v))
	}
	return nil
}

func parseSubnets(o *Options, suffix, v string) error {
	if o.Subnets = SplitList(v); len(o.Subnets) == 0 {
		return Error(suffix, "names no subnet")
	}
	return nil
}

// groupsInto reads security group IDs into the list f gives. No ID (blank or only commas) is
// the ELB's own group, as upstream reads an empty list (docs/providers/aws.md, parity table).
// An NLB uses security-groups only in Managed mode (the provider's config, checked in its
// ensureNLB); elsewhere upstream ignores it, as ccm does with a Warning, so on an NLB a value
// that is not a group ID is kept as NLBGroupIDErr instead of refused here.
func groupsInto(f func(*Options) *[]string) parseFunc {
	return func(o *Options, suffix, v string) error {
		gs := SplitList(v)
		var err error
		for _, g := range gs {
			if !SecurityGroupIDRE.MatchString(g) {
				err = Error(suffix, "%q is not a security group ID (sg-…)", g)
			}
		}
		if err != nil && o.NLB {
			o.NLBGroupIDErr, err = err, nil
		}
		*f(o) = gs
		return err
	}
}

func parseSSLCert(o *Options, suffix, v string) error {
	if o.SSLCert = v; !strings.HasPrefix(v, "arn:") {
		return Error(suffix, "must be a certificate ARN")
	}
	return nil
}

// parseSSLPolicy keeps the name as written (upstream sends it so; ELB refuses spaces).
func parseSSLPolicy(o *Options, suffix, v string) error {
	if o.SSLPolicy = v; !sslPolicyRE.MatchString(v) {
		return Error(suffix, "%q is not an ELB security policy name (such as ELBSecurityPolicy-TLS-1-2-2017-01)", v)
	}
	return nil
}

// parseBackend takes the values upstream acts on. Upstream refuses another value only on a
// TLS port of a classic ELB and ignores it elsewhere: that is settled once ssl-cert and
// ssl-ports are read (otherBackend), as is the case of the value (classicBackendCase).
func parseBackend(o *Options, _, v string) error {
	if b := strings.ToLower(v); slices.Contains(backendProtocols, b) {
		o.Backend = b
	}
	return nil
}

// parseHCProtocol upper-cases the value, not trimmed: " HTTP" is refused, as upstream refuses it.
func parseHCProtocol(o *Options, suffix, v string) error {
	o.HC.Protocol = strings.ToUpper(v)
	allowed := []string{"TCP", "HTTP", "HTTPS", "SSL"}
	if o.NLB {
		allowed = allowed[:3]
	}
	if !slices.Contains(allowed, o.HC.Protocol) {
		return Error(suffix, "must be one of %s, not %q", strings.Join(allowed, ", "), v)
	}
	return nil
}

// parseHCPort takes the value not trimmed: " 80" is refused, as upstream refuses it.
func parseHCPort(o *Options, suffix, v string) error {
	o.HC.Port = v
	if n, err := strconv.Atoi(v); v != TrafficPort && (err != nil || n < 1 || n > 65535) {
		return Error(suffix, "must be a port number (1-65535) or %q, not %q", TrafficPort, v)
	}
	return nil
}

// parseHCPath keeps the path as written, as upstream puts it in the target.
func parseHCPath(o *Options, suffix, v string) error {
	o.HC.Path = v
	if v != "" && (!strings.HasPrefix(v, "/") || len(v) > 1024 || strings.ContainsAny(v, " \t\n")) {
		return Error(suffix, "must be a path starting with / (at most 1024 characters, no spaces), not %q", v)
	}
	return nil
}

// parseProxyProtocol takes upstream's only value: "*" is every backend port.
func parseProxyProtocol(o *Options, suffix, v string) error {
	if o.ProxyProtocol = v == "*"; !o.ProxyProtocol {
		return Error(suffix, "must be \"*\" (PROXY protocol on every backend port), not %q", v)
	}
	return nil
}

// parseEmitInterval takes the two intervals ELB has, 5 and 60 minutes.
func parseEmitInterval(o *Options, suffix, v string) (err error) {
	if o.Attrs.EmitInterval, err = parseRange(suffix, v, 5, 60); err != nil {
		return err
	}
	if o.Attrs.EmitInterval != 5 && o.Attrs.EmitInterval != 60 {
		return Error(suffix, "must be 5 or 60 (minutes), not %q", v)
	}
	return nil
}

func parseEIPs(o *Options, suffix, v string) error {
	o.EIPs = SplitList(v)
	var err error
	for _, a := range o.EIPs {
		if !strings.HasPrefix(a, "eipalloc-") {
			err = Error(suffix, "%q is not an Elastic IP allocation ID (eipalloc-…)", a)
		}
	}
	return err
}

func parsePrivateIPs(o *Options, suffix, v string) error {
	o.PrivateIPs = SplitList(v)
	var err error
	for _, a := range o.PrivateIPs {
		if ip, perr := netip.ParseAddr(a); perr != nil || !ip.Is4() {
			err = Error(suffix, "%q is not an IPv4 address", a)
		}
	}
	return err
}
