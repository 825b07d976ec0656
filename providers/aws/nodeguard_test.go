package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

func TestZoneRegion(t *testing.T) {
	for zone, want := range map[string]string{
		"us-east-1a": "us-east-1", "eu-west-3c": "eu-west-3", "us-west-2-lax-1a": "us-west-2",
		"us-gov-west-1b": "us-gov-west-1", "cn-north-1a": "cn-north-1", "ap-northeast-1d": "ap-northeast-1",
	} {
		if got := zoneRegion(zone); got != want {
			t.Errorf("zoneRegion(%q) = %q, want %q", zone, got, want)
		}
	}
}

func TestSameRegion(t *testing.T) {
	node := func(pid string, labels map[string]string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: v1.NodeSpec{ProviderID: pid}}
	}
	for _, tc := range []struct {
		name   string
		node   *v1.Node
		region string
		err    bool
	}{
		{"zone of providerID in region", node("aws:///us-east-1a/i-1", nil), "us-east-1", false},
		{"zone of providerID elsewhere", node("aws:///us-east-1a/i-1", nil), "us-west-2", true},
		{"bare providerID", node("aws:////i-1", nil), "us-west-2", false},
		{"no providerID, no labels", node("", nil), "us-west-2", false},
		{"region label elsewhere", node("aws:////i-1", map[string]string{v1.LabelTopologyRegion: "us-east-1"}), "us-west-2", true},
		{"beta region label elsewhere", node("", map[string]string{v1.LabelFailureDomainBetaRegion: "us-east-1"}), "us-west-2", true},
		{"zone label elsewhere", node("", map[string]string{v1.LabelTopologyZone: "us-east-1b"}), "us-west-2", true},
		{"labels in region", node("aws:///us-west-2a/i-1", map[string]string{v1.LabelTopologyRegion: "us-west-2", v1.LabelTopologyZone: "us-west-2a"}), "us-west-2", false},
		{"no configured region", node("aws:///us-east-1a/i-1", nil), "", false},
	} {
		if err := sameRegion(tc.node, tc.region); (err != nil) != tc.err {
			t.Errorf("%s: sameRegion = %v, want error %v", tc.name, err, tc.err)
		}
	}
}

// A ccm configured for the wrong region (its EC2 endpoint serves another region, which lists
// none of the cluster's instances) answers InstanceExists with an error for a Node of the
// cluster's region, never false: false would have the Node deleted.
func TestWrongRegionIsNotGone(t *testing.T) {
	h := newHarness(t, "region")
	ctx := context.Background()
	id, md := h.machine("region-a")
	west, err := h.fake.StartRegion("us-west-2")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[Global]\nRegion = us-west-2\nKubernetesClusterID = region\nCredentialsFile = %s\n\n"+
		"[ServiceOverride \"1\"]\nService = ec2\nRegion = us-west-2\nURL = %s\nSigningRegion = us-west-2\n\n"+
		"[ServiceOverride \"2\"]\nService = elasticloadbalancing\nRegion = us-west-2\nURL = %s\nSigningRegion = us-west-2\n", h.creds, west, west)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(nil, nil)
	inst, _ := c.InstancesV2()
	for _, tc := range []struct {
		name string
		node *v1.Node
	}{
		{"providerID with the zone", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "region-a", UID: "u1"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}},
		{"bare providerID, region label", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "region-a", UID: "u2",
			Labels: map[string]string{v1.LabelTopologyRegion: "us-east-1"}}, Spec: v1.NodeSpec{ProviderID: "aws:////" + id}}},
		{"no providerID, zone label", &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "region-a", UID: "u3",
			Labels: map[string]string{v1.LabelTopologyZone: md.Zone}}}},
	} {
		exists, err := inst.InstanceExists(ctx, tc.node)
		if err == nil {
			t.Errorf("%s: InstanceExists in the wrong region = (%v, nil), want an error", tc.name, exists)
		}
		if _, err := inst.InstanceShutdown(ctx, tc.node); err == nil {
			t.Errorf("%s: InstanceShutdown in the wrong region gave no error", tc.name)
		}
	}
	// The same Node through the right region's endpoint exists.
	right, _ := h.cloud(t, "").InstancesV2()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "region-a", UID: "u1"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
	if exists, err := right.InstanceExists(ctx, node); err != nil || !exists {
		t.Errorf("right region: InstanceExists = (%v, %v), want (true, nil)", exists, err)
	}
	// In its own region, an instance the region does not know is gone: EC2's answer about
	// that one ID.
	gone := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "u4"}, Spec: v1.NodeSpec{ProviderID: "aws:///us-east-1a/i-00000gone"}}
	if exists, err := right.InstanceExists(ctx, gone); err != nil || exists {
		t.Errorf("unknown ID: InstanceExists = (%v, %v), want (false, nil)", exists, err)
	}
}

// stubEC2 answers a filtered DescribeInstances with filtered and one by InstanceIds with byID.
type stubEC2 struct {
	filtered []types.Instance
	byID     func(id string) (*ec2.DescribeInstancesOutput, error)
	calls    []string
}

