package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Upstream's default pattern, on the instance types of the EC2 topology prerequisites (which
// must answer) and on types that need not (g6e and g7e have a topology but are not in it).
func TestTopologyPattern(t *testing.T) {
	re, err := topologyPattern("")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []string{
		"hpc6a.48xlarge", "hpc6id.32xlarge", "hpc7a.12xlarge", "hpc7a.96xlarge", "hpc7g.4xlarge", "hpc7g.16xlarge", "hpc8a.96xlarge",
		"p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6e-gb200.36xlarge",
		"p6-b200.48xlarge", "p6-b300.48xlarge",
		"trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge",
	} {
		if !re.MatchString(it) {
			t.Errorf("default pattern: %s should have a topology", it)
		}
	}
	for _, it := range []string{"m6g.large", "t3.large", "c3.large", "m5.large", "inf2.48xlarge", "g6e.xlarge", "g7e.48xlarge", ""} {
		if re.MatchString(it) {
			t.Errorf("default pattern: %s matched", it)
		}
	}
	// As upstream, the key replaces the default and is matched anywhere in the type.
	re, err = topologyPattern("t3.large")
	if err != nil || !re.MatchString("t3.large") || re.MatchString("trn2.48xlarge") {
		t.Errorf(`pattern "t3.large": %v; t3.large should match, trn2.48xlarge not`, err)
	}
	if re, err := topologyPattern(""); err != nil || re != defaultTopologyTypes {
		t.Errorf("empty pattern: %v, %v; want the default", re, err)
	}
	_, err = topologyPattern("p5.(48")
	if err == nil || !strings.Contains(err.Error(), "[Global] SupportedTopologyInstanceTypePattern") || !strings.Contains(err.Error(), "p5.(48") {
		t.Errorf("bad pattern: %v; want an error naming the key and the value", err)
	}
}

func ptr(s string) *string { return &s }

type apiErr string

func (e apiErr) Error() string                 { return string(e) + ": message" }
func (e apiErr) ErrorCode() string             { return string(e) }
func (e apiErr) ErrorMessage() string          { return "message" }
func (e apiErr) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// Every answer DescribeInstanceTopology can give, for a type that must have a topology and
// for one that need not: upstream's handling (topology.go in cloud-provider-aws).
func TestJudgeTopology(t *testing.T) {
	nodes := []string{"nn-1", "nn-2", "nn-3"}
	for _, tc := range []struct {
		name     string
		required bool
		listed   bool
		nodes    []string
		err      error
		layers   int
		skip     int
		fail     bool
	}{
		{"listed", true, true, nodes, nil, 3, skipNone, false},
		{"listed, not required", false, true, nodes, nil, 3, skipNone, false},
		{"listed without nodes (not running)", true, true, []string{}, nil, 0, skipNone, false},
		{"left out, required: the instance", true, false, nil, nil, 0, skipInstance, false},
		{"left out: the type", false, false, nil, nil, 0, skipType, false},
		{"region without the API", true, false, nil, apiErr("UnsupportedOperation"), 0, skipRegion, false},
		{"denied", true, false, nil, apiErr("UnauthorizedOperation"), 0, skipRegion, false},
		{"denied, not required", false, false, nil, apiErr("UnauthorizedOperation"), 0, skipRegion, false},
		{"throttled, required", true, false, nil, apiErr("RequestLimitExceeded"), 0, skipNone, true},
		{"throttled, not required", false, false, nil, apiErr("RequestLimitExceeded"), 0, skipNone, false},
		{"other error, required", true, false, nil, apiErr("InternalError"), 0, skipNone, true},
		{"other error, not required", false, false, nil, apiErr("InternalError"), 0, skipNone, false},
		{"timeout, required", true, false, nil, context.DeadlineExceeded, 0, skipNone, true},
		{"timeout, not required", false, false, nil, errors.New("connection reset"), 0, skipNone, false},
	} {
		v := judgeTopology(tc.required, tc.listed, tc.nodes, tc.err)
		if len(v.layers) != tc.layers || v.skip != tc.skip || v.fail != tc.fail {
			t.Errorf("%s: layers %d, skip %d, fail %v; want %d, %d, %v", tc.name, len(v.layers), v.skip, v.fail, tc.layers, tc.skip, tc.fail)
		}
		if (tc.err != nil || tc.skip == skipInstance) && (!v.warning && tc.skip != skipRegion || v.note == "") {
			t.Errorf("%s: no warning (%q)", tc.name, v.note)
		}
	}
}

