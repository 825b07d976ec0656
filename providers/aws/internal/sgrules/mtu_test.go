package sgrules

import (
	"slices"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
)

// description is the description package aws gives a Service's rule of role (its ruleDescription,
// at EC2's limit of 255 characters).
func description(id ownership.Identity, role string) string {
	return ownership.Description(id, role, 255)
}

// The MTU rules a node group should hold, from its client rules, and which MTU rules may go.
func TestNLBMTURules(t *testing.T) {
	const cluster = "prod"
	svcA := ownership.Identity{Cluster: cluster, Namespace: "ns", Name: "a", UID: "uid-a"}
	svcB := ownership.Identity{Cluster: cluster, Namespace: "ns", Name: "b", UID: "uid-b"}
	other := ownership.Identity{Cluster: "staging", Namespace: "ns", Name: "a", UID: "uid-o"}
	client := func(id ownership.Identity, proto, cidr string) Rule {
		return Rule{Proto: proto, From: 30080, To: 30080, CIDR: cidr, Desc: description(id, "client")}
	}
	ours := MTUDescription(cluster)
	upClient := Rule{Proto: "tcp", From: 30081, To: 30081, CIDR: "0.0.0.0/0", Desc: "kubernetes.io/rule/nlb/client=a6f1c0002"}
	upMTU := mtuRule("0.0.0.0/0", upstreamNLBMTUDescription)
	for _, tc := range []struct {
		name     string
		rules    []Rule
		want     []Rule
		mine     []Rule // MTU rules of the group that may be revoked
		notMine  []Rule
		add, del []Rule // the plan for a group holding rules
	}{
		{name: "one range of one NLB", rules: []Rule{client(svcA, "tcp", "0.0.0.0/0")},
			want: []Rule{mtuRule("0.0.0.0/0", ours)}, add: []Rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "one rule per range, whatever the ports, protocols and Services",
			rules: []Rule{client(svcA, "tcp", "10.0.0.0/8"), client(svcA, "udp", "10.0.0.0/8"), client(svcB, "tcp", "10.0.0.0/8"), client(svcB, "tcp", "192.0.2.0/24")},
			want:  []Rule{mtuRule("10.0.0.0/8", ours), mtuRule("192.0.2.0/24", ours)}, add: []Rule{mtuRule("10.0.0.0/8", ours), mtuRule("192.0.2.0/24", ours)}},
		{name: "IPv6 ranges get none, as upstream (IpRanges only)",
			rules: []Rule{client(svcA, "tcp", "2001:db8::/32"), client(svcA, "tcp", "192.0.2.0/24")},
			want:  []Rule{mtuRule("192.0.2.0/24", ours)}, add: []Rule{mtuRule("192.0.2.0/24", ours)}},
		{name: "health rules are not client rules",
			rules: []Rule{{Proto: "tcp", From: 32100, To: 32100, CIDR: "10.0.1.0/24", Desc: description(svcA, "health")}}},
		{name: "upstream's client rule not yet taken over keeps the range",
			rules: []Rule{upClient}, want: []Rule{mtuRule("0.0.0.0/0", ours)}, add: []Rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "another cluster's client rule is not this cluster's",
			rules: []Rule{client(other, "tcp", "0.0.0.0/0")}},
		{name: "upstream's MTU rule taken over while a client rule admits its range: no write",
			rules: []Rule{client(svcA, "tcp", "0.0.0.0/0"), upMTU},
			want:  []Rule{mtuRule("0.0.0.0/0", ours)}, notMine: []Rule{upMTU}},
		{name: "upstream's MTU rule kept for another cluster's NLB",
			rules: []Rule{client(other, "tcp", "0.0.0.0/0"), upMTU}, notMine: []Rule{upMTU}},
		{name: "upstream's MTU rule without a client rule of its range goes",
			rules: []Rule{client(svcA, "tcp", "10.0.0.0/8"), upMTU},
			want:  []Rule{mtuRule("10.0.0.0/8", ours)}, mine: []Rule{upMTU},
			add: []Rule{mtuRule("10.0.0.0/8", ours)}, del: []Rule{upMTU}},
		{name: "ccm's MTU rule without a client rule goes; a user's, another cluster's, an IPv6 one stay",
			rules: []Rule{mtuRule("0.0.0.0/0", ours), mtuRule("10.0.0.0/8", ""), mtuRule("192.0.2.0/24", MTUDescription("staging")),
				{Proto: "icmp", From: 3, To: 4, Group: "sg-1", Desc: ours}, {Proto: "tcp", From: 3, To: 4, CIDR: "0.0.0.0/0", Desc: upstreamNLBMTUDescription}},
			mine:    []Rule{mtuRule("0.0.0.0/0", ours)},
			notMine: []Rule{mtuRule("10.0.0.0/8", ""), mtuRule("192.0.2.0/24", MTUDescription("staging")), {Proto: "icmp", From: 3, To: 4, Group: "sg-1", Desc: ours}, {Proto: "tcp", From: 3, To: 4, CIDR: "0.0.0.0/0", Desc: upstreamNLBMTUDescription}},
			del:     []Rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "ccm's MTU rule there: no write",
			rules: []Rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", ours)},
			want:  []Rule{mtuRule("0.0.0.0/0", ours)}, mine: []Rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "another cluster's MTU rule holds the range: ours as its halves, as client rules",
			rules: []Rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", MTUDescription("staging"))},
			want:  []Rule{mtuRule("0.0.0.0/0", ours)}, notMine: []Rule{mtuRule("0.0.0.0/0", MTUDescription("staging"))},
			add: []Rule{mtuRule("0.0.0.0/1", ours), mtuRule("128.0.0.0/1", ours)}},
		{name: "client rules split into halves beside the range they halve: one rule, for the range",
			rules: []Rule{client(other, "tcp", "0.0.0.0/0"), client(svcA, "tcp", "0.0.0.0/1"), client(svcA, "tcp", "128.0.0.0/1"), client(svcA, "tcp", "0.0.0.0/0")},
			want:  []Rule{mtuRule("0.0.0.0/0", ours)}, add: []Rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "ccm's MTU rules of the halves go once the range has its own",
			rules: []Rule{client(svcA, "tcp", "0.0.0.0/1"), client(svcA, "tcp", "128.0.0.0/1"), client(svcA, "tcp", "0.0.0.0/0"),
				mtuRule("0.0.0.0/1", ours), mtuRule("128.0.0.0/1", ours)},
			want: []Rule{mtuRule("0.0.0.0/0", ours)}, mine: []Rule{mtuRule("0.0.0.0/1", ours)},
			add: []Rule{mtuRule("0.0.0.0/0", ours)}, del: []Rule{mtuRule("0.0.0.0/1", ours), mtuRule("128.0.0.0/1", ours)}},
		{name: "a range inside another gets none; disjoint and IPv6 ranges are not covered",
			rules: []Rule{client(svcA, "tcp", "10.0.0.0/8"), client(svcB, "udp", "10.1.0.0/16"), client(svcB, "tcp", "11.0.0.0/16"), client(svcA, "tcp", "::/0")},
			want:  []Rule{mtuRule("10.0.0.0/8", ours), mtuRule("11.0.0.0/16", ours)}, add: []Rule{mtuRule("10.0.0.0/8", ours), mtuRule("11.0.0.0/16", ours)}},
		{name: "a user's rule already admitting the range: left alone, nothing added",
			rules: []Rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", "")},
			want:  []Rule{mtuRule("0.0.0.0/0", ours)}, notMine: []Rule{mtuRule("0.0.0.0/0", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, mine := NLBMTURules(cluster, tc.rules)
			if !slices.Equal(want, tc.want) {
				t.Errorf("want %v, expected %v", want, tc.want)
			}
			for _, r := range tc.mine {
				if !mine(r) {
					t.Errorf("%v (%q) is not taken as ours", r.Text(), r.Desc)
				}
			}
			for _, r := range tc.notMine {
				if mine(r) {
					t.Errorf("%v (%q) is taken as ours", r.Text(), r.Desc)
				}
			}
			add, del := Plan(tc.rules, want, mine)
			if !slices.Equal(add, tc.add) || !slices.Equal(del, tc.del) {
				t.Errorf("plan: add %v del %v, expected add %v del %v", add, del, tc.add, tc.del)
			}
		})
	}
	if d := MTUDescription(cluster); d != "ccm:prod - - nlb-mtu" || ownership.DescribedBy(svcA, d) {
		t.Errorf("ccm's MTU rule description %q: want the cluster's, no Service's", d)
	}
}
