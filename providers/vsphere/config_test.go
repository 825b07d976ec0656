package vsphere

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConfigINIAndYAMLAgree(t *testing.T) {
	ini := `[Global]
user = "admin"
password = "p;#w"
port = 8443
insecure-flag = 1
datacenters = "DC0, DC1"
ip-family = "ipv6,ipv4"
soap-roundtrip-count = 3

[VirtualCenter "vc1.example.com"]

[VirtualCenter "vc2.example.com"]
user = other
password = "x"
datacenters = DC9
insecure-flag = 0

[Labels]
zone = k8s-zone
region = k8s-region

[Nodes]
internal-network-subnet-cidr = "10.0.0.0/8"
external-vm-network-name = "public"

[Pool "a"]
cidr = 192.0.2.0/28
`
	yml := `global:
  user: admin
  password: "p;#w"
  port: 8443
  insecureFlag: true
  datacenters: [DC0, DC1]
  ipFamily: [ipv6, ipv4]
  soapRoundtripCount: 3
vcenter:
  one:
    server: vc1.example.com
  vc2.example.com:
    user: other
    password: x
    datacenters: [DC9]
    insecureFlag: false
labels:
  zone: k8s-zone
  region: k8s-region
nodes:
  internalNetworkSubnetCidr: 10.0.0.0/8
  externalVmNetworkName: public
pools:
  a:
    cidr: [192.0.2.0/28]
`
	a, err := readConfig(strings.NewReader(ini))
	if err != nil {
		t.Fatalf("INI: %v", err)
	}
	b, err := readConfig(strings.NewReader(yml))
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	for _, c := range []*Config{a, b} {
		vcs := c.vcenters()
		if len(vcs) != 2 {
			t.Fatalf("vcenters %+v", vcs)
		}
		v1, v2 := vcs[0], vcs[1]
		if v1.Server != "vc1.example.com" || v1.User != "admin" || v1.Password != "p;#w" || v1.Port != "8443" || !v1.Insecure ||
			strings.Join(v1.Datacenters, "|") != "DC0|DC1" || strings.Join(v1.IPFamilies, ",") != "ipv6,ipv4" || v1.Tries != 3 {
			t.Errorf("vc1 = %+v", v1)
		}
		// insecure-flag = false under [Global] insecure-flag = true: still insecure (upstream's
		// OR), and reported.
		if v2.User != "other" || !v2.Insecure || strings.Join(v2.Datacenters, "|") != "DC9" {
			t.Errorf("vc2 = %+v", v2)
		}
		if n := c.Notices(); len(n) != 1 || !strings.Contains(n[0], `[VirtualCenter "vc2.example.com"] insecure-flag: false has no effect while [Global] insecure-flag`) {
			t.Errorf("notices = %q", n)
		}
		if c.Labels.Zone != "k8s-zone" || c.Nodes.ExternalVMNetworkName != "public" || len(c.Pool["a"].CIDR) != 1 {
			t.Errorf("labels/nodes/pools = %+v %+v %+v", c.Labels, c.Nodes, c.Pool)
		}
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"misspelled INI key", "[Global]\nserver = vc\nuser = u\npasword = \"p\"\n", `line 4: [Global] pasword: unknown key`},
		{"misspelled YAML key", "global:\n  server: vc\n  user: u\n  pasword: p\n", `line 4: pasword: unknown key`},
		{"misspelled section", "[Global]\nserver = vc\nuser = u\npassword = p\n[Node]\nexternal-vm-network-name = x\n", `unknown section`},
		{"no vCenter", "[Labels]\nzone = z\n", `no vCenter configured`},
		{"no credentials", "[Global]\nserver = vc\n", `no credentials for vCenter vc`},
		{"bad CIDR", "[Global]\nserver = vc\nuser = u\npassword = p\n[Nodes]\ninternal-network-subnet-cidr = 10.0.0.0/33\n", `line 6: [Nodes] internal-network-subnet-cidr: "10.0.0.0/33" is not a CIDR`},
		{"bad family", "[Global]\nserver = vc\nuser = u\npassword = p\nip-family = ipv5\n", `[Global] ip-family: "ipv5" is not ipv4 or ipv6`},
		{"bad port", "[Global]\nserver = vc\nuser = u\npassword = p\nport = 99999\n", `port: "99999" is not a TCP port`},
		{"bad pool", "[Global]\nserver = vc\nuser = u\npassword = p\n[Pool \"x\"]\ncidr = nope\n", `[Pool "x"] cidr`},
		{"secret half", "[Global]\nserver = vc\nsecret-name = s\n", `secret-name and secret-namespace go together`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// A YAML type error quotes the value; the value may be a password and must not show.
func TestYAMLErrorsHideValues(t *testing.T) {
	_, err := New(strings.NewReader("global:\n  server: vc\n  user: u\n  password: [hunter2]\n"))
	if err == nil {
		t.Fatal("a list as password was accepted")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the value: %v", err)
	}
}

func TestSecretCredentialsNeedNoPasswordInFile(t *testing.T) {
	c, err := New(strings.NewReader("[Global]\nsecret-name = creds\nsecret-namespace = kube-system\n[VirtualCenter \"vc\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Before Initialize there is no API client: the lookup says so instead of logging in blind.
	if _, _, err := c.conns[0].creds(); err == nil || !strings.Contains(err.Error(), "Secret kube-system/creds") {
		t.Errorf("credentials before Initialize: %v", err)
	}
	s := newSecretCreds(func(string) {})
	s.wait["kube-system/creds"] = make(chan struct{})
	close(s.wait["kube-system/creds"])
	s.apply(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "kube-system"},
		Data: map[string][]byte{"vc.username": []byte("u"), "vc.password": []byte("p")}})
	if u, p, err := s.lookup("vc", "kube-system", "creds"); err != nil || u != "u" || p != "p" {
		t.Errorf("lookup = %q %q %v", u, p, err)
	}
	if _, _, err := s.lookup("other", "kube-system", "creds"); err == nil || !strings.Contains(err.Error(), "other.username") {
		t.Errorf("lookup of a host without keys: %v", err)
	}
}

// A changed password in the Secret drops the session, so the next call logs in with it; an
// unchanged Secret (a resync) does not.
func TestSecretChangeResetsTheSession(t *testing.T) {
	var reset []string
	s := newSecretCreds(func(h string) { reset = append(reset, h) })
	sec := func(pw string) *v1.Secret {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "kube-system"},
			Data: map[string][]byte{"vc.username": []byte("u"), "vc.password": []byte(pw)}}
	}
	s.apply(sec("one"))
	s.apply(sec("one"))
	if len(reset) != 0 {
		t.Fatalf("sessions reset without a change: %v", reset)
	}
	s.apply(sec("two"))
	if len(reset) != 1 || reset[0] != "vc" {
		t.Fatalf("resets after a password change: %v, want [vc]", reset)
	}
}

