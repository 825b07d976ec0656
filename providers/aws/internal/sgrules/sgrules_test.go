package sgrules

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
)

// Plan adds the wanted rules a group lacks and revokes only ours that are not wanted.
func TestPlanRules(t *testing.T) {
	own := func(r Rule) bool { return strings.HasPrefix(r.Desc, "ccm:") }
	web := Rule{Proto: "tcp", From: 80, To: 80, CIDR: "0.0.0.0/0", Desc: "ccm:me"}
	ssh := Rule{Proto: "tcp", From: 22, To: 22, CIDR: "10.0.0.0/8", Desc: "by hand"}
	for _, tc := range []struct {
		name          string
		have, want    []Rule
		nAdd, nDelete int
	}{
		{"as desired", []Rule{web, ssh}, []Rule{web}, 0, 0},
		{"revoked by hand", []Rule{ssh}, []Rule{web}, 1, 0},
		{"ours, no longer wanted", []Rule{web, ssh}, nil, 0, 1},
		{"a rule made by hand stays", []Rule{ssh}, nil, 0, 0},
	} {
		add, del := Plan(tc.have, tc.want, own)
		if len(add) != tc.nAdd || len(del) != tc.nDelete {
			t.Errorf("%s: add %v, delete %v; want %d and %d", tc.name, add, del, tc.nAdd, tc.nDelete)
		}
	}
}

