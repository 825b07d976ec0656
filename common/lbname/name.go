// Package lbname makes cloud load balancer names from Services: deterministic, scoped to one
// cluster, within the cloud's length limit, unique even when cut short, and mapped back to
// namespace/name where the format allows.
package lbname

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// hashLen is the length of the suffix that keeps truncated names unique: a marker and 9 hex
// digits (36 bits), so a collision needs about 250,000 Services with the same readable prefix.
const hashLen = 10

// Scheme is a cloud's naming rule.
type Scheme struct {
	Prefix string // e.g. "kube_service_" (Octavia) or "k8s-" (ELB)
	Sep    string // between cluster, namespace and name
	MaxLen int    // e.g. 32 for AWS ELB, 255 for Octavia
	// Allowed reports whether a character may appear; others become Sep. Nil allows all.
	Allowed func(r rune) bool
}

// AWSELB: ELB and NLB names are at most 32 characters of letters, digits and hyphens and must
// not start or end with a hyphen.
var AWSELB = Scheme{Prefix: "k8s-", Sep: "-", MaxLen: 32, Allowed: isAlnum}

// Octavia keeps the upstream OpenStack CCM's kube_service_<cluster>_<namespace>_<name>, so
// load balancers created by it are found again after a migration.
var Octavia = Scheme{Prefix: "kube_service_", Sep: "_", MaxLen: 255}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Name returns the load balancer name for Service namespace/name in cluster.
func (s Scheme) Name(cluster, namespace, name string) string {
	full := s.Prefix + s.clean(cluster) + s.Sep + s.clean(namespace) + s.Sep + s.clean(name)
	if len(full) <= s.MaxLen && full == s.Prefix+cluster+s.Sep+namespace+s.Sep+name && !s.sepInNames() {
		return full
	}
	// Too long, characters replaced, or a separator that can occur in names (so "a-b"/"c" and
	// "a"/"b-c" would read the same): keep a readable head and add a hash of the exact identity.
	sum := sha256.Sum256([]byte(cluster + "/" + namespace + "/" + name))
	// The upper-case 'H' cannot end a name made without hashing (Service names are lower-case
	// DNS labels), so a hashed name never equals, and never parses as, another Service's name.
	suffix := s.Sep + "H" + hex.EncodeToString(sum[:])[:hashLen-1]
	if len(full)+len(suffix) > s.MaxLen {
		keep := s.MaxLen - len(suffix)
		if keep < len(s.Prefix) {
			keep = len(s.Prefix)
		}
		full = strings.TrimRight(full[:min(keep, len(full))], s.Sep)
	}
	return full + suffix
}

// Parse maps a name made by Name back to namespace and name. It works only for names that
// were neither cut nor hashed, and only when Sep cannot occur in a namespace (Kubernetes
// namespaces are DNS labels, so "_" can be parsed and "-" cannot). Otherwise ok is false and
// the ownership tags (see Tags) are the way back.
func (s Scheme) Parse(cluster, lbName string) (namespace, name string, ok bool) {
	if s.sepInNames() {
		return "", "", false
	}
	rest, found := strings.CutPrefix(lbName, s.Prefix+cluster+s.Sep)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, s.Sep)
	if !found || name != strings.ToLower(name) || s.Name(cluster, namespace, name) != lbName {
		return "", "", false
	}
	return namespace, name, true
}

// sepInNames reports whether Sep can occur in a namespace or Service name (DNS labels).
func (s Scheme) sepInNames() bool {
	return strings.ContainsAny(s.Sep, "abcdefghijklmnopqrstuvwxyz0123456789-")
}

func (s Scheme) clean(v string) string {
	if s.Allowed == nil {
		return v
	}
	return strings.Map(func(r rune) rune {
		if s.Allowed(r) {
			return r
		}
		return []rune(s.Sep)[0]
	}, v)
}