// A YAML entry with no keys is a null: an error or a default, never a panic (found by
// FuzzReadConfig: "vcenter:\n  a:" crashed the factory).
func TestYAMLEmptyEntries(t *testing.T) {
	for _, src := range []string{
		"global:\n  user: u\n  password: p\nvcenter:\n  vc.example.com:\n",
		"global:\n  server: vc\n  user: u\n  password: p\npools:\n  a:\n",
	} {
		if _, err := readConfig(strings.NewReader(src)); err == nil && strings.Contains(src, "pools") {
			t.Errorf("%q: a pool without addresses was accepted", src)
		}
	}
}

// The pool settings reach the pools from the YAML config as from the INI one.
func TestPoolSettingsFromYAML(t *testing.T) {
	c, err := readConfig(strings.NewReader("global:\n  server: vc\n  user: u\n  password: p\npools:\n  a:\n    cidr: [192.0.2.0/30]\n" +
		"    skipEndAddresses: false\n    order: descending\n    autoAssign: false\n    avoidBuggyIPs: true\n" +
		"    serviceSelector: [app=web, 'tier in (a,b)']\n    priority: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Pool["a"]
	if p == nil || p.SkipEndAddresses == nil || *p.SkipEndAddresses || p.Order != "descending" || p.AutoAssign == nil || *p.AutoAssign || !p.AvoidBuggyIPs ||
		len(p.ServiceSelector) != 2 || p.ServiceSelector[1] != "tier in (a,b)" || p.Priority != 3 {
		t.Errorf("pool a = %+v", p)
	}
}
