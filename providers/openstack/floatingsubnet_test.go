package openstack

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// Upstream's precedence (pkg/openstack/loadbalancer.go: createOctaviaLoadBalancer (the class
// ahead of lbSubnetID for a public Service), getSubnetID, getNetworkID,
// getMemberSubnetID, and the floating network and floatingSubnetSpec choice in checkService),
// for every combination of a class, the Service's annotations and [LoadBalancer] setting the
// value or not.
func TestChooseNetworksAsUpstream(t *testing.T) {
	cfgAll := LBConfig{SubnetID: "cfg-sub", NetworkID: "cfg-net", MemberSubnetID: "cfg-mem", FloatingNetworkID: "cfg-fnet",
		FloatingSubnet: "cfg-*", FloatingSubnetTags: "cfg-tag"}
	clsAll := &LBClass{SubnetID: "cls-sub", NetworkID: "cls-net", MemberSubnetID: "cls-mem", FloatingNetworkID: "cls-fnet",
		FloatingSubnet: "cls-*", FloatingSubnetTags: "cls-tag"}
	annAll := map[string]string{annSubnetID: "ann-sub", annNetworkID: "ann-net", annMemberSubnetID: "ann-mem", annFloatingNetworkID: "ann-fnet",
		annFloatingSubnet: "ann-*", annFloatingSubnetTags: "ann-tag"}
	clsFrom, cfgFrom := `[LoadBalancerClass "c"]`, "[LoadBalancer]"
	sel := func(src, from string) fipSubnetSel {
		if src == "" {
			return fipSubnetSel{}
		}
		return fipSubnetSel{Pattern: src + "-*", Tags: src + "-tag", from: from}
	}
	for _, tc := range []struct {
		cls, ann, cfg bool
		// want: which source gives the VIP subnet/network of a public and of an internal
		// Service, member subnet, floating network, floating subnet
		pub, in, mem, fnet, fsub string
	}{
		{true, true, true, "cls", "ann", "ann", "cls", "cls"},
		{true, true, false, "cls", "ann", "ann", "cls", "cls"},
		{true, false, true, "cls", "cls", "cls", "cls", "cls"},
		{true, false, false, "cls", "cls", "cls", "cls", "cls"},
		{false, true, true, "ann", "ann", "ann", "ann", "ann"},
		{false, true, false, "ann", "ann", "ann", "ann", "ann"},
		{false, false, true, "cfg", "cfg", "cfg", "cfg", "cfg"},
		{false, false, false, "", "", "", "", ""},
	} {
		var cfg LBConfig
		var cls *LBClass
		ann := map[string]string{}
		if tc.cfg {
			cfg = cfgAll
		}
		if tc.cls {
			cls = clsAll
		}
		if tc.ann {
			ann = annAll
		}
		id := func(src, what string) string {
			if src == "" {
				return ""
			}
			return src + "-" + what
		}
		from := map[string]string{"cls": clsFrom, "cfg": cfgFrom, "ann": ""}
		for _, internal := range []bool{false, true} {
			got := chooseNetworks(&cfg, cls, "c", ann, internal)
			vip := tc.pub
			if internal {
				vip = tc.in
			}
			want := netChoice{subnetID: id(vip, "sub"), networkID: id(vip, "net"), memberSubnetID: id(tc.mem, "mem"), memberDefault: tc.mem == "",
				memberSubnetFrom:  map[string]string{"ann": "annotation " + annMemberSubnetID, "cls": clsFrom + " member-subnet-id", "cfg": cfgFrom + " member-subnet-id"}[tc.mem],
				svcSubnetID:       id(tc.in, "sub"),
				floatingNetworkID: id(tc.fnet, "fnet"), floatingSubnet: sel(tc.fsub, from[tc.fsub])}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("class %v, annotations %v, config %v, internal %v:\n got %+v\nwant %+v", tc.cls, tc.ann, tc.cfg, internal, got, want)
			}
		}
	}

	// The floating subnet is one unit per source: an ID wins over the same source's pattern
	// and tags; a source that sets any of the three wins whole over the next one.
	for _, tc := range []struct {
		name string
		cfg  LBConfig
		cls  *LBClass
		ann  map[string]string
		want fipSubnetSel
	}{
		{"class ID over its own pattern", LBConfig{}, &LBClass{FloatingSubnetID: "c-id", FloatingSubnet: "c-*"}, nil, fipSubnetSel{ID: "c-id", from: clsFrom}},
		{"class tags alone win over the annotation's ID", LBConfig{}, &LBClass{FloatingSubnetTags: "t"}, map[string]string{annFloatingSubnetID: "a-id"}, fipSubnetSel{Tags: "t", from: clsFrom}},
		{"a class without floating subnet: the annotations", LBConfig{}, &LBClass{SubnetID: "s"}, map[string]string{annFloatingSubnetTags: "a"}, fipSubnetSel{Tags: "a"}},
		{"annotation ID over annotation pattern", LBConfig{}, nil, map[string]string{annFloatingSubnetID: "a-id", annFloatingSubnet: "a-*"}, fipSubnetSel{ID: "a-id"}},
		{"annotation pattern over the config's ID", LBConfig{FloatingSubnetID: "g-id"}, nil, map[string]string{annFloatingSubnet: "a-*"}, fipSubnetSel{Pattern: "a-*"}},
		{"an empty annotation is unset", LBConfig{FloatingSubnetTags: "g"}, nil, map[string]string{annFloatingSubnet: ""}, fipSubnetSel{Tags: "g", from: cfgFrom}},
		{"config ID over its own tags", LBConfig{FloatingSubnetID: "g-id", FloatingSubnetTags: "g"}, nil, nil, fipSubnetSel{ID: "g-id", from: cfgFrom}},
	} {
		if got := chooseNetworks(&tc.cfg, tc.cls, "c", tc.ann, false).floatingSubnet; got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}

	// Upstream reads the floating-network-id annotation even when empty: the floating network
	// is then detected, not the config's. A class's still wins.
	empty := map[string]string{annFloatingNetworkID: ""}
	if got := chooseNetworks(&LBConfig{FloatingNetworkID: "g"}, nil, "", empty, false).floatingNetworkID; got != "" {
		t.Errorf("empty floating-network-id annotation: %q, want detection (\"\")", got)
	}
	if got := chooseNetworks(&LBConfig{FloatingNetworkID: "g"}, &LBClass{FloatingNetworkID: "c"}, "c", empty, false).floatingNetworkID; got != "c" {
		t.Errorf("class with an empty annotation: %q, want c", got)
	}
	// Members go on the config's subnet-id, not on the annotation's or class's VIP subnet,
	// unless a member-subnet-id is set somewhere; without a config subnet, on the VIP subnet.
	// memberDefault: no member-subnet-id anywhere, so members an earlier ccm put on the VIP
	// subnet are kept there (familySpecs, planPool).
	for _, tc := range []struct {
		cfg         LBConfig
		cls         *LBClass
		ann         map[string]string
		want        string
		wantDefault bool
		wantFrom    string // the setting named in errors
	}{
		{LBConfig{SubnetID: "g"}, nil, map[string]string{annSubnetID: "a"}, "g", true, "[LoadBalancer] subnet-id"},
		{LBConfig{SubnetID: "g"}, &LBClass{SubnetID: "c"}, nil, "g", true, "[LoadBalancer] subnet-id"},
		{LBConfig{}, &LBClass{SubnetID: "c"}, nil, "c", true, `[LoadBalancerClass "c"] subnet-id`},
		{LBConfig{}, nil, map[string]string{annSubnetID: "a"}, "a", true, "annotation " + annSubnetID},
		{LBConfig{SubnetID: "g", MemberSubnetID: "gm"}, nil, nil, "gm", false, "[LoadBalancer] member-subnet-id"},
		{LBConfig{SubnetID: "g", MemberSubnetID: "gm"}, &LBClass{MemberSubnetID: "cm"}, nil, "cm", false, `[LoadBalancerClass "c"] member-subnet-id`},
		{LBConfig{SubnetID: "g", MemberSubnetID: "gm"}, &LBClass{MemberSubnetID: "cm"}, map[string]string{annMemberSubnetID: "am"}, "am", false, "annotation " + annMemberSubnetID},
	} {
		if got := chooseNetworks(&tc.cfg, tc.cls, "c", tc.ann, false); got.memberSubnetID != tc.want || got.memberDefault != tc.wantDefault || !strings.Contains(got.memberSubnetFrom, tc.wantFrom) {
			t.Errorf("member subnet of config %+v, class %+v, annotations %v: %q (default %v), want %q (default %v)", tc.cfg, tc.cls, tc.ann, got.memberSubnetID, got.memberDefault, tc.want, tc.wantDefault)
		}
	}
}

