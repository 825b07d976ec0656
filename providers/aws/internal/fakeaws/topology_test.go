package fakeaws

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestZoneIDShapes(t *testing.T) {
	for _, tc := range []struct{ zone, id, typ string }{
		{"us-east-1a", "use1-az4", "availability-zone"},
		{"us-east-1b", "use1-az5", "availability-zone"},
		{"us-east-1d", "use1-az1", "availability-zone"},
		{"eu-west-1c", "euw1-az6", "availability-zone"},
		{"us-gov-west-1a", "usgw1-az4", "availability-zone"},
		{"us-west-2-lax-1a", "usw2-lax1-az1", "local-zone"},
		{"us-west-2-lax-1b", "usw2-lax1-az2", "local-zone"},
		{"us-east-1-wl1-bos-wlz-1", "use1-wl1-bos-wlz1", "wavelength-zone"},
		{"", "", "local-zone"},
	} {
		if got := ZoneID(tc.zone); got != tc.id {
			t.Errorf("ZoneID(%q) = %q, want %q", tc.zone, got, tc.id)
		}
		if tc.zone != "" && zoneType(tc.zone) != tc.typ {
			t.Errorf("zoneType(%q) = %q, want %q", tc.zone, zoneType(tc.zone), tc.typ)
		}
	}
}

func TestDescribeAvailabilityZonesThroughSDK(t *testing.T) {
	s, e, _ := clients(t)
	ctx := context.Background()
	s.AddInstance(Instance{Type: "m5.large", Zone: "us-east-1-bos-1a"})
	s.AddInstance(Instance{Type: "m5.large", Zone: "us-west-2a"}) // another region: not listed
	out, err := e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, z := range out.AvailabilityZones {
		got[aws.ToString(z.ZoneName)] = aws.ToString(z.ZoneId) + " " + aws.ToString(z.ZoneType) + " " + aws.ToString(z.RegionName)
	}
	want := map[string]string{
		"us-east-1a":       "use1-az4 availability-zone us-east-1",
		"us-east-1b":       "use1-az5 availability-zone us-east-1",
		"us-east-1c":       "use1-az6 availability-zone us-east-1",
		"us-east-1-bos-1a": "use1-bos1-az1 local-zone us-east-1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("zones = %v, want %v", got, want)
	}
	out, err = e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1b"}})
	if err != nil || len(out.AvailabilityZones) != 1 || aws.ToString(out.AvailabilityZones[0].ZoneId) != "use1-az5" {
		t.Errorf("ZoneName us-east-1b: %v, %v", out, err)
	}
	out, err = e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: []ec2types.Filter{{Name: aws.String("zone-type"), Values: []string{"local-zone"}}}})
	if err != nil || len(out.AvailabilityZones) != 1 {
		t.Errorf("zone-type filter: %v, %v", out, err)
	}
	if _, err := e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1q"}}); code(err) != "InvalidParameterValue" {
		t.Errorf("unknown zone: %v, want InvalidParameterValue", err)
	}
	if _, err := e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: []ec2types.Filter{{Name: aws.String("nope"), Values: []string{"x"}}}}); code(err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: %v, want InvalidParameterValue", err)
	}
}

func TestDescribeInstanceTopologyThroughSDK(t *testing.T) {
	s, e, _ := clients(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 45; i++ {
		ids = append(ids, s.AddInstance(Instance{Type: "p5.48xlarge", Zone: "us-east-1a"}))
	}
	b200 := s.AddInstance(Instance{Type: "p6-b200.48xlarge", Zone: "us-east-1b"})
	plain := s.AddInstance(Instance{Type: "m5.large", Zone: "us-east-1a"})
	stopped := s.AddInstance(Instance{Type: "trn1.32xlarge", Zone: "us-east-1c", State: "stopped"})
	gone := s.AddInstance(Instance{Type: "trn1.32xlarge", Zone: "us-east-1c", State: "terminated"})

	// The paginator follows NextToken: InstanceIds answers come 20 at a time.
	all := append(slices.Clone(ids), b200, plain, stopped, gone)
	calls := s.Operations()["ec2:DescribeInstanceTopology"]
	got := map[string][]string{}
	p := ec2.NewDescribeInstanceTopologyPaginator(e, &ec2.DescribeInstanceTopologyInput{InstanceIds: all})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Instances) > 20 {
			t.Errorf("page of %d, want at most 20", len(out.Instances))
		}
		for _, it := range out.Instances {
			got[aws.ToString(it.InstanceId)] = it.NetworkNodes
			if aws.ToString(it.ZoneId) != ZoneID(aws.ToString(it.AvailabilityZone)) {
				t.Errorf("%s: zone ID %s for %s", aws.ToString(it.InstanceId), aws.ToString(it.ZoneId), aws.ToString(it.AvailabilityZone))
			}
		}
	}
	if n := s.Operations()["ec2:DescribeInstanceTopology"] - calls; n != 3 {
		t.Errorf("%d calls for 47 listed instances, want 3 pages", n)
	}
	if len(got) != 47 {
		t.Errorf("%d instances listed, want 47 (45 p5, 1 p6-b200, the stopped trn1)", len(got))
	}
	if nodes := got[ids[0]]; len(nodes) != 3 || nodes[0] != got[ids[1]][0] || nodes[2] == got[ids[1]][2] {
		t.Errorf("p5 nodes %v and %v: want 3 layers, the top shared in a zone, the bottom per instance", nodes, got[ids[1]])
	}
	if len(got[b200]) != 4 {
		t.Errorf("p6-b200 nodes %v, want 4 layers", got[b200])
	}
	if nodes, ok := got[stopped]; !ok || len(nodes) != 0 {
		t.Errorf("stopped trn1: %v listed=%v, want listed without nodes", nodes, ok)
	}
	for _, id := range []string{plain, gone} {
		if _, ok := got[id]; ok {
			t.Errorf("%s listed; a type without topology and a terminated instance are left out", id)
		}
	}
	if want, _ := s.NetworkNodes(ids[3]); !slices.Equal(got[ids[3]], want) {
		t.Errorf("NetworkNodes = %v, answer %v", want, got[ids[3]])
	}

	// The API's rules: at most 100 IDs, no MaxResults with IDs, filters with wildcards.
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("i-%08x", i)
	}
	if _, err := e.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{InstanceIds: many}); code(err) != "InvalidParameterValue" {
		t.Errorf("101 IDs: %v, want InvalidParameterValue", err)
	}
	if _, err := e.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{InstanceIds: ids[:1], MaxResults: aws.Int32(10)}); code(err) != "InvalidParameterCombination" {
		t.Errorf("IDs with MaxResults: %v, want InvalidParameterCombination", err)
	}
	out, err := e.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{MaxResults: aws.Int32(100),
		Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"p6?b200*", "trn1*"}}}})
	if err != nil || len(out.Instances) != 2 {
		t.Errorf("instance-type wildcards: %v, %v; want the p6-b200 and the stopped trn1", out, err)
	}
}

// A region without the API answers UnsupportedOperation.
func TestDescribeInstanceTopologyUnsupportedRegion(t *testing.T) {
	s, _, _ := clients(t)
	url, err := s.StartRegion("mx-central-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: "mx-central-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	_, err = e.DescribeInstanceTopology(context.Background(), &ec2.DescribeInstanceTopologyInput{InstanceIds: []string{"i-1"}})
	if code(err) != "UnsupportedOperation" {
		t.Errorf("mx-central-1: %v, want UnsupportedOperation", err)
	}
}
