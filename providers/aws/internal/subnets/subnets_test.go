package subnets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

func filters(in *ec2.DescribeSubnetsInput) []string {
	var out []string
	for _, f := range in.Filters {
		out = append(out, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	return out
}

func TestQuery(t *testing.T) {
	for _, c := range []struct {
		name    string
		w       Want
		ids     []string
		filters []string
		err     string
	}{
		{"tagged for the public role", Want{}, nil, []string{"tag-key=kubernetes.io/role/elb"}, ""},
		{"tagged for the internal role, in the VPC", Want{Internal: true, VPC: "vpc-1"}, nil,
			[]string{"vpc-id=vpc-1", "tag-key=kubernetes.io/role/internal-elb"}, ""},
		{"named by ID", Want{Named: []string{"subnet-a", "subnet-b"}}, []string{"subnet-a", "subnet-b"}, nil, ""},
		{"named by Name tag", Want{Named: []string{"web-a"}, VPC: "vpc-1"}, nil, []string{"vpc-id=vpc-1", "tag:Name=web-a"}, ""},
		{"IDs and names mixed", Want{Named: []string{"subnet-a", "web-a"}}, nil, nil, "either subnet IDs or Name tags"},
	} {
		in, err := Query(c.w)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(in.SubnetIds, c.ids) || !slices.Equal(filters(in), c.filters) {
			t.Errorf("%s: ids %v filters %v (%v), want %v %v", c.name, in.SubnetIds, filters(in), err, c.ids, c.filters)
		}
	}
}

func subnet(id, zone, cluster string) types.Subnet {
	s := types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone), VpcId: aws.String("vpc-1"), CidrBlock: aws.String("10.0." + id[len(id)-1:] + ".0/24")}
	if cluster != "" {
		s.Tags = []types.Tag{{Key: aws.String("kubernetes.io/cluster/prod"), Value: aws.String(cluster)}}
	}
	return s
}

func TestChoose(t *testing.T) {
	// Zone a lists its lowest ID between two others: neither the first nor the last listed wins.
	found := []types.Subnet{subnet("subnet-3", "a", "owned"), subnet("subnet-1", "a", "shared"), subnet("subnet-6", "a", "owned"),
		subnet("subnet-2", "b", "owned"), subnet("subnet-4", "c", ""), subnet("subnet-5", "c", "other")}
	for _, c := range []struct {
		name     string
		w        Want
		found    []types.Subnet
		ids      []string
		untagged []string
		err      string
	}{
		{"the lowest tagged ID of each zone", Want{ClusterID: "prod"}, found, []string{"subnet-1", "subnet-2"}, nil, ""},
		{"another cluster's subnets are not chosen", Want{ClusterID: "staging"}, found, nil, nil, "no subnet is tagged kubernetes.io/role/elb and kubernetes.io/cluster/staging"},
		{"named: every one, the untagged listed", Want{ClusterID: "prod", Named: []string{"subnet-4", "subnet-3", "subnet-1"}},
			[]types.Subnet{found[0], found[1], found[4]}, []string{"subnet-1", "subnet-3", "subnet-4"}, []string{"subnet-4"}, ""},
		{"named: one not found", Want{ClusterID: "prod", Named: []string{"subnet-1", "subnet-9"}}, found[1:2], nil, nil, "found 1 of the 2 subnets named"},
		{"internal role in the message", Want{ClusterID: "prod", Internal: true}, nil, nil, nil, "kubernetes.io/role/internal-elb"},
	} {
		ch, err := Choose(c.w, c.found)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(ch.IDs, c.ids) || !slices.Equal(ch.Untagged, c.untagged) || ch.VPC != "vpc-1" {
			t.Errorf("%s: %+v (%v), want ids %v untagged %v", c.name, ch, err, c.ids, c.untagged)
		}
	}
	ch, _ := Choose(Want{ClusterID: "prod"}, found)
	if ch.CIDRs["subnet-2"] != "10.0.2.0/24" || ch.CIDRs["subnet-4"] != "" {
		t.Errorf("CIDRs %v: want the chosen-from subnets' only", ch.CIDRs)
	}
}

type api struct {
	calls int
	err   error
	out   []types.Subnet
}

func (a *api) DescribeSubnets(_ context.Context, _ *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	a.calls++
	return &ec2.DescribeSubnetsOutput{Subnets: a.out}, a.err
}

// One read per Want while the answer is young; errors are not kept.
func TestCache(t *testing.T) {
	a := &api{out: []types.Subnet{subnet("subnet-1", "a", "owned")}}
	c := &Cache{TTL: time.Hour}
	w := Want{ClusterID: "prod"}
	for range 3 {
		if ch, err := c.Get(context.Background(), a, w); err != nil || !slices.Equal(ch.IDs, []string{"subnet-1"}) {
			t.Fatalf("Get: %+v %v", ch, err)
		}
	}
	if _, err := c.Get(context.Background(), a, Want{ClusterID: "prod", Internal: true}); err != nil || a.calls != 2 {
		t.Errorf("calls %d (%v), want one per Want", a.calls, err)
	}
	b := &api{err: errors.New("boom")}
	for range 2 {
		if _, err := c.Get(context.Background(), b, Want{ClusterID: "x"}); err == nil || !strings.Contains(err.Error(), "DescribeSubnets: boom") {
			t.Errorf("Get: %v", err)
		}
	}
	if b.calls != 2 {
		t.Errorf("a failed answer was kept: %d calls", b.calls)
	}
	gone := &api{err: &smithy.GenericAPIError{Code: "InvalidSubnetID.NotFound", Message: "The subnet ID 'subnet-9' does not exist"}}
	_, err := c.Get(context.Background(), gone, Want{ClusterID: "prod", Named: []string{"subnet-9"}})
	if err == nil || !strings.Contains(err.Error(), "service.beta.kubernetes.io/aws-load-balancer-subnets") || !strings.Contains(err.Error(), "names a subnet that does not exist") {
		t.Errorf("a subnet EC2 does not know: %v, want the annotation's error", err)
	}
	c.TTL = 0
	if _, err := c.Get(context.Background(), a, w); err != nil || a.calls != 3 {
		t.Errorf("an answer older than TTL was used: %d calls", a.calls)
	}
}