func TestLayerLabels(t *testing.T) {
	got := layerLabels([]string{"nn-a", "nn-b", "nn-c", "nn-d"})
	want := map[string]string{
		"topology.k8s.aws/network-node-layer-1": "nn-a", "topology.k8s.aws/network-node-layer-2": "nn-b",
		"topology.k8s.aws/network-node-layer-3": "nn-c", "topology.k8s.aws/network-node-layer-4": "nn-d",
	}
	if !maps.Equal(got, want) {
		t.Errorf("layerLabels = %v, want %v", got, want)
	}
	if len(layerLabels(nil)) != 0 {
		t.Error("no nodes, labels")
	}
}

// topoNode adds an instance of type it in zone and returns a Node being initialised for it.
func topoNode(h *harness, it, zone string) (*v1.Node, string) {
	id := h.fake.AddInstance(fakeaws.Instance{Type: it, Zone: zone, PrivateDNS: fmt.Sprintf("ip-%s.ec2.internal", it),
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{"10.0.0.9"}}}})
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: v1.NodeSpec{ProviderID: "aws:///" + zone + "/" + id,
		Taints: []v1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: v1.TaintEffectNoSchedule}}}}, id
}

// wantLabels is what the fake says the instance's labels are.
func wantLabels(h *harness, id, zone string) map[string]string {
	want := map[string]string{labelZoneID: fakeaws.ZoneID(zone)}
	nodes, _ := h.fake.NetworkNodes(id)
	maps.Copy(want, layerLabels(nodes))
	return want
}

// Nodes initialised together carry topology.k8s.aws/zone-id and, where EC2 has a topology,
// the network-node-layer-N labels; the zones are read once, the topology of many instances
// in one batched call, a type without topology is not asked about again, and a Node that has
// the labels causes no call.
func TestInstanceMetadataTopologyLabels(t *testing.T) {
	h := newHarness(t, "topo")
	c := h.cloud(t, "")
	inst, _ := c.InstancesV2()
	ctx := context.Background()

	type machine struct {
		node       *v1.Node
		id, zone   string
		layers     int
		instanceTy string
	}
	var ms []machine
	for i, tc := range []struct {
		it     string
		layers int
	}{{"p5.48xlarge", 3}, {"p6-b200.48xlarge", 4}, {"trn1.32xlarge", 3}, {"g6e.xlarge", 3}, {"m5.large", 0}, {"m5.large", 0}, {"c7g.large", 0}} {
		zone := "us-east-1" + string(rune('a'+i%3))
		node, id := topoNode(h, tc.it, zone)
		ms = append(ms, machine{node, id, zone, tc.layers, tc.it})
	}
	before := h.fake.Operations()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md, err := inst.InstanceMetadata(ctx, m.node)
			if err != nil {
				t.Errorf("%s (%s): %v", m.id, m.instanceTy, err)
				return
			}
			want := wantLabels(h, m.id, m.zone)
			if len(want) != 1+m.layers || !maps.Equal(md.AdditionalLabels, want) {
				t.Errorf("%s (%s): labels %v, want %v (%d layers)", m.id, m.instanceTy, md.AdditionalLabels, want, m.layers)
			}
		}()
	}
	wg.Wait()
	ops := diffOps(before, h.fake.Operations())
	if ops["ec2:DescribeAvailabilityZones"] != 1 || ops["ec2:DescribeInstanceTopology"] != 1 {
		t.Errorf("7 Nodes initialised together: %v; want 1 DescribeAvailabilityZones and 1 DescribeInstanceTopology", ops)
	}

	// Again (a retried initialisation): zones cached, m5.large and c7g.large remembered as
	// without topology; only the instances with one are asked about.
	before = h.fake.Operations()
	for _, m := range ms {
		md, err := inst.InstanceMetadata(ctx, m.node)
		if err != nil || !maps.Equal(md.AdditionalLabels, wantLabels(h, m.id, m.zone)) {
			t.Errorf("again %s: %v, %v", m.id, md, err)
		}
	}
	ops = diffOps(before, h.fake.Operations())
	if ops["ec2:DescribeAvailabilityZones"] != 0 || ops["ec2:DescribeInstanceTopology"] != 4 {
		t.Errorf("second round, one Node at a time: %v; want 0 DescribeAvailabilityZones, 4 DescribeInstanceTopology (not for m5.large, c7g.large)", ops)
	}
	// A new m5.large is not asked about at all.
	m5, _ := topoNode(h, "m5.large", "us-east-1c")
	before = h.fake.Operations()
	if md, err := inst.InstanceMetadata(ctx, m5); err != nil || len(md.AdditionalLabels) != 1 || md.AdditionalLabels[labelZoneID] != "use1-az6" {
		t.Errorf("new m5.large: %v, %v; want only zone-id use1-az6", md, err)
	}
	if ops := diffOps(before, h.fake.Operations()); len(ops) != 0 {
		t.Errorf("new m5.large: %v; want no call (zones cached, type remembered)", ops)
	}

	// A Node that has the labels (set by upstream, or by hand) gets none and causes no call.
	labelled := ms[0].node.DeepCopy()
	labelled.Labels = map[string]string{labelZoneID: "keep", labelNetworkNodePrefix + "1": "keep"}
	before = h.fake.Operations()
	if md, err := inst.InstanceMetadata(ctx, labelled); err != nil || len(md.AdditionalLabels) != 0 {
		t.Errorf("labelled Node: %v, %v; want no labels", md, err)
	}
	if ops := diffOps(before, h.fake.Operations()); ops["ec2:DescribeInstanceTopology"] != 0 || ops["ec2:DescribeAvailabilityZones"] != 0 {
		t.Errorf("labelled Node: %v; want no topology call", ops)
	}
}