// A wanted rule held by another owner's ccm rule (another cluster sharing the node group) is
// wanted as its halves, at most maxSplit levels deep; one held by a rule made by hand, from a
// group or from one address is left to that rule; our halves go once the range is free again.
func TestPlanClaims(t *testing.T) {
	us := ownership.Identity{Cluster: "prod", Namespace: "ns", Name: "web", UID: "uid-1"}
	them := ownership.Identity{Cluster: "staging", Namespace: "ns", Name: "web", UID: "uid-2"}
	mine := func(r Rule) bool { return ownership.DescribedBy(us, r.Desc) }
	r := func(id ownership.Identity, cidr string) Rule {
		return Rule{Proto: "tcp", From: 30080, To: 30080, CIDR: cidr, Desc: ownership.Description(id, "client", 255)}
	}
	byHand := func(cidr string) Rule { return Rule{Proto: "tcp", From: 30080, To: 30080, CIDR: cidr, Desc: "by hand"} }
	fromGroup := func(id ownership.Identity) Rule {
		return Rule{Proto: "tcp", From: 30080, To: 30080, Group: "sg-elb", Desc: ownership.Description(id, "elb", 255)}
	}
	for _, tc := range []struct {
		name             string
		have, want       []Rule
		wantAdd, wantDel []Rule
	}{
		{name: "free range: the rule itself", want: []Rule{r(us, "0.0.0.0/0")}, wantAdd: []Rule{r(us, "0.0.0.0/0")}},
		{name: "another cluster's rule holds the range: its halves",
			have: []Rule{r(them, "0.0.0.0/0")}, want: []Rule{r(us, "0.0.0.0/0")},
			wantAdd: []Rule{r(us, "0.0.0.0/1"), r(us, "128.0.0.0/1")}},
		{name: "another cluster holds the range and a half: the other half, and the held half's halves",
			have: []Rule{r(them, "0.0.0.0/0"), r(them, "0.0.0.0/1")}, want: []Rule{r(us, "0.0.0.0/0")},
			wantAdd: []Rule{r(us, "0.0.0.0/2"), r(us, "64.0.0.0/2"), r(us, "128.0.0.0/1")}},
		{name: "held at every level down to maxSplit: nothing more",
			have: []Rule{r(them, "0.0.0.0/0"), r(them, "0.0.0.0/1"), r(them, "128.0.0.0/1"),
				r(them, "0.0.0.0/2"), r(them, "64.0.0.0/2"), r(them, "128.0.0.0/2"), r(them, "192.0.0.0/2")},
			want: []Rule{r(us, "0.0.0.0/0")}},
		{name: "IPv6 range held: its halves",
			have: []Rule{r(them, "2001:db8::/32")}, want: []Rule{r(us, "2001:db8::/32")},
			wantAdd: []Rule{r(us, "2001:db8::/33"), r(us, "2001:db8:8000::/33")}},
		{name: "a rule made by hand admits the traffic: left alone, nothing added",
			have: []Rule{byHand("0.0.0.0/0")}, want: []Rule{r(us, "0.0.0.0/0")}},
		{name: "one address held: cannot be split",
			have: []Rule{r(them, "192.0.2.1/32")}, want: []Rule{r(us, "192.0.2.1/32")}},
		{name: "a rule from a group held: cannot be split",
			have: []Rule{fromGroup(them)}, want: []Rule{fromGroup(us)}},
		{name: "ours with another description: kept, not rewritten",
			have: []Rule{r(us, "0.0.0.0/0")}, want: []Rule{{Proto: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0", Desc: ownership.Description(us, "health", 255)}}},
		{name: "the range free again: the range, and our halves go",
			have: []Rule{r(us, "0.0.0.0/1"), r(us, "128.0.0.0/1")}, want: []Rule{r(us, "0.0.0.0/0")},
			wantAdd: []Rule{r(us, "0.0.0.0/0")}, wantDel: []Rule{r(us, "0.0.0.0/1"), r(us, "128.0.0.0/1")}},
		{name: "another's rules are never revoked", have: []Rule{r(them, "0.0.0.0/0"), byHand("10.0.0.0/8")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, del := Plan(tc.have, tc.want, mine)
			if !slices.Equal(add, tc.wantAdd) || !slices.Equal(del, tc.wantDel) {
				t.Errorf("add %v del %v, want add %v del %v", add, del, tc.wantAdd, tc.wantDel)
			}
			// After is have as the plan leaves it: planning again from there writes nothing.
			after := After(tc.have, tc.want, mine)
			if a, d := Plan(after, tc.want, mine); len(a)+len(d) > 0 {
				t.Errorf("after the plan (%v), planning again: add %v del %v", after, a, d)
			}
		})
	}
}

// halves splits a range into two that together are it, for IPv4 and IPv6.
func TestHalves(t *testing.T) {
	for in, want := range map[string][2]string{
		"0.0.0.0/0": {"0.0.0.0/1", "128.0.0.0/1"}, "192.0.2.0/24": {"192.0.2.0/25", "192.0.2.128/25"},
		"10.0.0.0/7": {"10.0.0.0/8", "11.0.0.0/8"}, "2001:db8::/32": {"2001:db8::/33", "2001:db8:8000::/33"},
	} {
		a, b, ok := Halves(in)
		if !ok || a != want[0] || b != want[1] {
			t.Errorf("Halves(%s) = %s %s %v, want %v", in, a, b, ok, want)
		}
	}
	if _, _, ok := Halves("192.0.2.1/32"); ok {
		t.Error("a single address split")
	}
}

// halves of any prefix are two prefixes one bit longer that together are exactly it.
func FuzzHalves(f *testing.F) {
	f.Add("0.0.0.0/0")
	f.Add("2001:db8::/127")
	f.Fuzz(func(t *testing.T, cidr string) {
		a, b, ok := Halves(cidr)
		p, err := netip.ParsePrefix(cidr)
		if !ok {
			if err == nil && p.Bits() < p.Addr().BitLen() {
				t.Fatalf("%q not split", cidr)
			}
			return
		}
		pa, pb := netip.MustParsePrefix(a), netip.MustParsePrefix(b)
		if pa.Bits() != p.Bits()+1 || pb.Bits() != p.Bits()+1 || pa == pb || !p.Contains(pa.Addr()) || !p.Contains(pb.Addr()) || pa.Addr() != p.Masked().Addr() {
			t.Fatalf("Halves(%q) = %s %s", cidr, a, b)
		}
	})
}
