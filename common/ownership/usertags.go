package ownership

import (
	"fmt"
	"sort"
	"strings"
)

// ReservedTagPrefixes are tag key prefixes no Service annotation may set: ownership
// (kubernetes.io/), ccm's own bookkeeping (ccm.k8s.io/: a forged fingerprint would hide drift,
// forged node groups would point a delete at another group), and names the clouds reserve (aws:).
// Compared case-insensitively, as some clouds treat keys so.
var ReservedTagPrefixes = []string{"kubernetes.io/", "k8s.io/", "ccm.k8s.io/", "aws:"}

// Reserved reports whether key is a reserved tag key.
func Reserved(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	for _, p := range ReservedTagPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// WithUserTags returns the tags of an object created for id: the user's tags (from an
// annotation) with the ownership tags applied last. A user tag with a reserved key is an error
// naming the key and the annotation, so no annotation can forge or overwrite ownership.
func WithUserTags(id Identity, user map[string]string, annotation string) (map[string]string, error) {
	var bad []string
	out := make(map[string]string, len(user)+3)
	for k, v := range user {
		if Reserved(k) {
			bad = append(bad, k)
			continue
		}
		out[k] = v
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("annotation %s: tag key(s) %s are reserved for ccm's ownership records (prefixes %s) and cannot be set by a Service",
			annotation, strings.Join(bad, ", "), strings.Join(ReservedTagPrefixes, ", "))
	}
	for k, v := range id.Tags() {
		out[k] = v
	}
	return out, nil
}