func diffOps(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 && k != "ec2:DescribeInstances" {
			out[k] = d
		}
	}
	return out
}

// 250 Nodes of a type with topology initialised together: one batch of 200 and one of 50,
// 100 IDs per call, each call paged at 20 by EC2.
func TestTopologyBatched(t *testing.T) {
	h := newHarness(t, "topobatch")
	c := h.cloud(t, "")
	inst, _ := c.InstancesV2()
	const n = 250
	nodes := make([]*v1.Node, n)
	ids := make([]string, n)
	for i := range nodes {
		nodes[i], ids[i] = topoNode(h, "trn2.48xlarge", "us-east-1b")
	}
	before := h.fake.Operations()
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md, err := inst.InstanceMetadata(context.Background(), nodes[i])
			if err != nil || !maps.Equal(md.AdditionalLabels, wantLabels(h, ids[i], "us-east-1b")) || len(md.AdditionalLabels) != 4 {
				t.Errorf("%s: %v, %v", ids[i], md, err)
			}
		}()
	}
	wg.Wait()
	ops := diffOps(before, h.fake.Operations())
	t.Logf("%d Nodes: %v", n, ops)
	// 250 IDs at 20 per page: at least 13 pages; in at most 4 chunks of 100 IDs, 15 pages.
	if got := ops["ec2:DescribeInstanceTopology"]; got < 13 || got > 16 || ops["ec2:DescribeAvailabilityZones"] != 1 {
		t.Errorf("%d Nodes: %v; want 13-16 DescribeInstanceTopology pages and 1 DescribeAvailabilityZones", n, ops)
	}
}

// Without ec2:DescribeInstanceTopology in the policy, Nodes are initialised with the zone ID
// and no layer labels, even of a type that must have a topology, and the call is not made
// again for a day.
func TestTopologyDeniedDoesNotFailInit(t *testing.T) {
	h := newHarness(t, "topodeny")
	c := h.cloud(t, "")
	inst, _ := c.InstancesV2()
	now := time.Now()
	c.topo.now = func() time.Time { return now }
	h.fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{"DescribeInstanceTopology": true}})
	p5, _ := topoNode(h, "p5.48xlarge", "us-east-1a")
	p5b, idB := topoNode(h, "p5.48xlarge", "us-east-1b")
	for _, node := range []*v1.Node{p5, p5b} {
		md, err := inst.InstanceMetadata(context.Background(), node)
		if err != nil {
			t.Fatalf("denied DescribeInstanceTopology failed the Node's initialisation: %v", err)
		}
		if len(md.AdditionalLabels) != 1 || md.AdditionalLabels[labelZoneID] == "" {
			t.Errorf("denied: labels %v, want only zone-id", md.AdditionalLabels)
		}
	}
	if n := h.fake.Operations()["ec2:DescribeInstanceTopology"]; n != 1 {
		t.Errorf("%d DescribeInstanceTopology calls, want 1 (the region remembered as denied)", n)
	}
	// A day later, with the permission granted, the labels come.
	h.fake.SetFaults(fakeaws.Faults{})
	now = now.Add(topologySkipTTL + time.Second)
	md, err := inst.InstanceMetadata(context.Background(), p5b)
	if err != nil || !maps.Equal(md.AdditionalLabels, wantLabels(h, idB, "us-east-1b")) || len(md.AdditionalLabels) != 4 {
		t.Errorf("after 24h: %v, %v", md, err)
	}
}

