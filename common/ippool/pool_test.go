package ippool

import (
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
