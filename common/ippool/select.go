package ippool

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Which pools a Service may take an address from. A pool that names namespaces or has service
// selectors is restricted: it serves the Services in one of its namespaces (when it names any)
// whose labels match one of its selectors (when it has any). A Service uses the restricted
// pools that serve it; when none does, the unrestricted pools. Among those, pools with a
// priority come first, lowest first, then the others, each in name order (as MetalLB orders
// its pools' priorities; namespace selectors, which need the Namespaces' labels, are not read).

// maxSelectorLen bounds a service-selector line; the operator writes it, but a config is read
// at every reload.
const maxSelectorLen = 1024

func parseSelectors(lines []string) ([]labels.Selector, *Error) {
	var out []labels.Selector
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || len(l) > maxSelectorLen {
			return nil, &Error{"service-selector", fmt.Sprintf("%q: a label selector such as app=web or tier in (a,b), at most %d bytes", l, maxSelectorLen)}
		}
		sel, err := labels.Parse(l)
		if err != nil {
			return nil, &Error{"service-selector", fmt.Sprintf("%q is not a label selector: %v", l, err)}
		}
		out = append(out, sel)
	}
	return out, nil
}

// Priority is the pool's priority (0: none).
func (p *Pool) Priority() int { return p.priority }

func (p *Pool) restricted() bool { return len(p.namespaces) > 0 || len(p.selectors) > 0 }

// serves says whether the restricted pool p serves a Service in namespace with labels lbls;
// lbls nil: its labels are not known, so the selectors are not applied.
func (p *Pool) serves(namespace string, lbls labels.Set) bool {
	if len(p.namespaces) > 0 && !slices.Contains(p.namespaces, namespace) {
		return false
	}
	return lbls == nil || len(p.selectors) == 0 || slices.ContainsFunc(p.selectors, func(s labels.Selector) bool { return s.Matches(lbls) })
}

// ForService returns the pools a Service in namespace with labels lbls may use, in the order
// they are tried.
func ForService(pools []*Pool, namespace string, lbls map[string]string) []*Pool {
	set := labels.Set(lbls)
	if set == nil {
		set = labels.Set{}
	}
	return pick(pools, namespace, set)
}

// For returns the pools that may serve some Service of namespace, whatever its labels (where
// they are not known): the restricted pools serving the namespace, and the unrestricted ones
// unless a pool names the namespace without selectors (then every Service there has one).
func For(pools []*Pool, namespace string) []*Pool {
	out := pick(pools, namespace, nil)
	whole := slices.ContainsFunc(pools, func(p *Pool) bool {
		return len(p.selectors) == 0 && slices.Contains(p.namespaces, namespace)
	})
	if whole || !slices.ContainsFunc(out, (*Pool).restricted) {
		return out
	}
	for _, p := range pools {
		if !p.restricted() {
			out = append(out, p)
		}
	}
	return out
}

func pick(pools []*Pool, namespace string, lbls labels.Set) []*Pool {
	var out []*Pool
	for _, p := range pools {
		if p.restricted() && p.serves(namespace, lbls) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		for _, p := range pools {
			if !p.restricted() {
				out = append(out, p)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *Pool) int {
		switch {
		case a.priority == b.priority:
			return 0
		case a.priority == 0:
			return 1
		case b.priority == 0:
			return -1
		}
		return a.priority - b.priority
	})
	return out
}