// Any other failure (here EC2 failing until the caller gives up) fails the initialisation of
// a type that must have a topology (the node controller retries it) and not of one that
// need not, and nothing is remembered.
func TestTopologyFailureByType(t *testing.T) {
	h := newHarness(t, "topofail")
	c := h.cloud(t, "[Global]\nSupportedTopologyInstanceTypePattern = ^g6e[.]\n")
	inst, _ := c.InstancesV2()
	g6e, _ := topoNode(h, "g6e.xlarge", "us-east-1a") // required by this pattern
	p5, _ := topoNode(h, "p5.48xlarge", "us-east-1a") // not by this pattern
	if _, err := inst.InstanceMetadata(context.Background(), p5); err != nil {
		t.Fatal(err) // zones and instances cached: below, only the topology call fails
	}
	h.fake.SetFaults(fakeaws.Faults{FailOps: map[string]bool{"DescribeInstanceTopology": true}})
	metadata := func(node *v1.Node) (map[string]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		md, err := inst.InstanceMetadata(ctx, node)
		if err != nil {
			return nil, err
		}
		return md.AdditionalLabels, nil
	}
	if _, err := metadata(g6e); err == nil {
		t.Errorf("g6e, required by its pattern, while DescribeInstanceTopology fails: no error")
	}
	if labels, err := metadata(p5); err != nil || len(labels) != 1 {
		t.Errorf("p5 outside the pattern: %v, %v; want only zone-id", labels, err)
	}
	h.fake.SetFaults(fakeaws.Faults{})
	for _, node := range []*v1.Node{g6e, p5} {
		if labels, err := metadata(node); err != nil || len(labels) != 4 {
			t.Errorf("%s once EC2 answers: %v, %v; want zone-id and 3 layers", node.Name, labels, err)
		}
	}
}

// A bad SupportedTopologyInstanceTypePattern is a config error naming the key and its line
// (check-config catches it), not a failure at the first Node.
func TestTopologyBadPattern(t *testing.T) {
	h := newHarness(t, "topobad")
	_, err := New(strings.NewReader(h.cfg + "[Global]\nSupportedTopologyInstanceTypePattern = p5.(48\n"))
	line := strings.Count(h.cfg, "\n") + 2
	if want := fmt.Sprintf("line %d: [Global] SupportedTopologyInstanceTypePattern: is not a regular expression", line); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New: %v; want %q", err, want)
	}
}

// In a region without DescribeInstanceTopology, Nodes get the zone ID (a Local Zone's too)
// and the call is made once.
func TestTopologyUnsupportedRegion(t *testing.T) {
	h := newHarness(t, "toporegion")
	url, err := h.fake.StartRegion("mx-central-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("us-east-1", "mx-central-1", h.url, url).Replace(h.cfg)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(h.events, nil)
	inst, ok := c.InstancesV2()
	if !ok {
		t.Fatal(c.init())
	}
	zones := []string{"mx-central-1a", "mx-central-1-qro-1a", "mx-central-1b"}
	var nodes []*v1.Node
	for _, zone := range zones {
		node, _ := topoNode(h, "p5.48xlarge", zone)
		nodes = append(nodes, node)
	}
	for i, zone := range zones {
		md, err := inst.InstanceMetadata(context.Background(), nodes[i])
		if err != nil || len(md.AdditionalLabels) != 1 || md.AdditionalLabels[labelZoneID] != fakeaws.ZoneID(zone) {
			t.Errorf("%s: %v, %v; want only zone-id %s", zone, md, err, fakeaws.ZoneID(zone))
		}
	}
	ops := h.fake.Operations()
	if ops["ec2:DescribeInstanceTopology"] != 1 || ops["ec2:DescribeAvailabilityZones"] != 1 {
		t.Errorf("calls %v; want 1 DescribeInstanceTopology (UnsupportedOperation, remembered) and 1 DescribeAvailabilityZones", ops)
	}
}
