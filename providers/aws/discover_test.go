package aws

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Zone names and their regions: the upstream CCM's rule (the region is what precedes the
// zone part), which Local and Wavelength Zones need; cutting the last letter does not do.
func TestRegionOfZone(t *testing.T) {
	for zone, want := range map[string]string{
		"us-east-1a":                   "us-east-1",
		"eu-central-2b":                "eu-central-2",
		"us-gov-west-1a":               "us-gov-west-1",
		"cn-north-1a":                  "cn-north-1",
		"ap-southeast-4c":              "ap-southeast-4",
		"us-west-2-lax-1a":             "us-west-2",      // Local Zone
		"us-east-1-bos-1a":             "us-east-1",      // Local Zone
		"us-east-1-wl1-bos-wlz-1":      "us-east-1",      // Wavelength Zone
		"ap-northeast-1-wl1-nrt-wlz-1": "ap-northeast-1", // Wavelength Zone
		"us-east-1":                    "us-east-1",      // a region, which upstream accepts as Zone
	} {
		got, ok := regionOfZone(zone)
		if !ok || got != want {
			t.Errorf("regionOfZone(%q) = %q, %v; want %q", zone, got, ok, want)
		}
		c, err := New(strings.NewReader("[Global]\nZone = " + zone + "\nKubernetesClusterID = c\n"))
		if err != nil || c.cfg.region() != want {
			t.Errorf("Zone = %s: region %q, %v; want %q", zone, c.cfg.region(), err, want)
		}
	}
	for _, bad := range []string{"", "a", "1a", "useast1a", "us-east-a"} {
		if r, ok := regionOfZone(bad); ok {
			t.Errorf("regionOfZone(%q) = %q, accepted", bad, r)
		}
	}
	if _, err := New(strings.NewReader("[Global]\nZone = useast1a\nKubernetesClusterID = c\n")); err == nil || !strings.Contains(err.Error(), "line 2: [Global] Zone:") {
		t.Errorf("bad Zone: %v", err)
	}
	// Region and a Zone of another region contradict each other (upstream would go by Zone).
	_, err := New(strings.NewReader("[Global]\nRegion = us-east-1\nZone = us-west-2-lax-1a\nKubernetesClusterID = c\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3: [Global] Zone: \"us-west-2-lax-1a\" is a zone of us-west-2, not of Region us-east-1") {
		t.Errorf("Region and Zone disagree: %v", err)
	}
}

func tag(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

func TestClusterIDFromTags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tags   []types.Tag
		id     string
		legacy bool
		err    string
	}{
		{"owned", []types.Tag{tag("Name", "n"), tag("kubernetes.io/cluster/prod", "owned")}, "prod", false, ""},
		{"shared counts too", []types.Tag{tag("kubernetes.io/cluster/prod", "shared")}, "prod", false, ""},
		{"legacy", []types.Tag{tag("KubernetesCluster", "old")}, "old", true, ""},
		{"both agree", []types.Tag{tag("KubernetesCluster", "x"), tag("kubernetes.io/cluster/x", "owned")}, "x", false, ""},
		{"none", []types.Tag{tag("Name", "n"), tag("kubernetes.io/role/node", "1")}, "", false, ""},
		{"empty id", []types.Tag{tag("kubernetes.io/cluster/", "owned")}, "", false, ""},
		{"two clusters", []types.Tag{tag("kubernetes.io/cluster/a", "owned"), tag("kubernetes.io/cluster/b", "shared")}, "", false, "ambiguous"},
		{"both disagree", []types.Tag{tag("KubernetesCluster", "x"), tag("kubernetes.io/cluster/y", "owned")}, "", false, "name different clusters"},
	} {
		id, legacy, err := clusterIDFromTags(tc.tags)
		if id != tc.id || legacy != tc.legacy || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q, %v, %v; want %q, %v, error %q", tc.name, id, legacy, err, tc.id, tc.legacy, tc.err)
		}
	}
}

// noConfigEnv is what the upstream chart's Pod has instead of a cloud-config: credentials and
// endpoints from the environment (here the fake's), IMDS at metadataURL.
func noConfigEnv(t *testing.T, h *harness, metadataURL string) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	t.Setenv("AWS_ENDPOINT_URL", h.url)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadataURL)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
}