func (s *stubEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	if len(in.InstanceIds) > 0 {
		s.calls = append(s.calls, "id:"+strings.Join(in.InstanceIds, ","))
		return s.byID(in.InstanceIds[0])
	}
	s.calls = append(s.calls, "filter")
	return &ec2.DescribeInstancesOutput{Reservations: []types.Reservation{{Instances: s.filtered}}}, nil
}

// An ID a filtered list leaves out is asked about by itself: only InvalidInstanceID.NotFound
// makes it not found; an instance in that answer is found; any other error is an error.
func TestMissingFromFilterIsConfirmedByID(t *testing.T) {
	ctx := context.Background()
	running := types.Instance{InstanceId: aws.String("i-2"), State: &types.InstanceState{Name: types.InstanceStateNameRunning}}
	for _, tc := range []struct {
		name   string
		byID   func(id string) (*ec2.DescribeInstancesOutput, error)
		found  bool
		err    bool
		cached bool
	}{
		{"NotFound by ID", func(string) (*ec2.DescribeInstancesOutput, error) {
			return nil, &smithy.GenericAPIError{Code: "InvalidInstanceID.NotFound", Message: "The instance ID 'i-2' does not exist"}
		}, false, false, true},
		{"listed by ID", func(string) (*ec2.DescribeInstancesOutput, error) {
			return &ec2.DescribeInstancesOutput{Reservations: []types.Reservation{{Instances: []types.Instance{running}}}}, nil
		}, true, false, true},
		{"denied by ID", func(string) (*ec2.DescribeInstancesOutput, error) {
			return nil, &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "no"}
		}, false, true, false},
		{"empty answer by ID", func(string) (*ec2.DescribeInstancesOutput, error) {
			return &ec2.DescribeInstancesOutput{}, nil
		}, false, true, false},
	} {
		api := &stubEC2{filtered: []types.Instance{{InstanceId: aws.String("i-1")}}, byID: tc.byID}
		c := awsread.NewInstanceCache(api, 1<<40)
		got, err := c.Get(ctx, []string{"i-1", "i-2"})
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
		}
		if _, ok := got["i-2"]; ok != tc.found {
			t.Errorf("%s: i-2 found %v, want %v", tc.name, ok, tc.found)
		}
		if want := "filter id:i-2"; strings.Join(api.calls, " ") != want {
			t.Errorf("%s: calls %v, want %s (the ID the filter found is not asked again)", tc.name, api.calls, want)
		}
		api.calls = nil
		_, err = c.Get(ctx, []string{"i-2"})
		if cached := len(api.calls) == 0 && err == nil; cached != tc.cached {
			t.Errorf("%s: second look-up made calls %v (err %v); cached answer expected: %v", tc.name, api.calls, err, tc.cached)
		}
	}
}

// A Node without providerID is searched for within the configured VPC; finding nothing there
// is "gone" only if EC2 knows that VPC. A wrong VPC ID, or a region without it, is an error.
func TestWrongVPCIsNotGone(t *testing.T) {
	h := newHarness(t, "vpc")
	ctx := context.Background()
	h.machine("vpc-known")
	unknown := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vpc-unknown", UID: "u1"}}
	known := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vpc-known", UID: "u2"}}
	for _, tc := range []struct {
		name, extra     string
		node            *v1.Node
		exists, wantErr bool
	}{
		{"right VPC, unknown name", "[Global]\nVPC = vpc-1\n", unknown, false, false},
		{"right VPC, known name", "[Global]\nVPC = vpc-1\n", known, true, false},
		{"wrong VPC, unknown name", "[Global]\nVPC = vpc-nope\n", unknown, false, true},
		{"no VPC, unknown name", "", unknown, false, false},
	} {
		inst, _ := h.cloud(t, tc.extra).InstancesV2()
		exists, err := inst.InstanceExists(ctx, tc.node)
		if exists != tc.exists || (err != nil) != tc.wantErr {
			t.Errorf("%s: InstanceExists = (%v, %v), want (%v, error %v)", tc.name, exists, err, tc.exists, tc.wantErr)
		}
	}
	if n := h.fake.Operations()["ec2:DescribeVpcs"]; n != 2 {
		t.Errorf("DescribeVpcs calls %d, want 2 (one per empty search within a VPC)", n)
	}
	// The wrong region, with the VPC set: the VPC is not there, so nothing found is no answer.
	west, err := h.fake.StartRegion("us-west-2")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[Global]\nRegion = us-west-2\nVPC = vpc-1\nKubernetesClusterID = vpc\nCredentialsFile = %s\n\n"+
		"[ServiceOverride \"1\"]\nService = ec2\nRegion = us-west-2\nURL = %s\nSigningRegion = us-west-2\n", h.creds, west)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Initialize(nil, nil)
	inst, _ := c.InstancesV2()
	if exists, err := inst.InstanceExists(ctx, known); err == nil {
		t.Errorf("wrong region with the VPC set: InstanceExists = (%v, nil), want an error", exists)
	}
}