// Upstream's subnetNameMatcher: "!" negates, "~" is a regular expression, else a glob; the
// leftmost match must be the whole name.
func TestSubnetNameMatcher(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"public-*", "public-a", true},
		{"public-*", "public-", true},
		{"public-*", "xpublic-a", false},
		{"public-*", "public-a/b", false}, // * does not cross "/"
		{"public-?", "public-1", true},
		{"public-?", "public-12", false},
		{"public-[ab]", "public-b", true},
		{"public-[ab]", "public-c", false},
		{"{dmz,ext}-net", "ext-net", true},
		{"{dmz,ext}-net", "int-net", false},
		{"a,b", "a,b", true},          // a comma outside braces is itself
		{"pub.net", "pubxnet", false}, // regexp characters of a glob are themselves
		{"pub.net", "pub.net", true},
		{"pub+(1)", "pub+(1)", true},
		{"public", "public", true},
		{"public", "public2", false},
		{"!public-*", "public-a", false},
		{"!public-*", "private", true},
		{"~^pub-[0-9]+$", "pub-42", true},
		{"~pub-[0-9]+", "pub-42", true},   // the leftmost match is the whole name
		{"~pub-[0-9]+", "xpub-42", false}, // found, but not the whole name
		{"~pub", "pub-1", false},
		{"~a|ab", "ab", false}, // leftmost-first: "a", not the whole name
		{"!~^pub", "pub", false},
		{"!~^pub", "priv", true},
		// An unnamed subnet matches every pattern that is not negated: no match is "", which
		// the empty name equals (upstream's test, kept).
		{"public-*", "", true},
		{"~x", "", true},
		{"!public-*", "", false},
	} {
		m, err := subnetNameMatcher(tc.pattern)
		if err != nil {
			t.Errorf("%q: %v", tc.pattern, err)
			continue
		}
		if got := m(tc.name); got != tc.want {
			t.Errorf("pattern %q, name %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"~(", "!~[", "pub[", "~a{2,1}"} {
		if _, err := subnetNameMatcher(bad); err == nil || !strings.Contains(err.Error(), "not a valid pattern") {
			t.Errorf("%q: %v, want an error", bad, err)
		}
	}
}

// The tag filters upstream sends (tweakListOpts), with Neutron's own meaning at the fake.
func TestSubnetTagFilter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want subnets.ListOpts
	}{
		{"", subnets.ListOpts{NetworkID: "n"}},
		{"a", subnets.ListOpts{NetworkID: "n", TagsAny: "a"}},
		{"a, b", subnets.ListOpts{NetworkID: "n", TagsAny: "a,b"}},
		{"a b,,c", subnets.ListOpts{NetworkID: "n", TagsAny: "a,b,c"}},
		{"&a,b", subnets.ListOpts{NetworkID: "n", Tags: "a,b"}},
		{"!a,b", subnets.ListOpts{NetworkID: "n", NotTags: "a,b"}},
		{"!&a,b", subnets.ListOpts{NetworkID: "n", NotTagsAny: "a,b"}},
		{"&!a", subnets.ListOpts{NetworkID: "n", Tags: "!a"}}, // "!" only leads
	} {
		if got := fipSubnetListOpts("n", fipSubnetSel{Tags: tc.in}); got != tc.want {
			t.Errorf("tags %q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestPickFIPSubnetsAndNotApplied(t *testing.T) {
	subs := []subnets.Subnet{{ID: "1", Name: "pub-a", CIDR: "203.0.113.0/28"}, {ID: "2", Name: "dmz", CIDR: "198.51.100.0/28"}, {ID: "3", Name: "pub-b", CIDR: "192.0.2.0/28"}}
	got, err := pickFIPSubnets(fipSubnetSel{Pattern: "pub-*"}, subs)
	if err != nil || len(got) != 2 || got[0].ID != "1" || got[1].ID != "3" {
		t.Errorf("pub-*: %v %v", got, err)
	}
	if got, _ := pickFIPSubnets(fipSubnetSel{Tags: "x"}, subs); len(got) != 3 {
		t.Errorf("tags only (filtered by Neutron): %v", got)
	}
	if _, err := pickFIPSubnets(fipSubnetSel{Pattern: "~("}, subs); err == nil || !strings.Contains(err.Error(), "annotation "+annFloatingSubnet) {
		t.Errorf("bad pattern: %v", err)
	}
	sel := fipSubnetSel{Pattern: "pub-*"}
	if msg := fipSubnetNotApplied(sel, "192.0.2.5", got); msg != "" {
		t.Errorf("an address of a picked subnet: %q", msg)
	}
	if msg := fipSubnetNotApplied(sel, "198.51.100.5", nil); msg != "" {
		t.Errorf("no subnet seen (not visible to the project) proves nothing, yet: %q", msg)
	}
	msg := fipSubnetNotApplied(sel, "198.51.100.5", got)
	for _, w := range []string{"198.51.100.5", "annotation " + annFloatingSubnet + ` "pub-*"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	cls := fipSubnetSel{Tags: "t", Pattern: "p", from: `[LoadBalancerClass "c"]`}.String()
	if cls != `[LoadBalancerClass "c"] floating-subnet "p" and [LoadBalancerClass "c"] floating-subnet-tags "t"` {
		t.Errorf("class selection named %q", cls)
	}
}

// A pattern that is not a regular expression stops the config at load, with its line.
func TestFloatingSubnetPatternConfigError(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{upstreamBase + "[LoadBalancer]\nfloating-subnet = \"~(\"\n", `line 8: [LoadBalancer] floating-subnet: "~(" is not a valid pattern`},
		{upstreamBase + "[LoadBalancerClass \"c\"]\nfloating-subnet = \"pub[\"\n", `line 8: [LoadBalancerClass "c"] floating-subnet: "pub[" is not a valid pattern`},
	} {
		if _, err := New(strings.NewReader(tc.conf)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if _, err := New(strings.NewReader(upstreamBase + "[LoadBalancer]\nfloating-subnet = \"!~^pub-[0-9]+$\"\nfloating-subnet-tags = \"!&a,b\"\n")); err != nil {
		t.Errorf("valid pattern: %v", err)
	}
}

// fipOf is the fake's floating IP with address addr.
func fipOf(t *testing.T, f *fake.Cloud, addr string) fake.FloatingIP {
	t.Helper()
	for _, x := range f.FloatingIPs() {
		if x.Address == addr {
			return x
		}
	}
	t.Fatalf("no floating IP %s among %+v", addr, f.FloatingIPs())
	return fake.FloatingIP{}
}

// floatingSubnets gives the fake's floating network four more subnets (the first full) and
// returns their IDs by name.
func floatingSubnets(f *fake.Cloud) map[string]string {
	ids := map[string]string{
		"public-full": f.AddSubnet(fake.PublicNetworkID, "public-full", "203.0.113.0/30", "ext"),
		"public-a":    f.AddSubnet(fake.PublicNetworkID, "public-a", "203.0.113.16/28", "ext"),
		"dmz-1":       f.AddSubnet(fake.PublicNetworkID, "dmz-1", "198.51.100.0/28", "dmz"),
		"public-b":    f.AddSubnet(fake.PublicNetworkID, "public-b", "192.0.2.0/28", "ext", "blue"),
	}
	f.AddFloatingIP("203.0.113.2") // public-full's only address
	return ids
}

// Through gophercloud at the fake: the floating IP comes from the subnet the config, the
// annotations or the class pick, by upstream's precedence; the first matching subnet with a
// free address (Neutron's order), and a restart writes nothing.
func TestFloatingSubnetChosenAsUpstream(t *testing.T) {
	f := newFake(t, fake.Options{})
	ids := floatingSubnets(f)
	net := "floating-network-id = " + fake.PublicNetworkID + "\n"
	for _, tc := range []struct {
		name, conf string
		ann        map[string]string
		want       string
	}{
		{"config-pattern", "floating-subnet = \"public-*\"\n", nil, "public-a"}, // public-full has no address left
		{"config-tags", "floating-subnet-tags = dmz\n", nil, "dmz-1"},
		{"config-not-tags", "floating-subnet-tags = \"!ext\"\n", nil, "dmz-1"},
		{"annotation-pattern", "floating-subnet = \"public-*\"\n", map[string]string{annFloatingSubnet: "~^public-b$"}, "public-b"},
		{"annotation-tags", "floating-subnet-tags = dmz\n", map[string]string{annFloatingSubnetTags: "&ext,blue"}, "public-b"},
		{"annotation-pattern-and-tags", "", map[string]string{annFloatingSubnet: "public-*", annFloatingSubnetTags: "blue"}, "public-b"},
		{"class", "floating-subnet = \"public-*\"\n\n[LoadBalancerClass \"dmz\"]\nfloating-subnet = \"dmz-*\"\n",
			map[string]string{annClass: "dmz", annFloatingSubnet: "public-*"}, "dmz-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb, _ := migrationCloud(t, f, trustDefault+net+tc.conf)
			ann := map[string]string{}
			for k, v := range tc.ann {
				ann[k] = v
			}
			svc := lbService(tc.name, ann)
			st := ensureUntilReady(t, lb, svc, lbNodes("10.0.0.5"))
			if got := fipOf(t, f, st.Ingress[0].IP); got.SubnetID != ids[tc.want] {
				t.Errorf("floating IP %s from subnet %s, want %s (%s)", got.Address, got.SubnetID, tc.want, ids[tc.want])
			}
			svc.Status.LoadBalancer = *st
			lb2, _ := migrationCloud(t, f, trustDefault+net+tc.conf)
			w := f.Writes()
			if st2, err := lb2.EnsureLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5")); err != nil || st2.Ingress[0].IP != st.Ingress[0].IP {
				t.Errorf("restart: %v %v", st2, err)
			}
			if n := f.Writes() - w; n != 0 {
				t.Errorf("restart wrote %d times: %s", n, f.CallSummary())
			}
		})
	}
}

// No subnet matching: an error naming the setting and its value, and nothing is created; a
// pattern that does not compile is a Warning naming the annotation, and the same.
func TestFloatingSubnetNoMatch(t *testing.T) {
	f := newFake(t, fake.Options{})
	floatingSubnets(f)
	lb, sink := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\nfloating-subnet-tags = ext\n")
	for _, tc := range []struct {
		ann  map[string]string
		want []string
	}{
		{map[string]string{annFloatingSubnet: "nothing-*"}, []string{"no subnet of floating network", "annotation " + annFloatingSubnet + ` "nothing-*"`}},
		{map[string]string{annFloatingSubnetTags: "&ext,dmz"}, []string{"annotation " + annFloatingSubnetTags + ` "&ext,dmz"`}},
		{map[string]string{annFloatingSubnet: "~("}, []string{"annotation " + annFloatingSubnet + ": ", "missing closing )"}},
	} {
		svc := lbService("nomatch", tc.ann)
		w, fips := f.Writes(), len(f.FloatingIPs())
		_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5"))
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %v lacks %q", tc.ann, err, want)
			}
		}
		if n := f.Writes() - w; n != 0 || len(f.FloatingIPs()) != fips || len(f.LoadBalancers()) != 0 {
			t.Errorf("%v: %d writes, %d load balancers: %s", tc.ann, n, len(f.LoadBalancers()), f.CallSummary())
		}
	}
	if ok, evs := sink.Await(lbService("nomatch", nil), 2*time.Second, "Warning", annFloatingSubnet, "missing closing )"); !ok {
		t.Errorf("no Warning naming the annotation with the bad pattern: %v", evs)
	}
}

// A floating IP is kept as upstream keeps it: a changed floating-subnet writes nothing and
// says so once; an upstream-made floating IP on the VIP is taken over with 0 floating IP
// writes, with the Warning only where the settings pick another subnet.
func TestFloatingSubnetKeptAsUpstream(t *testing.T) {
	f := newFake(t, fake.Options{})
	ids := floatingSubnets(f)
	lb, sink := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	svc := lbService("moved", map[string]string{annFloatingSubnet: "public-*"})
	st := ensureUntilReady(t, lb, svc, nodes)
	svc.Status.LoadBalancer = *st
	if got := fipOf(t, f, st.Ingress[0].IP); got.SubnetID != ids["public-a"] {
		t.Fatalf("floating IP from %s", got.SubnetID)
	}
	svc.Annotations[annFloatingSubnet] = "dmz-*"
	w := f.Writes()
	for range 2 {
		if st2, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil || st2.Ingress[0].IP != st.Ingress[0].IP {
			t.Fatalf("changed floating-subnet: %v %v", st2, err)
		}
	}
	if n := f.Writes() - w; n != 0 {
		t.Errorf("a changed floating-subnet wrote %d times: %s", n, f.CallSummary())
	}
	sink.Await(svc, 2*time.Second, reasonFIPSubnetNotApplied)
	var notApplied []string
	for _, e := range warnings(sink, svc) {
		if strings.Contains(e, reasonFIPSubnetNotApplied) {
			notApplied = append(notApplied, e)
		}
	}
	if len(notApplied) != 1 || !strings.Contains(notApplied[0], "annotation "+annFloatingSubnet+` "dmz-*"`) || !strings.Contains(notApplied[0], st.Ingress[0].IP) {
		t.Errorf("want one %s Warning naming the annotation and address, got %q", reasonFIPSubnetNotApplied, notApplied)
	}
	lists := f.Calls()["neutron.ListSubnets"]
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := f.Calls()["neutron.ListSubnets"] - lists; n != 0 {
		t.Errorf("the unchanged check read the subnets again (%d lists)", n)
	}

	// Takeover: upstream's floating IPs (from the network's first subnet) stay on their VIPs.
	u := seedUpstreamCluster(t, f, 0, false)
	other, same := upstreamSvc("up-other"), upstreamSvc("up-same")
	same.Annotations[annFloatingSubnet] = fake.PublicSubnetID[:len("subnet-pub")] + "*"
	var addrs []string
	for _, s := range []*v1.Service{other, same} {
		id, addr := f.SeedUpstream(toUpstream(s, u.nodes, nil))
		adoptedByUpstream(s, id, addr)
		addrs = append(addrs, addr)
	}
	before := f.Calls()
	lb2, sink2 := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\nfloating-subnet = \"public-*\"\n")
	for i, s := range []*v1.Service{other, same} {
		if st := ensureUntilReady(t, lb2, s, u.nodes); st.Ingress[0].IP != addrs[i] {
			t.Errorf("%s: address %s, want %s", s.Name, st.Ingress[0].IP, addrs[i])
		}
	}
	c := f.Calls()
	for _, op := range []string{"neutron.CreateFloatingIP", "neutron.UpdateFloatingIP", "neutron.DeleteFloatingIP", "octavia.CreateLoadBalancer"} {
		if n := c[op] - before[op]; n != 0 {
			t.Errorf("takeover: %d %s", n, op)
		}
	}
	if ok, evs := sink2.Await(other, 2*time.Second, reasonFIPSubnetNotApplied, `[LoadBalancer] floating-subnet "public-*"`); !ok {
		t.Errorf("%s: no %s Warning naming the config key: %v", other.Name, reasonFIPSubnetNotApplied, evs)
	}
	if ok, evs := sink2.Await(same, 100*time.Millisecond, reasonFIPSubnetNotApplied); ok {
		t.Errorf("%s: its floating IP is in the subnet its annotation picks, yet: %v", same.Name, evs)
	}
	// By ID too: a config floating-subnet-id naming another subnet keeps the address and says so.
	w = f.Writes()
	lb3, sink3 := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\nfloating-subnet-id = "+ids["dmz-1"]+"\n")
	if st, err := lb3.EnsureLoadBalancer(context.Background(), cluster, other, u.nodes); err != nil || st.Ingress[0].IP != addrs[0] {
		t.Errorf("floating-subnet-id: %v %v", st, err)
	}
	if n := f.Writes() - w; n != 0 {
		t.Errorf("floating-subnet-id of another subnet wrote %d times: %s", n, f.CallSummary())
	}
	if ok, evs := sink3.Await(other, 2*time.Second, reasonFIPSubnetNotApplied, `[LoadBalancer] floating-subnet-id "`+ids["dmz-1"]+`"`); !ok {
		t.Errorf("no %s Warning naming floating-subnet-id: %v", reasonFIPSubnetNotApplied, evs)
	}
}

// After a restart N Services with one selection read its subnets once; a read that fails is
// not retried at every sync (fipSubnetListFor), and the Services are still reconciled.
func TestFloatingSubnetCheckShared(t *testing.T) {
	f := newFake(t, fake.Options{})
	_ = floatingSubnets(f)
	lb, _ := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\n")
	nodes := lbNodes("10.0.0.5")
	var svcs []*v1.Service
	for _, n := range []string{"s1", "s2", "s3", "s4"} {
		svc := lbService(n, map[string]string{annFloatingSubnet: "public-*"})
		svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, nodes)
		svcs = append(svcs, svc)
	}
	lb2, sink := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\n")
	lists := f.Calls()["neutron.ListSubnets"]
	for _, svc := range svcs {
		if _, err := lb2.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.Calls()["neutron.ListSubnets"] - lists; n != 1 {
		t.Errorf("4 Services with one selection listed the subnets %d times after a restart, want 1", n)
	}

	// Subnets of the floating network ccm may not list: reconciled all the same, read once.
	lb3, _ := migrationCloud(t, f, trustDefault+"floating-network-id = "+fake.PublicNetworkID+"\n")
	f.SetFault("neutron.ListSubnets", fake.Fault{Status: 403})
	t.Cleanup(func() { f.SetFault("neutron.ListSubnets", fake.Fault{}) })
	lists = f.Calls()["neutron.ListSubnets"]
	for range 3 {
		for _, svc := range svcs {
			if _, err := lb3.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
				t.Fatalf("%s with the subnets not readable: %v", svc.Name, err)
			}
		}
	}
	if n := f.Calls()["neutron.ListSubnets"] - lists; n != 1 {
		t.Errorf("a failed list was tried %d times in 3 rounds of 4 Services, want 1", n)
	}
	for _, svc := range svcs {
		for _, e := range sink.On(svc) {
			if strings.Contains(e, reasonFIPSubnetNotApplied) {
				t.Errorf("%s: %q although its floating IP is in the subnet it picks", svc.Name, e)
			}
		}
	}
}

// trustDefault: the floating subnets these tests pick by pattern or tags are the operator's to
// give to the default namespace's Services (a pattern reaches only what an ID could).
const trustDefault = "allowed-resource-namespaces = default\n"

// floating-subnet and floating-subnet-tags pick only subnets floating-subnet-id would take:
// one the cloud config names or the operator allowed. Refused naming the annotation, before
// any write.
func TestFloatingSubnetPicksOnlyWhatAnIDWould(t *testing.T) {
	f := newFake(t, fake.Options{})
	ids := floatingSubnets(f)
	var public []string
	for name, id := range ids {
		if strings.HasPrefix(name, "public-") {
			public = append(public, id)
		}
	}
	for _, tc := range []struct {
		conf string
		ann  map[string]string
		ok   bool
	}{
		{"", map[string]string{annFloatingSubnet: "public-*"}, false},
		{"", map[string]string{annFloatingSubnetTags: "ext"}, false},
		{"", map[string]string{annFloatingSubnet: "~^public-a$"}, false},
		{"allowed-resource-ids = " + strings.Join(public, ",") + "\n", map[string]string{annFloatingSubnet: "public-*"}, true},
		{"floating-subnet-id = " + ids["public-a"] + "\n", map[string]string{annFloatingSubnet: "~^public-a$"}, true},
	} {
		lb, _ := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n"+tc.conf)
		svc := lbService("picks", tc.ann)
		w := f.Writes()
		_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5"))
		if tc.ok {
			if err != nil && !errors.Is(err, errNotCreatedYet) && !strings.Contains(err.Error(), "is PENDING") {
				t.Errorf("%v with %q: %v", tc.ann, tc.conf, err)
			}
			deleteUntilDone(t, lb, svc)
			continue
		}
		if err == nil || !errors.Is(err, reach.ErrRefused) || !strings.Contains(err.Error(), "would not take") {
			t.Errorf("%v: %v, want a refusal naming the annotation", tc.ann, err)
		}
		if n := f.Writes() - w; n != 0 {
			t.Errorf("%v: %d writes before the refusal", tc.ann, n)
		}
	}
}