// Started as the upstream chart starts its CCM (no --cloud-config), ccm takes region and zone
// from IMDSv2 and the cluster ID from its instance's tag, and then works in that region.
func TestStartWithoutConfig(t *testing.T) {
	for _, tc := range []struct {
		name, home, zone string
		tags             map[string]string
		wantCluster      string
	}{
		{"cluster tag", "us-east-1", "us-east-1b", map[string]string{"kubernetes.io/cluster/prod": "owned", "Name": "cp-1"}, "prod"},
		{"legacy tag", "us-east-1", "us-east-1c", map[string]string{"KubernetesCluster": "old"}, "old"},
		{"local zone", "us-west-2", "us-west-2-lax-1a", map[string]string{"kubernetes.io/cluster/edge": "owned"}, "edge"},
		{"wavelength zone", "us-east-1", "us-east-1-wl1-bos-wlz-1", map[string]string{"kubernetes.io/cluster/5g": "owned"}, "5g"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessIn(t, tc.home, "unused")
			self := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: tc.zone, PrivateDNS: "ip-10-0-0-5.ec2.internal", Tags: tc.tags,
				ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{"10.0.0.5"}}}})
			md, err := h.fake.StartMetadata(self)
			if err != nil {
				t.Fatal(err)
			}
			noConfigEnv(t, h, md)
			logged := captureNotices(t)

			cloud, err := provider.New(ProviderName, "") // what ccm does without --cloud-config
			if err != nil {
				t.Fatalf("no config: %v", err)
			}
			c := cloud.(*Cloud)
			if n := c.cfg.Notices(); len(n) != 2 || len(*logged) != 2 ||
				!strings.Contains(n[0], "[Global] Region: not set: ccm reads the region and zone from the instance metadata service") ||
				!strings.Contains(n[1], "[Global] KubernetesClusterID: not set: ccm reads it at start-up from the kubernetes.io/cluster/<id>") {
				t.Errorf("start-up reports %q (logged %q)", n, *logged)
			}
			if len(h.fake.MetadataCalls()) != 0 {
				t.Fatalf("the factory asked IMDS (it must stay offline): %v", h.fake.MetadataCalls())
			}
			if err := provider.Prepare(context.Background(), ProviderName, cloud); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if r, _ := regionOfZone(tc.zone); c.cfg.region() != r || c.cfg.Global.Zone != tc.zone || c.cfg.ClusterID() != tc.wantCluster || !c.HasClusterID() {
				t.Errorf("region %q zone %q cluster %q; want %s, %s, %s", c.cfg.region(), c.cfg.Global.Zone, c.cfg.ClusterID(), r, tc.zone, tc.wantCluster)
			}
			calls := h.fake.MetadataCalls()
			if calls["PUT /latest/api/token"] == 0 || calls["401"] != 0 || calls["GET /latest/meta-data/instance-id"] != 1 {
				t.Errorf("IMDS calls %v: want IMDSv2 (a token first, no refused GET) and one instance-id", calls)
			}
			// The EC2 client is in the discovered region: it finds the instance there.
			inst, _ := c.InstancesV2()
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-1"}, Spec: v1.NodeSpec{ProviderID: "aws:///" + tc.zone + "/" + self}}
			meta, err := inst.InstanceMetadata(context.Background(), node)
			if err != nil || meta.Zone != tc.zone || meta.Region != c.cfg.region() {
				t.Errorf("InstanceMetadata = %+v, %v", meta, err)
			}
		})
	}
}

// A config with Region and KubernetesClusterID never asks IMDS; one with Region only asks it
// for the instance ID alone; a [ServiceOverride] for ec2imds points the client at the fake.
func TestDiscoveryOnlyForWhatIsMissing(t *testing.T) {
	h := newHarness(t, "full")
	self := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/found": "owned"}})
	md, err := h.fake.StartMetadata(self)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md)
	c := h.cloud(t, "")
	if err := c.Prepare(context.Background()); err != nil || len(h.fake.MetadataCalls()) != 0 {
		t.Fatalf("full config: %v, IMDS calls %v", err, h.fake.MetadataCalls())
	}

	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1") // not used: the override wins
	cfg := strings.Replace(h.cfg, "KubernetesClusterID = full\n", "", 1) + "\n[ServiceOverride \"m\"]\nService = ec2imds\nURL = " + md + "\n"
	c2, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Prepare(context.Background()); err != nil || c2.cfg.ClusterID() != "found" || c2.cfg.region() != "us-east-1" {
		t.Fatalf("cluster from tag: %v, cluster %q", err, c2.cfg.ClusterID())
	}
	calls := h.fake.MetadataCalls()
	delete(calls, "PUT /latest/api/token")
	if len(calls) != 1 || calls["GET /latest/meta-data/instance-id"] != 1 {
		t.Errorf("IMDS calls %v; want the instance ID only", calls)
	}
}

// Without IMDS or without a cluster tag, Prepare fails saying what to set instead.
func TestDiscoveryErrors(t *testing.T) {
	h := newHarness(t, "errs")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	noConfigEnv(t, h, closed)
	c, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Prepare(context.Background())
	for _, want := range []string{"the cloud-config does not set [Global] Region (or Zone) and KubernetesClusterID",
		"instance metadata service (IMDSv2 at " + closed + ")", "when ccm does not run on an EC2 instance", "HttpPutResponseHopLimit"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("IMDS unreachable: %v\nwant %q", err, want)
		}
	}
	if c.HasClusterID() {
		t.Error("HasClusterID after a failed discovery")
	}

	untagged := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"Name": "cp"}})
	md, err := h.fake.StartMetadata(untagged)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md)
	c, err = New(nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Prepare(context.Background())
	for _, want := range []string{"does not set [Global] KubernetesClusterID", "instance " + untagged + " (where ccm runs) has neither a kubernetes.io/cluster/<id> tag nor a KubernetesCluster tag",
		"Set KubernetesClusterID"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no cluster tag: %v\nwant %q", err, want)
		}
	}
}
