package poollb

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/ownership"
)

type advised []string

func (a *advised) Event(svc *v1.Service, typ, reason, msg string) {
	*a = append(*a, fmt.Sprintf("event %s/%s %s", svc.Namespace, svc.Name, reason))
}

func (a *advised) Advise(svc *v1.Service, reason, msg string) {
	*a = append(*a, fmt.Sprintf("advise %s/%s %s %s", svc.Namespace, svc.Name, reason, msg))
}

func TestStranded(t *testing.T) {
	pools := []*ippool.Pool{
		pool(t, "main", ippool.Config{Range: []string{"192.0.2.10-192.0.2.12"}}),
		pool(t, "team", ippool.Config{Range: []string{"198.51.100.1-198.51.100.2"}, Namespace: []string{"team"}}),
	}
	hs := []Holding{
		{Namespace: "ns", Name: "kept", Addrs: addrs("192.0.2.10")},
		{Namespace: "ns", Name: "gone", Addrs: addrs("192.0.2.10", "192.0.2.99", "2001:db8::1")},
		{Namespace: "team", Name: "main-only", Addrs: addrs("192.0.2.11")}, // team is served by its own pool only
		{Namespace: "team", Name: "own", Addrs: addrs("198.51.100.2")},
		{Namespace: "ns", Name: "other-team", Addrs: addrs("198.51.100.1")},
	}
	got := fmt.Sprint(Stranded(pools, hs))
	want := "[{ns gone  [192.0.2.99 2001:db8::1]} {team main-only  [192.0.2.11]} {ns other-team  [198.51.100.1]}]"
	if got != want {
		t.Errorf("stranded %s\nwant %s", got, want)
	}
	var rec advised
	if n := WarnStranded(&rec, pools, hs); n != 3 || len(rec) != 3 || rec[0] != "advise ns/gone "+ReasonOutsidePools+" "+OutsideMessage("ns", addrs("192.0.2.99", "2001:db8::1")) {
		t.Errorf("warned %d: %q", n, rec)
	}
}

// A record is a holding only when its tags make it a Service's of the cluster asked about.
func TestHoldingOf(t *testing.T) {
	tags := ownership.Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "u1"}.Tags()
	h, ok := HoldingOf("prod", tags, []string{"::ffff:192.0.2.7", "2001:db8::1"})
	if !ok || h.Namespace != "shop" || h.Name != "web" || h.UID != "u1" || len(h.Addrs) != 2 || h.Addrs[0].String() != "192.0.2.7" {
		t.Errorf("HoldingOf = %+v, %v", h, ok)
	}
	if _, ok := HoldingOf("staging", tags, []string{"192.0.2.7"}); ok {
		t.Errorf("another cluster's record taken for a holding")
	}
	if _, ok := HoldingOf("prod", map[string]string{}, []string{"192.0.2.7"}); ok {
		t.Errorf("an untagged record taken for a holding")
	}
}
