// Package lbname makes cloud load balancer names from Services: deterministic, scoped to one
// cluster, within the cloud's length limit, unique even when cut short, and mapped back to
// namespace/name where the format allows.
package lbname

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
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

// Name returns the load balancer name for Service namespace/name in cluster. The name is valid
// UTF-8 of at most MaxLen bytes (for a scheme whose MaxLen leaves room for Prefix, Sep and the
// hash suffix), made of Allowed characters and Sep when Allowed is set, and two different
// identities never get the same name (up to a 36-bit hash collision of two long names with the
// same readable head).
//
// The readable form Prefix+cluster+Sep+namespace+Sep+name (the upstream OpenStack CCM's) is
// kept when it fits, needs no replaced character, and reads back one way: namespace and cluster
// hold no Sep (the name may, as the OpenStack provider's "<name>_ipv6" does), it does not end
// like a hash suffix, and Sep is not a character of DNS labels. Every other identity gets a
// readable head cut at a character boundary and a hash of the exact identity. A cluster name
// that holds Sep therefore gets a hashed name: "a_b"/"c"/"d" and "a"/"b_c"/"d" were both
// kube_service_a_b_c_d before.
func (s Scheme) Name(cluster, namespace, name string) string {
	full := s.Prefix + s.clean(cluster) + s.Sep + s.clean(namespace) + s.Sep + s.clean(name)
	if len(full) <= s.MaxLen && full == s.Prefix+cluster+s.Sep+namespace+s.Sep+name && !s.sepInNames() &&
		!strings.Contains(cluster, s.Sep) && !strings.Contains(namespace, s.Sep) && !s.looksHashed(full) {
		return full
	}
	// The upper-case 'H' cannot end a name made without hashing (looksHashed), so a hashed name
	// never equals, and never parses as, another Service's name.
	suffix := s.Sep + "H" + hex.EncodeToString(identityHash(cluster, namespace, name))[:hashLen-1]
	if len(full)+len(suffix) > s.MaxLen {
		keep := s.MaxLen - len(suffix)
		if keep < len(s.Prefix) {
			keep = len(s.Prefix)
		}
		keep = min(keep, len(full))
		// full is valid UTF-8 (clean): cut before the first byte of a character, never inside one.
		for keep > len(s.Prefix) && keep < len(full) && !utf8.RuneStart(full[keep]) {
			keep--
		}
		full = strings.TrimRight(full[:keep], s.Sep)
	}
	return full + suffix
}

// identityHash is the SHA-256 of cluster, namespace and name. It keeps hashing
// cluster+"/"+namespace+"/"+name, so the names of existing load balancers do not change: that
// is unambiguous when neither cluster nor name holds a '/' (true of cluster names ccm accepts and
// of Kubernetes names; the namespace may hold one, as AWS target group names pass
// "namespace/name"). Other identities hash an encoding without '/', which no string of that form
// equals.
func identityHash(cluster, namespace, name string) []byte {
	in := cluster + "/" + namespace + "/" + name
	if strings.Contains(cluster, "/") || strings.Contains(name, "/") {
		in = "x" + hex.EncodeToString([]byte(cluster)) + "." + hex.EncodeToString([]byte(namespace)) + "." + hex.EncodeToString([]byte(name))
	}
	sum := sha256.Sum256([]byte(in))
	return sum[:]
}

// looksHashed reports whether n ends like a hashed name: Sep, 'H' and hashLen-1 lower-case hex
// digits.
func (s Scheme) looksHashed(n string) bool {
	i := len(n) - (hashLen - 1)
	if i < len(s.Sep)+1 || n[i-1] != 'H' || n[i-1-len(s.Sep):i-1] != s.Sep {
		return false
	}
	for _, c := range []byte(n[i:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
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

// clean replaces the characters Allowed refuses, and bytes that are not UTF-8, with Sep.
func (s Scheme) clean(v string) string {
	if s.Allowed == nil {
		return strings.ToValidUTF8(v, s.Sep)
	}
	return strings.Map(func(r rune) rune {
		if r != utf8.RuneError && s.Allowed(r) {
			return r
		}
		return []rune(s.Sep)[0]
	}, v)
}
