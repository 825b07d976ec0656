package openstack

import (
	"fmt"

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
