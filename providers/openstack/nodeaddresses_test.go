package openstack

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	v1 "k8s.io/api/core/v1"
)

// novaServer is a server as Nova's API returns it (the shape the upstream CCM decodes).
func novaServer(t *testing.T, body string) *servers.Server {
	t.Helper()
	var s servers.Server
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("server JSON: %v", err)
	}
	return &s
}

// neutronPorts are ports as Neutron lists them, with trunk_details, extracted as the
// provider extracts them.
func neutronPorts(t *testing.T, list string) []serverPort {
	t.Helper()
	var body any
	if err := json.Unmarshal([]byte(`{"ports": `+list+`}`), &body); err != nil {
		t.Fatalf("ports JSON: %v", err)
	}
	page := ports.PortPage{LinkedPageBase: pagination.LinkedPageBase{PageResult: pagination.PageResult{Result: gophercloud.Result{Body: body}}}}
	var ps []serverPort
	if err := ports.ExtractPortsInto(page, &ps); err != nil {
		t.Fatalf("ports: %v", err)
	}
	return ps
}

func addrList(s string) []v1.NodeAddress {
	out := []v1.NodeAddress{}
	for _, f := range strings.Fields(s) {
		t, a, _ := strings.Cut(f, "=")
		out = append(out, v1.NodeAddress{Type: map[string]v1.NodeAddressType{"I": v1.NodeInternalIP, "E": v1.NodeExternalIP, "H": v1.NodeHostName}[t], Address: a})
	}
	return out
}

// A server shaped like upstream's test servers: two fixed IPs on "private" (one without
// OS-EXT-IPS:type) and a floating IP, two addresses on "ext-net" (v4, v6), access IPs and a
// metadata hostname.
const richServer = `{"id": "s1", "name": "node-1", "status": "ACTIVE",
 "accessIPv4": "198.51.100.99", "accessIPv6": "2001:db8:99::1",
 "metadata": {"name": "node-1", "hostname": "node-1.novalocal"},
 "addresses": {
  "private": [
   {"OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01", "version": 4, "addr": "10.0.0.32", "OS-EXT-IPS:type": "fixed"},
   {"version": 4, "addr": "198.51.100.36", "OS-EXT-IPS:type": "floating"},
   {"version": 4, "addr": "10.0.0.31"}],
  "ext-net": [
   {"version": 4, "addr": "198.51.100.35"},
   {"version": 6, "addr": "2001:db8:78::84"}]}}`

const richPorts = `[{"id": "p1", "status": "ACTIVE", "network_id": "n-private",
 "fixed_ips": [{"ip_address": "10.0.0.32"}, {"ip_address": "10.0.0.31"}]}]`

func TestNodeAddressesAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name          string
		server, ports string
		subports      map[string]ports.Port
		networks      map[string]string
		conf          string // [Networking] lines
		want          string // T=address ... in order; I internal, E external, H hostname
	}{
		{name: "no options: every network internal, floating external, hostname after access IPs",
			server: richServer, ports: richPorts,
			want: "I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 E=2001:db8:99::1 H=node-1.novalocal I=198.51.100.35 I=2001:db8:78::84 E=198.51.100.36"},
		{name: "public-network-name: its addresses are ExternalIP, after the floating IP (networks by name)",
			server: richServer, ports: richPorts, conf: "public-network-name = ext-net",
			want: "I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 E=2001:db8:99::1 H=node-1.novalocal E=198.51.100.35 E=2001:db8:78::84 E=198.51.100.36"},
		{name: "several public-network-name, one not the server's",
			server: richServer, ports: richPorts, conf: "public-network-name = other\npublic-network-name = ext-net",
			want: "I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 E=2001:db8:99::1 H=node-1.novalocal E=198.51.100.35 E=2001:db8:78::84 E=198.51.100.36"},
		{name: "a port's fixed IP on a public network is ExternalIP only, moved to its network's place",
			server: `{"id": "s1", "accessIPv4": "198.51.100.99", "addresses": {
			  "private": [{"addr": "10.0.0.32", "OS-EXT-IPS:type": "fixed"}],
			  "pub-net": [{"addr": "198.51.100.36", "OS-EXT-IPS:type": "fixed"}, {"addr": "2001:db8:78::84"}]}}`,
			ports: `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.32"}, {"ip_address": "198.51.100.36"}]}]`,
			conf:  "public-network-name = pub-net",
			want:  "I=10.0.0.32 E=198.51.100.99 E=198.51.100.36 E=2001:db8:78::84"},
		{name: "two internal networks: the others' fixed addresses dropped, floating kept",
			server: `{"id": "s1", "accessIPv4": "198.51.100.99", "accessIPv6": "2001:db8:99::1", "addresses": {
			  "private": [{"addr": "10.0.0.32", "OS-EXT-IPS:type": "fixed"}, {"addr": "198.51.100.36", "OS-EXT-IPS:type": "floating"}, {"addr": "10.0.0.31"}],
			  "also-private": [{"addr": "10.1.0.64"}],
			  "ext-net": [{"addr": "198.51.100.35"}, {"addr": "2001:db8:78::84"}]}}`,
			ports: richPorts, conf: "internal-network-name = private\ninternal-network-name = also-private",
			want: "I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 E=2001:db8:99::1 I=10.1.0.64 E=198.51.100.36"},
		{name: "one internal network: the port's addresses on another network are dropped",
			server: `{"id": "s1", "accessIPv4": "198.51.100.99", "accessIPv6": "2001:db8:99::1", "addresses": {
			  "private": [{"addr": "10.0.0.32", "OS-EXT-IPS:type": "fixed"}, {"addr": "198.51.100.36", "OS-EXT-IPS:type": "floating"}, {"addr": "10.0.0.31"}],
			  "also-private": [{"addr": "10.1.0.64"}],
			  "ext-net": [{"addr": "198.51.100.35"}, {"addr": "2001:db8:78::84"}]}}`,
			ports: richPorts, conf: "internal-network-name = also-private",
			want: "E=198.51.100.99 E=2001:db8:99::1 I=10.1.0.64 E=198.51.100.36"},
		{name: "public wins over internal for the same network",
			server: richServer, ports: richPorts, conf: "public-network-name = ext-net\ninternal-network-name = ext-net",
			want: "E=198.51.100.99 E=2001:db8:99::1 H=node-1.novalocal E=198.51.100.35 E=2001:db8:78::84 E=198.51.100.36"},
		{name: "ipv6-support-disabled: no IPv6 from ports, accessIPv6 or Nova",
			server: richServer, ports: `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.32"}, {"ip_address": "fd00::32"}, {"ip_address": "10.0.0.31"}]}]`,
			conf: "public-network-name = ext-net\nipv6-support-disabled = true",
			want: "I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 H=node-1.novalocal E=198.51.100.35 E=198.51.100.36"},
		{name: "address-sort-order: by CIDR, then by address; the hostname stays behind",
			server: richServer, ports: richPorts, conf: "public-network-name = ext-net\naddress-sort-order = 10.0.0.0/8, 198.51.100.0/24, 2001:db8::/32",
			want: "I=10.0.0.31 I=10.0.0.32 E=198.51.100.35 E=198.51.100.36 E=198.51.100.99 E=2001:db8:78::84 E=2001:db8:99::1 H=node-1.novalocal"},
		{name: "address-sort-order: unmatched keep their order after the matched; invalid items ignored",
			server: richServer, ports: richPorts, conf: "address-sort-order = 2001:db8::/32 nonsense,10.0.0.0/33",
			want: "I=2001:db8:78::84 E=2001:db8:99::1 I=10.0.0.32 I=10.0.0.31 E=198.51.100.99 H=node-1.novalocal I=198.51.100.35 E=198.51.100.36"},
		{name: "address-sort-order: IPv6 first, dual-stack",
			server: `{"id": "s1", "addresses": {"private": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}, {"addr": "fd00::5", "OS-EXT-IPS:type": "fixed"}, {"addr": "172.24.4.9", "OS-EXT-IPS:type": "floating"}]}}`,
			ports:  `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.5"}, {"ip_address": "fd00::5"}]}]`, conf: "address-sort-order = fd00::/8",
			want: "I=fd00::5 I=10.0.0.5 E=172.24.4.9"},
		{name: "a non-ACTIVE port's addresses come only from Nova, after the access IPs",
			server: `{"id": "s1", "accessIPv4": "198.51.100.99", "addresses": {
			  "net-a": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}, {"addr": "172.24.4.9", "OS-EXT-IPS:type": "floating"}],
			  "net-b": [{"addr": "10.2.0.7", "OS-EXT-IPS:type": "fixed"}]}}`,
			ports: `[{"status": "DOWN", "fixed_ips": [{"ip_address": "10.0.0.5"}]}, {"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.2.0.7"}]}]`,
			want:  "I=10.2.0.7 E=198.51.100.99 I=10.0.0.5 E=172.24.4.9"},
		{name: "a non-ACTIVE port on a network that is not internal: nothing of it",
			server: `{"id": "s1", "addresses": {
			  "net-a": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}],
			  "net-b": [{"addr": "10.2.0.7", "OS-EXT-IPS:type": "fixed"}]}}`,
			ports: `[{"status": "BUILD", "fixed_ips": [{"ip_address": "10.0.0.5"}]}, {"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.2.0.7"}]}]`,
			conf:  "internal-network-name = net-b",
			want:  "I=10.2.0.7"},
		{name: "multiple networks with floating IPs: networks in name order, Nova's order within",
			server: `{"id": "s1", "addresses": {
			  "zeta": [{"addr": "10.9.0.2", "OS-EXT-IPS:type": "fixed"}, {"addr": "172.24.4.20", "OS-EXT-IPS:type": "floating"}],
			  "alpha": [{"addr": "10.1.0.2", "OS-EXT-IPS:type": "fixed"}, {"addr": "172.24.4.10", "OS-EXT-IPS:type": "floating"}]}}`,
			ports: `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.9.0.2"}]}, {"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.1.0.2"}]}]`,
			want:  "I=10.9.0.2 I=10.1.0.2 E=172.24.4.10 E=172.24.4.20"},
		{name: "an access IP that is also a floating IP is listed once, at the access IP's place",
			server: `{"id": "s1", "accessIPv4": "172.24.4.9", "addresses": {"private": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}, {"addr": "172.24.4.9", "OS-EXT-IPS:type": "floating"}]}}`,
			ports:  `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.5"}]}]`,
			want:   "I=10.0.0.5 E=172.24.4.9"},
		{name: "no ports, no metadata hostname: Nova's addresses only",
			server: `{"id": "s1", "metadata": {"name": "x"}, "addresses": {"private": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}]}}`,
			ports:  `[]`,
			want:   "I=10.0.0.5"},
		{name: "an empty internal-network-name names a network called \"\": named networks' fixed IPs dropped",
			server: richServer, ports: richPorts, conf: `internal-network-name = ""`,
			want: "E=198.51.100.99 E=2001:db8:99::1 H=node-1.novalocal E=198.51.100.36"},
		{name: "trunk subports: their fixed IPs under their network's name; unknown subport or network skipped",
			server: `{"id": "s1", "addresses": {"private": [{"addr": "10.0.0.5", "OS-EXT-IPS:type": "fixed"}]}}`,
			ports: `[{"id": "parent", "status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.5"}],
			  "trunk_details": {"trunk_id": "t1", "sub_ports": [{"port_id": "sp1", "segmentation_type": "vlan", "segmentation_id": 100},
			    {"port_id": "sp-gone"}, {"port_id": "sp2"}, {"port_id": "sp3"}, {"port_id": "sp4"}]}}]`,
			subports: map[string]ports.Port{
				"sp1": {ID: "sp1", NetworkID: "n-vlan", FixedIPs: []ports.IP{{IPAddress: "192.168.100.5"}, {IPAddress: "fd10::5"}}},
				"sp2": {ID: "sp2", NetworkID: "n-private", FixedIPs: []ports.IP{{IPAddress: "10.0.1.5"}}},
				"sp3": {ID: "sp3", NetworkID: "n-unknown", FixedIPs: []ports.IP{{IPAddress: "192.168.200.5"}}},
				"sp4": {ID: "sp4", NetworkID: "n-ext", FixedIPs: []ports.IP{{IPAddress: "203.0.113.5"}}},
			},
			networks: map[string]string{"n-vlan": "a-vlan", "n-private": "private", "n-ext": "ext-net"},
			conf:     "public-network-name = ext-net",
			want:     "I=10.0.0.5 I=192.168.100.5 I=fd10::5 E=203.0.113.5 I=10.0.1.5"},
		{name: "trunk subports with IPv6 disabled",
			server: `{"id": "s1", "addresses": {}}`,
			ports:  `[{"status": "ACTIVE", "fixed_ips": [{"ip_address": "10.0.0.5"}], "trunk_details": {"trunk_id": "t1", "sub_ports": [{"port_id": "sp1"}]}}]`,
			subports: map[string]ports.Port{
				"sp1": {ID: "sp1", NetworkID: "n-vlan", FixedIPs: []ports.IP{{IPAddress: "fd10::5"}, {IPAddress: "192.168.100.5"}}},
			},
			networks: map[string]string{"n-vlan": "vlan"},
			conf:     "ipv6-support-disabled = true",
			want:     "I=10.0.0.5 I=192.168.100.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(strings.NewReader(upstreamBase + "[Networking]\n" + tc.conf + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := nodeAddresses(novaServer(t, tc.server), neutronPorts(t, tc.ports), tc.subports, tc.networks, c.cfg.addressOpts())
			if err != nil {
				t.Fatal(err)
			}
			if want := addrList(tc.want); !slices.Equal(got, want) {
				t.Errorf("addresses\n got %v\nwant %v", got, want)
			}
		})
	}
}

