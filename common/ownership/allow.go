package ownership

import (
	"fmt"
	"slices"
	"strings"
)

// Allow is the operator's exception to "a Service may name only its own objects": cloud objects
// ccm did not create (a pre-made load balancer, security group, target group, network) that a
// Service may name by annotation, by the Service's namespace or by the object's ID. It is set in
// the cloud config only, never by a Service. ccm uses an allowed object but never removes or
// rewrites it: what it adds to one (a listener, a rule) carries its own ownership mark.
type Allow struct {
	Namespaces []string // Services in these namespaces may name any object
	IDs        []string // any Service may name these objects
}

// ParseAllow reads the two comma-separated config values; key names the config keys for errors.
func ParseAllow(namespaces, ids string) (Allow, error) {
	var a Allow
	for _, ns := range splitList(namespaces) {
		if ns == "*" {
			return Allow{}, fmt.Errorf("%q: \"*\" is not allowed; list the namespaces whose Services may name any cloud object", namespaces)
		}
		a.Namespaces = append(a.Namespaces, ns)
	}
	a.IDs = splitList(ids)
	return a, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Permits reports whether a Service in namespace may name object objID.
func (a Allow) Permits(namespace, objID string) bool {
	return slices.Contains(a.Namespaces, namespace) || slices.Contains(a.IDs, objID)
}
