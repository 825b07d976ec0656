package poolconvert

import (
	"fmt"
	"strings"
)

// FromKubeVIP converts the data of kube-vip-cloud-provider's kubevip ConfigMap. Each scope
// (global, or a namespace) with a cidr-<scope> or range-<scope> key becomes one pool, named
// after it; a namespace's pool serves only that namespace, as kube-vip-cloud-provider's does.
// Its pools hand out a CIDR's first and last address unless skip-end-ips-in-cidr is "true", and
// never an address ending in .0 or .255; search-order desc hands out the highest first.
func FromKubeVIP(data map[string]string) (Result, error) {
	var r Result
	skipEnds := strings.TrimSpace(data["skip-end-ips-in-cidr"]) == "true"
	desc := false
	switch v := strings.TrimSpace(data["search-order"]); v {
	case "", "asc":
	case "desc":
		desc = true
	default:
		r.Notes = append(r.Notes, fmt.Sprintf("search-order %q is not one kube-vip-cloud-provider knows (asc, desc): ascending kept", v))
	}
	scopes := map[string]*Pool{}
	var order []string
	for _, key := range sortedKeys(data) {
		scope, ok := cutScope(key)
		if !ok {
			if note := unconverted(key, data[key]); note != "" {
				r.Notes = append(r.Notes, note)
			}
			continue
		}
		p := scopes[scope]
		if p == nil {
			p = &Pool{Name: scope, SkipEnds: skipEnds, Descending: desc, AvoidBuggy: true}
			if scope != "global" {
				p.Namespace = []string{scope}
			}
			scopes[scope] = p
			order = append(order, scope)
		}
		for _, entry := range strings.Split(data[key], ",") {
			if strings.TrimSpace(entry) == "0.0.0.0/32" {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: 0.0.0.0/32 (an address by DHCP) has no equivalent in ccm: left out", key))
				continue
			}
			if err := p.add(key, entry); err != nil {
				return Result{}, err
			}
		}
		p.Comment = strings.TrimPrefix(p.Comment+", "+key, ", ")
	}
	if _, ok := data["cidr-global"]; ok {
		for _, s := range order {
			if _, has := data["range-"+s]; has && s != "global" {
				r.Notes = append(r.Notes, fmt.Sprintf("range-%s: kube-vip-cloud-provider never used it while cidr-global exists; ccm will", s))
			}
		}
	}
	for _, s := range order {
		if p := scopes[s]; len(p.CIDR)+len(p.Range) > 0 {
			r.Pools = append(r.Pools, *p)
		}
	}
	return r, nil
}

// cutScope is the scope of a cidr-<scope> or range-<scope> key.
func cutScope(key string) (scope string, ok bool) {
	for _, k := range []string{"cidr-", "range-"} {
		if s, found := strings.CutPrefix(key, k); found && s != "" {
			return s, true
		}
	}
	return "", false
}

// unconverted is the note for a key that is not a pool: "" for those the conversion used.
func unconverted(key, value string) string {
	switch {
	case key == "skip-end-ips-in-cidr" || key == "search-order":
		return ""
	case strings.HasPrefix(key, "allow-share-"):
		return fmt.Sprintf("%s=%s: ccm shares an address among Services that carry the same dummy.ccm.io/allow-shared-ip annotation, not per namespace", key, value)
	case strings.HasPrefix(key, "interface-"):
		return fmt.Sprintf("%s=%s: ccm writes no kube-vip.io/serviceInterface; set kube-vip's vip_servicesinterface, or annotate the Services", key, value)
	}
	return fmt.Sprintf("%s: not a key ccm converts: left out", key)
}
