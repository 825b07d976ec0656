package aws

import (
	"strings"
	"testing"
)

func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"unknown key", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\nRegoin = x\n", "line 4: [Global] Regoin: unknown key"},
		{"bad region", "[Global]\nRegion = useast1\nKubernetesClusterID = c\n", "line 2: [Global] Region:"},
		{"bad family", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\nNodeIPFamilies = ipv5\n", "line 4: [Global] NodeIPFamilies: must be ipv4 or ipv6"},
		{"override service", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"1\"]\nService = sqs\nURL = https://x\n", `line 5: [ServiceOverride "1"] Service: "sqs" is not a service the upstream CCM or ccm calls`},
		{"override url", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"1\"]\nService = ec2\nURL = nope\n", `URL: must be an http(s) URL`},
		{"plain http endpoint", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"1\"]\nService = ec2\nURL = http://ec2.example.com\n", `line 6: [ServiceOverride "1"] URL: "http://ec2.example.com": http:// would send`},
		{"plain http sts", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"s\"]\nService = sts\nURL = http://10.0.0.1:8080\n", `line 6: [ServiceOverride "s"] URL:`},
		{"allow everything", "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\nAllowedResourceNamespaces = *\n", `line 4: [Global] AllowedResourceNamespaces:`},
		{"cluster ID with a space", "[Global]\nRegion = us-east-1\nKubernetesClusterID = \"a b\"\n", `line 3: [Global] KubernetesClusterID: "a b"`},
		{"conflicting cluster", "[Global]\nRegion = us-east-1\nKubernetesClusterID = a\nKubernetesClusterTag = b\n", "KubernetesClusterTag: differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(strings.NewReader(tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Plain http is accepted only for loopback endpoints (the fake and the simulator); https anywhere.
func TestConfigLoopbackHTTP(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:4566", "http://localhost:4566", "http://[::1]:80", "https://ec2.example.com"} {
		cfg := "[Global]\nRegion = us-east-1\nKubernetesClusterID = c\n[ServiceOverride \"1\"]\nService = ec2\nURL = " + u + "\n"
		if _, err := New(strings.NewReader(cfg)); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestConfigUpstreamFile(t *testing.T) {
	c, err := New(strings.NewReader(`[Global]
Zone = eu-west-1b
KubernetesClusterTag = legacy
VPC = vpc-1
SubnetID = subnet-1
RouteTableID = rtb-1
DisableSecurityGroupIngress = true
ElbSecurityGroup = sg-1
NodeIPFamilies = ipv6
NodeIPFamilies = ipv4
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.region() != "eu-west-1" || c.cfg.ClusterID() != "legacy" || !c.cfg.wantIPv4() || !c.cfg.wantIPv6() || !c.cfg.Global.DisableSecurityGroupIngress {
		t.Errorf("parsed %+v", c.cfg.Global)
	}
}

func TestInstanceID(t *testing.T) {
	for in, want := range map[string]string{
		"aws:///us-east-1a/i-0abc": "i-0abc",
		"aws:////i-0abc":           "i-0abc",
		"i-0abc":                   "i-0abc",
		"aws:///i-0abc":            "i-0abc",
	} {
		if got, err := instanceID(in); err != nil || got != want {
			t.Errorf("instanceID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"gce://p/z/i-1", "aws:///us-east-1a/", "aws:///us-east-1a/vm-1", ""} {
		if _, err := instanceID(bad); err == nil {
			t.Errorf("instanceID(%q) accepted", bad)
		}
	}
}
