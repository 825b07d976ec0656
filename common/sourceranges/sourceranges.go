// Package sourceranges reads the client ranges a LoadBalancer Service lets in, by the rule of
// k8s.io/cloud-provider/service/helpers.GetLoadBalancerSourceRanges that every upstream cloud
// provider follows: spec.loadBalancerSourceRanges when it is set, else the legacy annotation
// service.beta.kubernetes.io/load-balancer-source-ranges (a comma-separated list), else no
// restriction. A Service migrated from an upstream CCM with only the annotation must not open
// to everyone.
package sourceranges

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/reach"
)

// Annotation is the legacy annotation, read only when the spec field is empty.
const Annotation = v1.AnnotationLoadBalancerSourceRangesKey

// Field names the spec field in messages.
const Field = "spec.loadBalancerSourceRanges"

// Ranges are the Service's source ranges.
type Ranges struct {
	// CIDRs are canonical (masked) prefixes, sorted and without duplicates; nil when the
	// Service does not restrict its clients.
	CIDRs []string
	// From is where they were read: Field, Annotation, or "" when none is set.
	From string
}

// Of reads svc's source ranges. A value that is not a CIDR is an error naming the field or
// the annotation, the item and the value. Parsing is upstream's (leading zeros in IPv4 are
// accepted, as k8s.io/utils/net.ParseCIDRSloppy does); the ranges are normalised by
// reach.Prefix (an IPv4-mapped range is the IPv4 range it is, a zone is refused) and at most
// reach.MaxRanges.
func Of(svc *v1.Service) (Ranges, error) {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		out, err := parse(Field, svc.Spec.LoadBalancerSourceRanges, func(i int, v string) error {
			return fmt.Errorf("%s[%d]: %q is not a CIDR (e.g. 203.0.113.0/24 or 2001:db8::/32)", Field, i, v)
		})
		return Ranges{CIDRs: out, From: Field}, err
	}
	v := strings.TrimSpace(svc.Annotations[Annotation])
	if v == "" {
		return Ranges{}, nil
	}
	out, err := parse("annotation "+Annotation, strings.Split(v, ","), func(i int, item string) error {
		return fmt.Errorf("annotation %s: item %d, %q, is not a CIDR; want a comma-separated list such as 10.0.0.0/24,192.168.2.0/24", Annotation, i+1, item)
	})
	return Ranges{CIDRs: out, From: Annotation}, err
}

func parse(what string, items []string, bad func(i int, v string) error) ([]string, error) {
	if len(items) > reach.MaxRanges {
		return nil, fmt.Errorf("%s: %d ranges, more than the %d a Service may list", what, len(items), reach.MaxRanges)
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		p, ok := reach.Prefix(item)
		if !ok {
			return nil, bad(i, item)
		}
		out = append(out, p.String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ReasonNotEnforced is the Warning's reason when Unenforced has advice.
const ReasonNotEnforced = "LoadBalancerSourceRangesNotEnforced"

// Unenforced is the advice, for a provider with no firewall of its own (the dummy, vSphere),
// when svc restricts its clients by the legacy annotation alone: kube-proxy enforces
// spec.loadBalancerSourceRanges on the Nodes but does not read the annotation, so nothing
// applies those ranges. The upstream CCMs with a firewall honour the annotation; a Service
// migrated with it must not silently open to everyone.
func Unenforced(svc *v1.Service) (string, bool) {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 || strings.TrimSpace(svc.Annotations[Annotation]) == "" {
		return "", false
	}
	return fmt.Sprintf("annotation %s is not enforced: this provider has no firewall of its own and kube-proxy applies only %s; "+
		"move the ranges to %s to restrict the clients", Annotation, Field, Field), true
}
