package annotations

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// target-node-labels is read as upstream reads it (aws_loadbalancer.go, filterTargetNodes over
// getKeyValuePropertiesFromAnnotation), not as a Kubernetes label selector: a value a selector
// reads differently ("role=" is "role empty" there) would move a migrated Service's traffic
// to other Nodes, and one it cannot parse would stop the Service from being reconciled.

// NodeLabelFilter is the parsed annotation: every key must be on the Node; a value "" accepts
// any value of that key. Empty: every Node.
type NodeLabelFilter map[string]string

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

// parseNodeLabels reads the annotation as upstreamKeyValues does, but refuses an item written
// for ccm's earlier reading, a Kubernetes label selector ("role!=spot", "role in (web,api)",
// "!spot", "role = web", "role==web"): read as upstream's list it would match no Node (or more
// Nodes than meant) and the next sync would deregister the Service's targets. Refused, the
// sync fails before any write and the current targets stay. Upstream's own forms (k=v, k, k=)
// never hit this: their keys are label keys.
func parseNodeLabels(v string) (NodeLabelFilter, error) {
	for _, item := range strings.Split(strings.TrimSpace(v), ",") {
		item = strings.TrimSpace(item)
		key, _, _ := strings.Cut(item, "=")
		if item == "" || key == "" {
			continue // skipped, as upstream skips it
		}
		selectorLike := strings.HasPrefix(item, "!")
		// A selector's "notin" is caught by the key check (its key holds spaces); as a substring
		// it would refuse upstream values such as state=notinuse.
		for _, op := range []string{"!=", "==", " in ", "(", ")"} {
			selectorLike = selectorLike || strings.Contains(item, op)
		}
		if selectorLike || len(validation.IsQualifiedName(key)) > 0 {
			return nil, Error(NodeLabels, "item %q is not a label key or key=value: the value is read as upstream reads it, a list k=v,k2 (every key on the Node; k or k= any value), not as a label selector; write it so (role!=spot or role in (a,b) cannot be written so), or remove the annotation", item)
		}
	}
	return upstreamKeyValues(v), nil
}

// Selects reports whether a Node with these labels is a target: it carries every key, with the
// value asked for unless that is "". A Node without labels is selected only by an empty filter.
func (f NodeLabelFilter) Selects(nodeLabels map[string]string) bool {
	for k, want := range f {
		got, ok := nodeLabels[k]
		if !ok || (want != "" && got != want) {
			return false
		}
	}
	return true
}
