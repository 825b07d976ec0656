// Package poolconvert turns the address pools of kube-vip-cloud-provider (its kubevip
// ConfigMap) and of MetalLB (its IPAddressPool objects) into ccm's [Pool] sections, keeping
// how each hands addresses out, so that the Services they served keep their addresses. What
// ccm has no equivalent for is reported as a note, never dropped silently.
package poolconvert

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Pool is one [Pool "name"] section.
type Pool struct {
	Name       string
	Comment    string // where it came from
	CIDR       []string
	Range      []string
	Namespace  []string
	SkipEnds   bool // skip-end-addresses
	Descending bool // order = descending
	Manual     bool // auto-assign = false
	AvoidBuggy bool // avoid-buggy-ips
	// ServiceSelector are label selectors in Kubernetes' syntax; Priority 0 is none.
	ServiceSelector []string
	Priority        int
}

// Result is a conversion: the pools, and what could not be carried over.
type Result struct {
	Pools []Pool
	Notes []string
}

// Render writes r as a cloud-config: the notes as comments first, then each pool.
func Render(r Result, source string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; [Pool] sections converted from %s by ccm convert.\n", source)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "; NOTE: %s\n", n)
	}
	for _, p := range r.Pools {
		fmt.Fprintf(&b, "\n[Pool %q]\n", p.Name)
		if p.Comment != "" {
			fmt.Fprintf(&b, "; %s\n", p.Comment)
		}
		for _, c := range p.CIDR {
			fmt.Fprintf(&b, "cidr = %s\n", c)
		}
		for _, r := range p.Range {
			fmt.Fprintf(&b, "range = %s\n", r)
		}
		for _, ns := range p.Namespace {
			fmt.Fprintf(&b, "namespace = %s\n", ns)
		}
		for _, sel := range p.ServiceSelector {
			fmt.Fprintf(&b, "service-selector = %s\n", sel)
		}
		if p.Priority != 0 {
			fmt.Fprintf(&b, "priority = %d\n", p.Priority)
		}
		fmt.Fprintf(&b, "skip-end-addresses = %t\n", p.SkipEnds)
		if p.Descending {
			b.WriteString("order = descending\n")
		}
		if p.Manual {
			b.WriteString("auto-assign = false\n")
		}
		if p.AvoidBuggy {
			b.WriteString("avoid-buggy-ips = true\n")
		}
	}
	return b.String()
}

// add sorts one source entry (a CIDR, a range "a-b", or a single address) into p's cidr or
// range lines; a bad entry is an error naming where it came from.
func (p *Pool) add(where, entry string) error {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return nil
	}
	if a, b, ok := strings.Cut(entry, "-"); ok {
		first, err1 := netip.ParseAddr(strings.TrimSpace(a))
		last, err2 := netip.ParseAddr(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || first.Is4() != last.Is4() || last.Less(first) {
			return fmt.Errorf("%s: %q is not a range such as 192.0.2.10-192.0.2.20", where, entry)
		}
		p.Range = append(p.Range, first.String()+"-"+last.String())
		return nil
	}
	if a, err := netip.ParseAddr(entry); err == nil {
		p.Range = append(p.Range, a.String()+"-"+a.String())
		return nil
	}
	pfx, err := netip.ParsePrefix(entry)
	if err != nil {
		return fmt.Errorf("%s: %q is neither a CIDR nor a range", where, entry)
	}
	p.CIDR = append(p.CIDR, pfx.Masked().String())
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
