package openstack

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/config"
)

// Boolean values as upstream reads them. Upstream's [Global] tls-insecure is a string that
// only the exact value "true" turns on (pkg/client/client.go: TLSInsecure == "true"), and its
// boolean Service annotations know only the exact strings "true" and "false"
// (getBoolFromServiceAnnotation; anything else is its default). A laxer reading here (True,
// 1, yes) would turn certificate verification off, or a public load balancer internal, where
// the upstream CCM did not: on a takeover that is an outage or a security change. So ccm
// reads the same two words, keeps upstream's outcome for every other value, and says so (a
// start-up notice for config, a Warning naming the annotation for a Service).

// insecureTLS: certificate verification is off only for tls-insecure = true, exactly.
func (c *Config) insecureTLS() bool { return c.Global.TLSInsecure == "true" }

// boolNotices report config booleans upstream reads as strings (only tls-insecure) whose value
// is neither true nor false: upstream's outcome stands, which the line says.
func (c *Config) boolNotices() []string {
	switch v := c.Global.TLSInsecure; v {
	case "", "true", "false":
		return nil
	default:
		return []string{config.Problem{Line: c.line(secGlobal, "", "tls-insecure"), Section: secGlobal, Key: "tls-insecure",
			Msg: fmt.Sprintf("%q is not true: TLS certificates are verified, as the upstream CCM does (only the exact value true turns verification off); write true or false", v)}.String()}
	}
}

// line is where a key is written, 0 if unknown.
func (c *Config) line(section, sub, key string) int {
	if c.lineOf == nil {
		return 0
	}
	return c.lineOf(section, sub, key)
}

// upstreamBool reads a boolean Service annotation as upstream's getBoolFromServiceAnnotation:
// exactly "true" or "false". Any other value present (True, 1, " true", "") is def, as
// upstream (which only logs it), with a Warning naming the annotation and the default.
func upstreamBool(svc *v1.Service, key string, def bool, warn *[]string) bool {
	v, ok := svc.Annotations[key]
	switch {
	case !ok:
		return def
	case v == "true":
		return true
	case v == "false":
		return false
	}
	if warn != nil {
		*warn = append(*warn, fmt.Sprintf("annotation %s: %q is not true or false (the upstream CCM reads only these, in lower case); using the default, %v", key, v, def))
	}
	return def
}

// proxyPool is the pool protocol the proxy-protocol annotation asks for, as upstream's
// getProxyProtocolFromServiceAnnotation reads it: exactly "true" or "v1" is PROXY, "v2"
// PROXYV2; anything else is off, and known says whether upstream has a meaning for it ("false",
// or "" which is no value) so that the rest can be warned about.
func proxyPool(svc *v1.Service) (pool string, known bool) {
	v, ok := svc.Annotations[annProxyProtocol]
	if !ok {
		return "", true
	}
	switch v {
	case "true", "v1":
		return "PROXY", true
	case "v2":
		return "PROXYV2", true
	case "false", "":
		return "", true
	}
	return "", false
}

// internalUnclear: the internal annotation holds a value strconv.ParseBool reads as true
// (True, TRUE, 1, t, T) but upstream's exact reading does not: upstream makes such a load
// balancer public, earlier ccm versions made it internal. Applying either to an existing load
// balancer could expose an internal Service or cut a public one off, so an existing one keeps
// its exposure, and none is created until the value is true or false. Pure.
func internalUnclear(a map[string]string) bool {
	v, ok := a[annInternal]
	if !ok || v == "true" || v == "false" {
		return false
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}