// Nova's addresses in a shape upstream cannot decode either are an error, never a panic.
func TestNodeAddressesBadNovaShape(t *testing.T) {
	for _, body := range []string{
		`{"id": "s1", "addresses": {"private": "10.0.0.5"}}`,
		`{"id": "s1", "addresses": {"private": ["10.0.0.5"]}}`,
		`{"id": "s1", "addresses": {"private": [{"addr": 5}]}}`,
	} {
		if _, err := nodeAddresses(novaServer(t, body), nil, nil, nil, addressOpts{}); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
}

// Values upstream accepts but ignores are reported at start-up, not refused.
func TestNetworkingNotices(t *testing.T) {
	logged := captureNotices(t)
	c, err := New(strings.NewReader(upstreamBase + "[Networking]\naddress-sort-order = 10.0.0.0/8, 10.0.0/8\ninternal-network-name = \"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	n := c.cfg.Notices()
	if len(n) != 2 || len(*logged) != 2 ||
		!strings.Contains(n[0], "[Networking] address-sort-order: 10.0.0/8: not a CIDR, ignored") ||
		!strings.Contains(n[1], `[Networking] internal-network-name: an empty value names a network called ""`) {
		t.Errorf("notices %q", n)
	}
}

// The corpus file with upstream's documented [Networking] use loads with every value.
func TestNetworkingCorpusFile(t *testing.T) {
	captureNotices(t)
	data, err := os.ReadFile("testdata/upstream/networking-multi-nic.conf")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	o := c.cfg.addressOpts()
	if !slices.Equal(o.public, []string{"public", "provider-ext"}) || !slices.Equal(o.internal, []string{"k8s-nodes", "storage"}) ||
		len(o.sortOrder) != 3 || o.sortOrder[2].String() != "fd00::/8" || c.cfg.apiTimeout() != 30*time.Second {
		t.Errorf("options %+v, timeout %v", o, c.cfg.apiTimeout())
	}
	if n := c.cfg.Notices(); len(n) != 1 || !strings.Contains(n[0], "[Metadata] search-order: read by the upstream CCM, not used by ccm") {
		t.Errorf("notices %q", n)
	}
}
