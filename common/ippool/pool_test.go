package ippool

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestPoolParsingAndAllocation(t *testing.T) {
	p, perr := New("p", &Config{
		CIDR:     []string{"192.0.2.0/30", "2001:db8::/126"},
		Range:    []string{"198.51.100.5-198.51.100.6"},
		Reserved: []string{"198.51.100.5"},
	})
	if perr != nil {
		t.Fatal(perr.Msg)
	}
	used := map[netip.Addr]bool{}
	isUsed := func(a netip.Addr) bool { return used[a] }
	var got []string
	for {
		a, ok := p.Next(false, isUsed)
		if !ok {
			break
		}
		used[a] = true
		got = append(got, a.String())
	}
	// /30 without network and broadcast: .1 and .2; the range without the reserved .5.
	want := []string{"192.0.2.1", "192.0.2.2", "198.51.100.6"}
	if len(got) != len(want) {
		t.Fatalf("IPv4 allocations %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("IPv4 allocations %v, want %v", got, want)
		}
	}
	// IPv6 /126 keeps all four addresses.
	n := 0
	for {
		a, ok := p.Next(true, isUsed)
		if !ok {
			break
		}
		used[a] = true
		n++
	}
	if n != 4 {
		t.Errorf("IPv6 /126 gave %d addresses, want 4", n)
	}
	if s := p.Size(); s != 3+4 {
		t.Errorf("size = %v, want 7", s)
	}
	if p.Contains(netip.MustParseAddr("198.51.100.5")) {
		t.Error("reserved address is in the pool")
	}
}

func TestPoolRejects(t *testing.T) {
	for _, c := range []Config{
		{CIDR: []string{"192.0.2.0/33"}},
		{CIDR: []string{"not-a-cidr"}},
		{Range: []string{"192.0.2.9-192.0.2.1"}},
		{Range: []string{"192.0.2.1-2001:db8::1"}},
		{Range: []string{"192.0.2.1"}},
		{CIDR: []string{"192.0.2.0/28"}, Reserved: []string{"x"}},
	} {
		if _, err := New("bad", &c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

func TestHugeIPv6PoolIsCheap(t *testing.T) {
	p, _ := New("v6", &Config{CIDR: []string{"2001:db8::/64"}})
	a, ok := p.Next(true, func(netip.Addr) bool { return false })
	if !ok || a.String() != "2001:db8::" {
		t.Fatalf("got %v %v", a, ok)
	}
	if p.Size() < 1e19 {
		t.Errorf("size of a /64 = %v", p.Size())
	}
}

func FuzzConfig(f *testing.F) {
	for _, s := range []string{"192.0.2.0/28", "2001:db8::/120", "192.0.2.1-192.0.2.9", "::1-::5", "0.0.0.0/0", "bad"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, cidr, rng string) {
		p, err := New("f", &Config{CIDR: []string{cidr}, Range: []string{rng}})
		if err != nil {
			return
		}
		// Whatever parsed must hand out only addresses it contains, and never loop forever.
		for _, v6 := range []bool{false, true} {
			if a, ok := p.Next(v6, func(netip.Addr) bool { return false }); ok && !p.Contains(a) {
				t.Fatalf("handed out %v outside the pool (%q, %q)", a, cidr, rng)
			}
		}
	})
}

// allocate hands out every address of family v6 in turn.
func allocate(p *Pool, v6 bool) []string {
	used := map[netip.Addr]bool{}
	var got []string
	for {
		a, ok := p.Next(v6, func(a netip.Addr) bool { return used[a] })
		if !ok {
			return got
		}
		used[a] = true
		got = append(got, a.String())
	}
}

func TestPoolSettings(t *testing.T) {
	no, yes := false, true
	for _, c := range []struct {
		name string
		cfg  Config
		want string
		size float64
	}{
		{"default: a CIDR's ends skipped", Config{CIDR: []string{"192.0.2.0/30"}}, "[192.0.2.1 192.0.2.2]", 2},
		{"skip-end-addresses true", Config{CIDR: []string{"192.0.2.0/30"}, SkipEndAddresses: &yes}, "[192.0.2.1 192.0.2.2]", 2},
		{"skip-end-addresses false: as kube-vip-cloud-provider and MetalLB", Config{CIDR: []string{"192.0.2.0/30"}, SkipEndAddresses: &no}, "[192.0.2.0 192.0.2.1 192.0.2.2 192.0.2.3]", 4},
		{"descending", Config{CIDR: []string{"192.0.2.0/30"}, Range: []string{"198.51.100.5-198.51.100.6"}, Order: "Descending"}, "[198.51.100.6 198.51.100.5 192.0.2.2 192.0.2.1]", 4},
		{"descending without ends, a reserved address", Config{CIDR: []string{"192.0.2.0/29"}, Reserved: []string{"192.0.2.6"}, Order: "descending", SkipEndAddresses: &no}, "[192.0.2.7 192.0.2.5 192.0.2.4 192.0.2.3 192.0.2.2 192.0.2.1 192.0.2.0]", 7},
		{"auto-assign false", Config{CIDR: []string{"192.0.2.0/30"}, AutoAssign: &no}, "[]", 2},
		{"avoid-buggy-ips", Config{Range: []string{"192.0.2.254-192.0.3.1"}, AvoidBuggyIPs: true}, "[192.0.2.254 192.0.3.1]", 2},
		{"avoid-buggy-ips with a reserved buggy address", Config{Range: []string{"192.0.2.254-192.0.3.1"}, Reserved: []string{"192.0.2.255", "192.0.3.1"}, AvoidBuggyIPs: true}, "[192.0.2.254]", 1},
		{"avoid-buggy-ips over a /16", Config{CIDR: []string{"10.1.0.0/16"}, AvoidBuggyIPs: true, SkipEndAddresses: &no}, "", 65536 - 512},
	} {
		p, perr := New("p", &c.cfg)
		if perr != nil {
			t.Fatalf("%s: %v", c.name, perr)
		}
		if c.want == "" { // too large to hand out one by one
		} else if got := fmt.Sprint(allocate(p, false)); got != c.want {
			t.Errorf("%s: handed out %s, want %s", c.name, got, c.want)
		}
		if s := p.Size(); s != c.size {
			t.Errorf("%s: size %v, want %v", c.name, s, c.size)
		}
	}
	manual, _ := New("m", &Config{CIDR: []string{"192.0.2.0/30"}, AutoAssign: &no})
	if !manual.Contains(netip.MustParseAddr("192.0.2.1")) || manual.AutoAssign() {
		t.Error("an auto-assign false pool must still hold the addresses Services ask for, and say it hands none out")
	}
	buggyPool, _ := New("b", &Config{CIDR: []string{"10.1.0.0/16"}, AvoidBuggyIPs: true})
	for addr, want := range map[string]bool{"10.1.2.0": false, "10.1.2.255": false, "10.1.2.1": true} {
		if got := buggyPool.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("avoid-buggy-ips: Contains(%s) = %v, want %v", addr, got, want)
		}
	}
	if _, perr := New("o", &Config{CIDR: []string{"192.0.2.0/30"}, Order: "random"}); perr == nil || perr.Key != "order" {
		t.Errorf("order random: %v", perr)
	}
}
