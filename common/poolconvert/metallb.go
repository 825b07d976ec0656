package poolconvert

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPAddressPool is the part of MetalLB's IPAddressPool (metallb.io/v1beta1) the conversion
// reads.
type IPAddressPool struct {
	Name string
	Spec struct {
		Addresses         []string `json:"addresses"`
		AutoAssign        *bool    `json:"autoAssign"`
		AvoidBuggyIPs     bool     `json:"avoidBuggyIPs"`
		ServiceAllocation *struct {
			Priority           int                    `json:"priority"`
			Namespaces         []string               `json:"namespaces"`
			NamespaceSelectors []any                  `json:"namespaceSelectors"`
			ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors"`
		} `json:"serviceAllocation"`
	}
}

// FromMetalLB converts IPAddressPools, one pool each with its name. MetalLB hands out every
// address of a CIDR (skip-end-addresses false), unless avoidBuggyIPs leaves out .0 and .255.
func FromMetalLB(pools []IPAddressPool) (Result, error) {
	var r Result
	for _, mp := range pools {
		if strings.TrimSpace(mp.Name) == "" {
			return Result{}, fmt.Errorf("an IPAddressPool has no metadata.name")
		}
		p := Pool{Name: mp.Name, Comment: "IPAddressPool " + mp.Name, AvoidBuggy: mp.Spec.AvoidBuggyIPs,
			Manual: mp.Spec.AutoAssign != nil && !*mp.Spec.AutoAssign}
		for _, a := range mp.Spec.Addresses {
			if err := p.add("IPAddressPool "+mp.Name+" spec.addresses", a); err != nil {
				return Result{}, err
			}
		}
		if sa := mp.Spec.ServiceAllocation; sa != nil {
			p.Namespace = append(p.Namespace, sa.Namespaces...)
			if len(sa.NamespaceSelectors) > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("IPAddressPool %s: serviceAllocation.namespaceSelectors has no equivalent: list the namespaces it selects as namespace lines", mp.Name))
			}
			for i := range sa.ServiceSelectors {
				sel, err := metav1.LabelSelectorAsSelector(&sa.ServiceSelectors[i])
				if err != nil {
					return Result{}, fmt.Errorf("IPAddressPool %s serviceAllocation.serviceSelectors[%d]: %v", mp.Name, i, err)
				}
				p.ServiceSelector = append(p.ServiceSelector, sel.String())
			}
			if sa.Priority < 0 {
				return Result{}, fmt.Errorf("IPAddressPool %s serviceAllocation.priority %d: negative", mp.Name, sa.Priority)
			}
			p.Priority = sa.Priority
		}
		if len(p.CIDR)+len(p.Range) == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("IPAddressPool %s has no addresses: left out", mp.Name))
			continue
		}
		r.Pools = append(r.Pools, p)
	}
	return r, nil
}
