package poolconvert

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/ippool"
)

// readPools parses a rendered conversion as the providers do.
func readPools(t *testing.T, ini string) map[string]*ippool.Pool {
	t.Helper()
	var cfg struct{ Pool map[string]*ippool.Config }
	if err := config.ReadINI(strings.NewReader(ini), &cfg); err != nil {
		t.Fatalf("the rendered config does not read: %v\n%s", err, ini)
	}
	out := map[string]*ippool.Pool{}
	for name, c := range cfg.Pool {
		p, perr := ippool.New(name, c)
		if perr != nil {
			t.Fatalf("pool %s: %v", name, perr)
		}
		out[name] = p
	}
	return out
}

const kubevipYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kubevip
  namespace: kube-system
data:
  cidr-global: 192.168.0.200/29
  cidr-development: 172.16.0.0/24,2001:db8:10::/120
  range-development: 172.16.1.10-172.16.1.12
  cidr-dhcp: 0.0.0.0/32
  search-order: desc
  allow-share-development: "true"
  interface-global: eth1
`

func TestFromKubeVIP(t *testing.T) {
	data, err := ReadKubeVIP(strings.NewReader(kubevipYAML))
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromKubeVIP(data)
	if err != nil {
		t.Fatal(err)
	}
	ini := Render(r, "kube-vip-cloud-provider")
	pools := readPools(t, ini)
	if len(pools) != 2 || pools["global"] == nil || pools["development"] == nil {
		t.Fatalf("pools %v from:\n%s", pools, ini)
	}
	g, d := pools["global"], pools["development"]
	// kube-vip-cloud-provider hands out a CIDR's ends (no skip-end-ips-in-cidr), highest first.
	if first, _ := g.Next(false, func(netip.Addr) bool { return false }); first.String() != "192.168.0.207" {
		t.Errorf("global's first address %v, want 192.168.0.207 (descending, ends kept)\n%s", first, ini)
	}
	for addr, want := range map[string]bool{"192.168.0.200": true, "172.16.0.0": false, "172.16.0.255": false, "172.16.0.1": true, "172.16.1.11": true} {
		p := g
		if !strings.HasPrefix(addr, "192.") {
			p = d
		}
		if got := p.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Contains(%s) = %v, want %v (kube-vip never hands out .0 or .255)", addr, got, want)
		}
	}
	if ns := d.Namespaces(); len(ns) != 1 || ns[0] != "development" {
		t.Errorf("development's namespaces %v", ns)
	}
	for _, want := range []string{"cidr-dhcp: 0.0.0.0/32", "allow-share-development", "interface-global", "range-development: kube-vip-cloud-provider never used it while cidr-global exists"} {
		if !strings.Contains(ini, "; NOTE: "+want) {
			t.Errorf("no note %q in:\n%s", want, ini)
		}
	}
	if _, err := FromKubeVIP(map[string]string{"cidr-global": "192.168.0.300/29"}); err == nil || !strings.Contains(err.Error(), "cidr-global") {
		t.Errorf("a bad CIDR: %v", err)
	}
	if data, _ := FromKubeVIP(map[string]string{"cidr-global": "192.168.0.200/29", "skip-end-ips-in-cidr": "true"}); !data.Pools[0].SkipEnds || data.Pools[0].Descending {
		t.Errorf("skip-end-ips-in-cidr true: %+v", data.Pools[0])
	}
}

const metallbYAML = `apiVersion: v1
kind: List
items:
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: production, namespace: metallb-system}
  spec:
    addresses: [192.168.10.0/24, 192.168.9.1-192.168.9.5, "fc00:f853:ccd:e799::/124", 192.168.8.8]
    avoidBuggyIPs: true
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: team-a, namespace: metallb-system}
  spec:
    addresses: [192.168.20.0/28]
    autoAssign: false
    serviceAllocation:
      priority: 50
      namespaces: [team-a]
      namespaceSelectors: [{matchLabels: {team: a}}]
      serviceSelectors:
      - matchLabels: {app: web}
      - matchExpressions: [{key: tier, operator: In, values: [edge, api]}]
- apiVersion: metallb.io/v1beta1
  kind: L2Advertisement
  metadata: {name: l2}
`

func TestFromMetalLB(t *testing.T) {
	objs, err := ReadMetalLB(strings.NewReader(metallbYAML))
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromMetalLB(objs)
	if err != nil {
		t.Fatal(err)
	}
	ini := Render(r, "MetalLB")
	pools := readPools(t, ini)
	prod, team := pools["production"], pools["team-a"]
	if prod == nil || team == nil {
		t.Fatalf("pools from:\n%s", ini)
	}
	for addr, want := range map[string]bool{"192.168.10.1": true, "192.168.10.0": false, "192.168.10.255": false, "192.168.9.3": true, "192.168.8.8": true, "fc00:f853:ccd:e799::": true} {
		if got := prod.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("production Contains(%s) = %v, want %v", addr, got, want)
		}
	}
	// Without avoidBuggyIPs MetalLB hands out a CIDR's network address: so does the pool.
	if !team.Contains(netip.MustParseAddr("192.168.20.0")) || team.AutoAssign() {
		t.Errorf("team-a: holds .0 %v, auto-assign %v; want true, false\n%s", team.Contains(netip.MustParseAddr("192.168.20.0")), team.AutoAssign(), ini)
	}
	if want := "team-a: serviceAllocation.namespaceSelectors"; !strings.Contains(ini, "; NOTE: IPAddressPool "+want) {
		t.Errorf("no note %q in:\n%s", want, ini)
	}
	// The selectors and the priority carry over: a Service of team-a labelled app=web, or
	// tier=api, is served by it (before the unrestricted production pool), one labelled
	// app=db is not.
	if team.Priority() != 50 {
		t.Errorf("team-a priority %d, want 50", team.Priority())
	}
	all := []*ippool.Pool{prod, team}
	for labels, want := range map[string]string{"app=web": "team-a", "tier=api": "team-a", "app=db": "production"} {
		k, v, _ := strings.Cut(labels, "=")
		if got := ippool.ForService(all, "team-a", map[string]string{k: v}); len(got) == 0 || got[0].Name() != want {
			t.Errorf("a team-a Service labelled %s: pools %v, want %s first", labels, got, want)
		}
	}
	if _, err := ReadMetalLB(strings.NewReader(kubevipYAML)); err == nil {
		t.Error("a file without IPAddressPools was read")
	}
	if _, err := ReadKubeVIP(strings.NewReader("kind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\nmetadata: {name: b}\n")); err == nil {
		t.Error("two ConfigMaps and none named kubevip were read")
	}
}
