package openstack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/ccm-project/ccm/common/ownership"
)

const (
	testLBName  = "kube_service_c1_ns_web"
	otherLBName = "kube_service_c1_ns_api"
)

func tagged(l listeners.Listener, tags ...string) listeners.Listener { l.Tags = tags; return l }

func TestPlanListeners(t *testing.T) {
	id := ownership.Identity{Cluster: "c1", Namespace: "ns", Name: "web", UID: "u1"}
	other := ownership.Identity{Cluster: "c1", Namespace: "ns", Name: "api", UID: "u2"}
	l80 := listenerSpec{Protocol: "TCP", Port: 80, NodePort: 30080, PoolProtocol: "TCP", Method: "ROUND_ROBIN"}
	l443 := listenerSpec{Protocol: "TCP", Port: 443, NodePort: 30443, PoolProtocol: "TCP", Method: "ROUND_ROBIN"}
	l80b := l80
	l80b.NodePort = 31080 // the spec changed: another fingerprint
	lis := func(lid string, ls listenerSpec, desc, pool string) listeners.Listener {
		return listeners.Listener{ID: lid, Protocol: ls.Protocol, ProtocolPort: ls.Port, Description: desc, DefaultPoolID: pool}
	}
	pool := func(pid, desc, method string, withListener bool) pools.Pool {
		p := pools.Pool{ID: pid, Description: desc, Protocol: "TCP", LBMethod: method}
		if withListener {
			p.Listeners = []pools.ListenerID{{ID: "x"}}
		}
		return p
	}
	named := func(p pools.Pool, ls listenerSpec) pools.Pool { p.Name = "pool_" + ls.name(); return p }
	// up names a listener as the upstream CCM does; hand as a user would.
	up := func(h listeners.Listener, i int) listeners.Listener {
		h.Name = fmt.Sprintf("listener_%d_%s", i, testLBName)
		return h
	}
	hand := func(h listeners.Listener, name string) listeners.Listener { h.Name = name; return h }
	inState := func(h listeners.Listener, st string) listeners.Listener { h.ProvisioningStatus = st; return h }
	l80proxy := l80
	l80proxy.PoolProtocol = "PROXY"
	d80, d443 := listenerDescription(id, l80), listenerDescription(id, l443)
	type want struct {
		keep, relabel, del, delPools, create, reuse []string // listener IDs / pool IDs / keys / pool IDs
		left                                        []string // listener IDs
		delWithPool                                 []bool
		repairs                                     []string
		specChanged                                 bool
		err                                         string
	}
	for _, tc := range []struct {
		name    string
		spec    []listenerSpec
		have    []listeners.Listener
		pools   []pools.Pool
		adopted bool
		want    want
	}{
		{"unchanged: kept", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1")}, []pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false,
			want{keep: []string{"L1"}}},
		{"a port added: created, the spec's change", []listenerSpec{l80, l443}, []listeners.Listener{lis("L1", l80, d80, "P1")}, []pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false,
			want{keep: []string{"L1"}, create: []string{"TCP/443"}, specChanged: true}},
		{"a port removed: deleted with its pool", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1"), lis("L2", l443, d443, "P2")},
			[]pools.Pool{pool("P1", d80, "ROUND_ROBIN", true), pool("P2", d443, "ROUND_ROBIN", true)}, false,
			want{keep: []string{"L1"}, del: []string{"L2"}, delWithPool: []bool{true}}},
		{"the spec changed in what Octavia updates: updated in place", []listenerSpec{l80b}, []listeners.Listener{lis("L1", l80, d80, "P1")}, []pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false,
			want{relabel: []string{"L1"}, specChanged: true}},
		{"the pool's protocol changed (Octavia cannot): replaced", []listenerSpec{l80proxy}, []listeners.Listener{lis("L1", l80, d80, "P1")}, []pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false,
			want{del: []string{"L1"}, delWithPool: []bool{true}, create: []string{"TCP/80"}, specChanged: true}},
		{"a listener in ERROR: replaced, a repair", []listenerSpec{l80}, []listeners.Listener{inState(lis("L1", l80, d80, "P1"), "ERROR")}, []pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false,
			want{del: []string{"L1"}, delWithPool: []bool{true}, create: []string{"TCP/80"}, repairs: []string{"listener TCP/80 was in ERROR; replaced"}}},
		{"listener deleted out of band: it comes back on its pool, a repair", []listenerSpec{l80}, nil, []pools.Pool{named(pool("P1", d80, "ROUND_ROBIN", false), l80)}, false,
			want{create: []string{"TCP/80"}, reuse: []string{"P1"}, repairs: []string{"listener TCP/80 was deleted"}}},
		{"listener deleted out of band, its pool's protocol no longer wanted: the pool goes", []listenerSpec{l80proxy}, nil, []pools.Pool{named(pool("P1", d80, "ROUND_ROBIN", false), l80)}, false,
			want{delPools: []string{"P1"}, create: []string{"TCP/80"}, specChanged: true}},
		{"a pool of the Service without a listener and of no wanted one: deleted", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1")},
			[]pools.Pool{pool("P1", d80, "ROUND_ROBIN", true), named(pool("P2", d443, "ROUND_ROBIN", false), l443)}, false,
			want{keep: []string{"L1"}, delPools: []string{"P2"}}},
		{"another Service's pool without a listener is left alone", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1")},
			[]pools.Pool{pool("P1", d80, "ROUND_ROBIN", true), pool("P9", listenerDescription(other, l80), "ROUND_ROBIN", false)}, false,
			want{keep: []string{"L1"}}},
		{"another Service's listener on a wanted port: refused", []listenerSpec{l80}, []listeners.Listener{lis("L9", l80, listenerDescription(other, l80), "P9")}, nil, false,
			want{err: "taken by a listener it does not own"}},
		{"another Service's listener elsewhere: left alone", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1"), lis("L9", l443, listenerDescription(other, l443), "P9")},
			[]pools.Pool{pool("P1", d80, "ROUND_ROBIN", true)}, false, want{keep: []string{"L1"}}},
		{"adopted: a foreign listener on a wanted port is refused", []listenerSpec{l80}, []listeners.Listener{lis("L9", l80, "", "P9")}, nil, true,
			want{err: "named by annotation"}},
		{"adopted: a foreign listener elsewhere is left alone", []listenerSpec{l80}, []listeners.Listener{lis("L9", l443, "", "P9")}, nil, true,
			want{create: []string{"TCP/80"}, specChanged: true}},
		{"adopted: our listener with a pool not proven ours goes without the pool", nil, []listeners.Listener{lis("L1", l80, d80, "P9")},
			[]pools.Pool{pool("P9", "", "ROUND_ROBIN", true)}, true, want{del: []string{"L1"}, delWithPool: []bool{false}}},
		{"an earlier ccm's listener with the same fingerprint: relabelled", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, legacyListenerPrefix+l80.fingerprint(), "P1")},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"an earlier ccm's listener with another fingerprint: relabelled, updated in place", []listenerSpec{l80b}, []listeners.Listener{lis("L1", l80, legacyListenerPrefix+l80.fingerprint(), "P1")},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"an earlier ccm's listener with another pool protocol: replaced", []listenerSpec{l80proxy}, []listeners.Listener{lis("L1", l80, legacyListenerPrefix+l80.fingerprint(), "P1")},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{del: []string{"L1"}, delWithPool: []bool{true}, create: []string{"TCP/80"}, specChanged: true}},
		{"the upstream CCM's listener with the wanted pool: relabelled", []listenerSpec{l80}, []listeners.Listener{up(lis("L1", l80, "", "P1"), 0)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"the upstream CCM's listener by its tag: relabelled", []listenerSpec{l80}, []listeners.Listener{tagged(lis("L1", l80, "", "P1"), testLBName)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"the upstream CCM's listener by its early name: relabelled", []listenerSpec{l80}, []listeners.Listener{hand(lis("L1", l80, "", "P1"), "listener_"+testLBName+"_0")},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"an earlier ccm's listener by its name, the description lost: relabelled", []listenerSpec{l80}, []listeners.Listener{hand(lis("L1", l80, "", "P1"), l80.name())},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"the upstream CCM's listener no longer wanted: deleted", nil, []listeners.Listener{up(lis("L1", l80, "", "P1"), 0)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true)}, false, want{del: []string{"L1"}, delWithPool: []bool{true}}},
		{"a hand-made listener elsewhere: left alone, reported", []listenerSpec{l80}, []listeners.Listener{lis("L1", l80, d80, "P1"), hand(lis("L9", l443, "", "P9"), "users-443")},
			[]pools.Pool{pool("P1", d80, "ROUND_ROBIN", true), pool("P9", "", "ROUND_ROBIN", true)}, false, want{keep: []string{"L1"}, left: []string{"L9"}}},
		{"a hand-made listener without a name: left alone, reported", nil, []listeners.Listener{lis("L9", l443, "", "P9")},
			[]pools.Pool{pool("P9", "", "ROUND_ROBIN", true)}, false, want{left: []string{"L9"}}},
		{"a hand-made listener named like another load balancer's upstream listener: left alone", nil, []listeners.Listener{hand(lis("L9", l443, "", "P9"), "listener_0_"+otherLBName)},
			[]pools.Pool{pool("P9", "", "ROUND_ROBIN", true)}, false, want{left: []string{"L9"}}},
		{"a hand-made listener on a wanted port: refused, named", []listenerSpec{l443}, []listeners.Listener{hand(lis("L9", l443, "", "P9"), "users-443")},
			[]pools.Pool{pool("P9", "", "ROUND_ROBIN", true)}, false, want{err: `port TCP/443 of this Service's load balancer is taken by listener "users-443"`}},
		{"shared: the upstream CCM's listener of another Service (its tag) is left alone", []listenerSpec{l80}, []listeners.Listener{up(lis("L1", l80, "", "P1"), 0), tagged(lis("L9", l443, "", "P9"), otherLBName)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true), pool("P9", "", "ROUND_ROBIN", true)}, false, want{relabel: []string{"L1"}}},
		{"shared: another Service's upstream listener on a wanted port is refused", []listenerSpec{l443}, []listeners.Listener{tagged(lis("L9", l443, "", "P9"), otherLBName)},
			[]pools.Pool{pool("P9", "", "ROUND_ROBIN", true)}, false, want{err: "another Service sharing it"}},
		{"shared: our upstream listener (our tag) on the owner's load balancer is relabelled", []listenerSpec{l443}, []listeners.Listener{tagged(lis("L1", l80, "", "P1"), otherLBName), tagged(lis("L2", l443, "", "P2"), testLBName)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true), pool("P2", "", "ROUND_ROBIN", true)}, true, want{relabel: []string{"L2"}}},
		{"shared: our upstream listener no longer wanted goes with its pool", nil, []listeners.Listener{tagged(lis("L1", l80, "", "P1"), otherLBName), tagged(lis("L2", l443, "", "P2"), testLBName)},
			[]pools.Pool{pool("P1", "", "ROUND_ROBIN", true), pool("P2", "", "ROUND_ROBIN", true)}, true, want{del: []string{"L2"}, delWithPool: []bool{true}}},
		{"the upstream CCM's listener with another algorithm: replaced", []listenerSpec{l80}, []listeners.Listener{up(lis("L1", l80, "", "P1"), 0)},
			[]pools.Pool{pool("P1", "", "SOURCE_IP", true)}, false, want{del: []string{"L1"}, delWithPool: []bool{true}, create: []string{"TCP/80"}, specChanged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planListeners(id, &lbSpec{name: testLBName, listeners: tc.spec}, tc.have, tc.pools, tc.adopted)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := func(m map[string]listeners.Listener) []string {
				var out []string
				for _, h := range m {
					out = append(out, h.ID)
				}
				slices.Sort(out)
				return out
			}
			var del, delPools, create, reuse, left []string
			for _, h := range p.Left {
				left = append(left, h.ID)
			}
			var withPool []bool
			for _, d := range p.Delete {
				del, withPool = append(del, d.Listener.ID), append(withPool, d.WithPool)
			}
			for _, dp := range p.DeletePools {
				delPools = append(delPools, dp.ID)
			}
			for _, ls := range p.Create {
				create = append(create, ls.key())
				if rp, ok := p.Reuse[ls.key()]; ok {
					reuse = append(reuse, rp.ID)
				}
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"keep", ids(p.Keep), tc.want.keep}, {"relabel", ids(p.Relabel), tc.want.relabel}, {"delete", del, tc.want.del},
				{"delete pools", delPools, tc.want.delPools}, {"create", create, tc.want.create}, {"reuse", reuse, tc.want.reuse}, {"repairs", p.Repairs, tc.want.repairs}, {"left", left, tc.want.left}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if !slices.Equal(withPool, tc.want.delWithPool) {
				t.Errorf("deleted with their pool = %v, want %v", withPool, tc.want.delWithPool)
			}
			if p.SpecChanged != tc.want.specChanged {
				t.Errorf("SpecChanged = %v, want %v", p.SpecChanged, tc.want.specChanged)
			}
		})
	}
}
