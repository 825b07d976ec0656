package aws

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const testSecret = "fake-secret-Zq9W3x"

// harness is the fake EC2/ELB as the conformance suite and the unit tests see it.
type harness struct {
	fake    *fakeaws.Server
	cluster string
	cfg     string // cloud-config text
	url     string
	creds   string
	subnets []string             // the fake's own load balancer subnets, tagged for every cluster of the harness
	events  *cloudtest.EventSink // every cloud of the harness records its Service Events here

	mu  sync.Mutex
	n   int
	ids map[string]string // instance ID by private DNS name (= Node name)
	// foreign are the instances of AddForeignRoute's routes: no Node's, no cluster's.
	foreign map[string]bool
	// upstreamNLB: SeedUpstream leaves NLBs (the Services it returns ask for one), else classic ELBs.
	upstreamNLB bool
	// managedSG: upstream and ccm run with NLBSecurityGroupMode = Managed (upstream's NLBs
	// have a group of their own).
	managedSG bool
}

func newHarness(t *testing.T, cluster string) *harness {
	t.Helper()
	return newHarnessIn(t, "us-east-1", cluster)
}

// newHarnessIn is newHarness with the fake's home region (configFor stays us-east-1's).
func newHarnessIn(t *testing.T, region, cluster string) *harness {
	t.Helper()
	f := fakeaws.New(region, cluster)
	f.AddCredentials("AKIDTEST", testSecret)
	url, err := f.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDTEST\naws_secret_access_key = "+testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{fake: f, cluster: cluster, url: url, creds: creds, subnets: f.SubnetIDs(), events: cloudtest.NewEventSink()}
	h.cfg = h.configFor(cluster)
	return h
}

// configFor is the cloud-config of cluster on this fake.
// testAllowed are the certificate and bucket the tests name: only an operator can allow those
// (ccm cannot read their tags), as the cloud config of every test cloud does.
const testAllowed = "arn:aws:acm:us-east-1:1:certificate/x,arn:aws:acm:us-east-1:123456789012:certificate/mig,logs"

func (h *harness) configFor(cluster string) string {
	return fmt.Sprintf("[Global]\nRegion = us-east-1\nKubernetesClusterID = %s\nCredentialsFile = %s\nAllowedResourceIDs = "+testAllowed+"\n\n"+
		"[ServiceOverride \"1\"]\nService = ec2\nRegion = us-east-1\nURL = %s\nSigningRegion = us-east-1\n\n"+
		"[ServiceOverride \"2\"]\nService = elasticloadbalancing\nRegion = us-east-1\nURL = %s\nSigningRegion = us-east-1\n", cluster, h.creds, h.url, h.url)
}

func (h *harness) cloud(t cloudtest.T, extra string) *Cloud {
	if h.managedSG {
		extra = managedMode + extra
	}
	base := h.cfg
	if strings.Contains(extra, "AllowedResourceIDs = ") {
		// the test's own list, with the certificate and bucket every test cloud allows
		base = strings.Replace(base, "AllowedResourceIDs = "+testAllowed+"\n", "", 1)
		extra = strings.Replace(extra, "AllowedResourceIDs = ", "AllowedResourceIDs = "+testAllowed+",", 1)
	}
	c, err := New(strings.NewReader(base + extra))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.useRetry(testRetry)
	c.Initialize(h.events, nil)
	return c
}

// testRetry keeps production's attempts with a back-off of milliseconds: the checks that run
// calls into an outage (CloudErrorIsAnError) test that a failed call is an error, not how long
// the SDK waits.
var testRetry = retryPolicy{maxAttempts: defaultRetry.maxAttempts, maxBackoff: 20 * time.Millisecond}

func (h *harness) NewCloud(t cloudtest.T) cloudprovider.Interface { return h.cloud(t, "") }

// machine adds a running instance whose private DNS name is name, with two ENIs.
func (h *harness) machine(name string) (string, cloudprovider.InstanceMetadata) {
	h.mu.Lock()
	h.n++
	i := h.n
	h.mu.Unlock()

	zone := "us-east-1" + string(rune('a'+i%3))
	ip, ip2, eni2 := fmt.Sprintf("10.0.%d.%d", i/250, i%250+10), fmt.Sprintf("10.0.%d.%d", i/250, i%250+11), fmt.Sprintf("10.1.%d.%d", i/250, i%250+10)
	pub := fmt.Sprintf("203.0.113.%d", i%250+1)
	id := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: zone, PrivateDNS: name, PublicIP: pub,
		PublicDNS: "ec2-" + strings.ReplaceAll(pub, ".", "-") + ".compute.amazonaws.com",
		ENIs:      []fakeaws.ENI{{Device: 0, PrivateIPs: []string{ip, ip2}, IPv6: []string{fmt.Sprintf("2001:db8::%x", i)}}, {Device: 1, PrivateIPs: []string{eni2}}}})
	h.mu.Lock()
	if h.ids == nil {
		h.ids = map[string]string{}
	}
	h.ids[name] = id
	h.mu.Unlock()
	return id, cloudprovider.InstanceMetadata{
		ProviderID: "aws:///" + zone + "/" + id, InstanceType: "m5.large", Zone: zone, Region: "us-east-1",
		NodeAddresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeInternalIP, Address: ip2}, {Type: v1.NodeInternalIP, Address: eni2},
			{Type: v1.NodeExternalIP, Address: pub},
			{Type: v1.NodeInternalDNS, Address: name}, {Type: v1.NodeHostName, Address: name},
			{Type: v1.NodeExternalDNS, Address: "ec2-" + strings.ReplaceAll(pub, ".", "-") + ".compute.amazonaws.com"},
		},
	}
}

func (h *harness) AddInstance(_ cloudtest.T, name string) (*v1.Node, cloudprovider.InstanceMetadata) {
	_, md := h.machine(name)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, md
}

func (h *harness) BreakInstances(cloudtest.T) func() {
	h.fake.SetFaults(fakeaws.Faults{FailOps: map[string]bool{"DescribeInstances": true}})
	return func() { h.fake.SetFaults(fakeaws.Faults{}) }
}

func (h *harness) Writes() int { return h.fake.Writes() }

func (h *harness) LoadBalancerTags(_ cloudtest.T, cluster string, svc *v1.Service) (map[string]string, bool) {
	lb, ok := h.fake.ClassicLB(lbname.AWSELB.Name(cluster, svc.Namespace, svc.Name))
	return lb.Tags, ok
}

func (h *harness) MaxNameLen() int { return 32 }

func TestConformance(t *testing.T) {
	h := newHarness(t, "conformance")
	cloudtest.Run(t, cloudtest.Config{Harness: h, ClusterName: "conformance"})
}
