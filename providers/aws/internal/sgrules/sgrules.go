// Package sgrules is the algebra of security group ingress rules: a rule in a comparable form,
// what a group is to gain and lose so that it holds the rules a Service wants without taking
// over another owner's (Plan), and the shared path-MTU rules of NLB clients
// (NLBMTURules). It is pure: package aws reads the groups into Rules and writes the plan back
// with the EC2 API, so this package does not import the AWS SDK and is table-tested alone.
package sgrules

import (
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

// Rule is one ingress permission in a comparable form. EC2 identifies a rule by everything but
// its description; the description says whose it is (ownership.Description).
type Rule struct {
	Proto    string
	From, To int32
	CIDR     string // IPv4 or IPv6
	Group    string
	Desc     string
}

// Key is the rule as EC2 compares it: without the description.
func (r Rule) Key() Rule {
	r.Desc = ""
	return r
}

// Text is the rule for an Event: protocol, ports and source.
func (r Rule) Text() string {
	return fmt.Sprintf("%s/%d-%d from %s%s", r.Proto, r.From, r.To, r.CIDR, r.Group)
}

// IsIPv6 says whether cidr is an IPv6 range (EC2 keeps those apart, as Ipv6Ranges).
func IsIPv6(cidr string) bool {
	p, err := netip.ParsePrefix(cidr)
	return err == nil && p.Addr().Is6() && !p.Addr().Is4In6()
}

// Halves splits a CIDR into its two halves; ok is false for a single address.
func Halves(cidr string) (a, b string, ok bool) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Bits() >= p.Addr().BitLen() {
		return "", "", false
	}
	lo := netip.PrefixFrom(p.Masked().Addr(), p.Bits()+1)
	raw := lo.Addr().AsSlice()
	raw[p.Bits()/8] |= 0x80 >> (p.Bits() % 8)
	hiAddr, _ := netip.AddrFromSlice(raw)
	return lo.String(), netip.PrefixFrom(hiAddr, p.Bits()+1).String(), true
}

// rangeHolds says whether range outer holds range inner and is larger.
func rangeHolds(outer, inner string) bool {
	o, err1 := netip.ParsePrefix(outer)
	i, err2 := netip.ParsePrefix(inner)
	return err1 == nil && err2 == nil && o.Bits() < i.Bits() && o.Masked().Contains(i.Addr())
}

// claim resolves want against the rules a group has. A wanted rule whose key is held by a rule
// that is not ours (mine false: another Service's or cluster's, in a node group shared by two
// clusters with the same nodePorts) must not be taken over, or one cluster's delete would
// remove the other's access: a CIDR rule is then wanted as its two halves, which carry our
// description, so each owner removes only its own rules and both admit the same clients. A
// rule from a group, or from one address, cannot be split: the other's rule admits the same
// traffic and is left alone. A rule with the key and no ccm description (made by hand or by an
// earlier version) admits the traffic too and is never removed.
//
// Within one cluster nodePorts are unique, so only clusters sharing a node group collide.
// Splitting goes at most maxSplit levels deep (up to 2^maxSplit rules for one range): the
// first 1+maxSplit owners of a range each hold rules of their own; further ones rely on theirs.
func claim(have, want []Rule, mine func(Rule) bool) []Rule {
	var out []Rule
	var visit func(r Rule, depth int)
	visit = func(r Rule, depth int) {
		i := slices.IndexFunc(have, func(h Rule) bool { return h.Key() == r.Key() })
		switch {
		case i < 0 || mine(have[i]):
			if !slices.ContainsFunc(out, func(o Rule) bool { return o.Key() == r.Key() }) {
				out = append(out, r)
			}
			return
		case r.CIDR != "" && depth < maxSplit:
			if _, _, isCCM := ownership.ParseDescription(have[i].Desc); isCCM {
				if a, b, ok := Halves(r.CIDR); ok {
					lo, hi := r, r
					lo.CIDR, hi.CIDR = a, b
					visit(lo, depth+1)
					visit(hi, depth+1)
					return
				}
			}
		}
		klog.V(2).InfoS("An ingress rule that is not ours already admits this traffic; leaving it alone", "rule", r.Key())
	}
	for _, r := range want {
		visit(r, 0)
	}
	return out
}

// maxSplit bounds how far claim splits a range (see there).
const maxSplit = 2

// Plan is the difference a group's sync writes: the wanted rules the group lacks, and those of
// ours (mine) it holds that are not wanted. Rules that are not ours are never in del, whatever
// their ports or sources.
func Plan(have, want []Rule, mine func(Rule) bool) (add, del []Rule) {
	want = claim(have, want, mine)
	for _, r := range want {
		if !slices.ContainsFunc(have, func(h Rule) bool { return h.Key() == r.Key() }) {
			add = append(add, r)
		}
	}
	for _, h := range have {
		if mine(h) && !slices.ContainsFunc(want, func(r Rule) bool { return r.Key() == h.Key() }) {
			del = append(del, h)
		}
	}
	return add, del
}

// After is have as writing Plan(have, want, mine) leaves it.
func After(have, want []Rule, mine func(Rule) bool) []Rule {
	add, del := Plan(have, want, mine)
	out := slices.DeleteFunc(slices.Clone(have), func(h Rule) bool {
		return slices.ContainsFunc(del, func(d Rule) bool { return d.Key() == h.Key() })
	})
	return append(out, add...)
}
