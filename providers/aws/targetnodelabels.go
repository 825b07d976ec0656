package aws

import "strings"

// target-node-labels is read as upstream reads it (aws_loadbalancer.go, filterTargetNodes over
// getKeyValuePropertiesFromAnnotation), not as a Kubernetes label selector: a value a selector
// reads differently ("role=" is "role empty" there) would move a migrated Service's traffic
// to other Nodes, and one it cannot parse would stop the Service from being reconciled.

// nodeLabelFilter is the parsed annotation: every key must be on the Node; a value "" accepts
// any value of that key. Empty: every Node.
type nodeLabelFilter map[string]string

// upstreamKeyValues reads "k1=v1,k2,k3=" as upstream's getKeyValuePropertiesFromAnnotation
// does: the list and each item are trimmed, the rest is taken as written; "k" and "k=" give
// k an empty value; "k=v=x" gives k the value v (the text after a second "=" is dropped); an
// item without a key is skipped; a later key wins. Nothing is refused.
func upstreamKeyValues(v string) map[string]string {
	out := map[string]string{}
	for _, item := range strings.Split(strings.TrimSpace(v), ",") {
		parts := strings.Split(strings.TrimSpace(item), "=")
		if parts[0] == "" {
			continue
		}
		val := ""
		if len(parts) >= 2 {
			val = parts[1]
		}
		out[parts[0]] = val
	}
	return out
}

// selects reports whether a Node with these labels is a target: it carries every key, with the
// value asked for unless that is "". A Node without labels is selected only by an empty filter.
func (f nodeLabelFilter) selects(nodeLabels map[string]string) bool {
	for k, want := range f {
		got, ok := nodeLabels[k]
		if !ok || (want != "" && got != want) {
			return false
		}
	}
	return true
}
