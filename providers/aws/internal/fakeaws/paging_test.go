package fakeaws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// With a page limit every list answers in pages the SDK's paginators follow to the end; the
// fake counts one call per page.
func TestPagesThroughSDKPaginators(t *testing.T) {
	s, e, l := clients(t)
	ctx := context.Background()
	s.SetPageLimit(2)
	for i := range 5 {
		s.AddInstance(Instance{Zone: "us-east-1a", PrivateDNS: fmt.Sprintf("ip-%d", i)})
		s.AddSecurityGroup(fmt.Sprintf("g%d", i), "d", nil)
		s.AddClassicLB(fmt.Sprintf("lb%d", i), 80, 30080, nil)
		s.AddNLB(fmt.Sprintf("nlb%d", i), nil)
		s.AddTargetGroup(fmt.Sprintf("tg%d", i), "TCP", 80, nil)
		s.AddRouteTable(fmt.Sprintf("rtb-%d", i), nil)
	}
	v2 := elbv2.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(s.URL()) })

	count := func(op string, next func() (int, error), more func() bool) (items, pages int) {
		t.Helper()
		before := s.Operations()[op]
		for more() {
			n, err := next()
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			items += n
		}
		return items, s.Operations()[op] - before
	}
	pi := ec2.NewDescribeInstancesPaginator(e, &ec2.DescribeInstancesInput{})
	pg := ec2.NewDescribeSecurityGroupsPaginator(e, &ec2.DescribeSecurityGroupsInput{})
	ps := ec2.NewDescribeSubnetsPaginator(e, &ec2.DescribeSubnetsInput{})
	pr := ec2.NewDescribeRouteTablesPaginator(e, &ec2.DescribeRouteTablesInput{})
	pe := elb.NewDescribeLoadBalancersPaginator(l, &elb.DescribeLoadBalancersInput{})
	pn := elbv2.NewDescribeLoadBalancersPaginator(v2, &elbv2.DescribeLoadBalancersInput{})
	pt := elbv2.NewDescribeTargetGroupsPaginator(v2, &elbv2.DescribeTargetGroupsInput{})
	for _, tc := range []struct {
		op          string
		next        func() (int, error)
		more        func() bool
		items, page int
	}{
		{"ec2:DescribeInstances", func() (int, error) {
			o, err := pi.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.Reservations) })
		}, pi.HasMorePages, 5, 3},
		{"ec2:DescribeSecurityGroups", func() (int, error) {
			o, err := pg.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.SecurityGroups) })
		}, pg.HasMorePages, 6, 3},
		{"ec2:DescribeSubnets", func() (int, error) {
			o, err := ps.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.Subnets) })
		}, ps.HasMorePages, 6, 3},
		{"ec2:DescribeRouteTables", func() (int, error) {
			o, err := pr.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.RouteTables) })
		}, pr.HasMorePages, 6, 3},
		{"elb:DescribeLoadBalancers", func() (int, error) {
			o, err := pe.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.LoadBalancerDescriptions) })
		}, pe.HasMorePages, 5, 3},
		{"elbv2:DescribeLoadBalancers", func() (int, error) {
			o, err := pn.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.LoadBalancers) })
		}, pn.HasMorePages, 5, 3},
		{"elbv2:DescribeTargetGroups", func() (int, error) {
			o, err := pt.NextPage(ctx)
			return lenOr(o, err, func() int { return len(o.TargetGroups) })
		}, pt.HasMorePages, 5, 3},
	} {
		if items, pages := count(tc.op, tc.next, tc.more); items != tc.items || pages != tc.page {
			t.Errorf("%s: %d items in %d calls, want %d in %d", tc.op, items, pages, tc.items, tc.page)
		}
	}

	// Without the limit EC2 answers everything at once when MaxResults is absent.
	s.SetPageLimit(0)
	if out, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil || len(out.Reservations) != 5 || out.NextToken != nil {
		t.Errorf("no MaxResults, no limit: %v, %v", out, err)
	}
	out, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	if err != nil || len(out.Reservations) != 5 {
		t.Errorf("MaxResults 5: %v, %v", out, err)
	}
}

func lenOr[T any](o *T, err error, n func() int) (int, error) {
	if err != nil {
		return 0, err
	}
	return n(), nil
}

// The limits of the API reference are enforced with its error codes.
func TestPagingLimits(t *testing.T) {
	s, e, l := clients(t)
	ctx := context.Background()
	id := s.AddInstance(Instance{Zone: "us-east-1a"})
	var names []string
	for i := range 21 {
		names = append(names, fmt.Sprintf("lb%d", i))
		s.AddClassicLB(names[i], 80, 30080, nil)
	}
	v2 := elbv2.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(s.URL()) })
	var arns []string
	for i := range 21 {
		arns = append(arns, s.AddNLB(fmt.Sprintf("n%d", i), nil))
	}
	for _, tc := range []struct {
		name, code string
		call       func() error
	}{
		{"MaxResults 4", "InvalidParameterValue", func() error {
			_, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(4)})
			return err
		}},
		{"MaxResults with InstanceIds", "InvalidParameterCombination", func() error {
			_, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5), InstanceIds: []string{id}})
			return err
		}},
		{"route tables MaxResults 101", "InvalidParameterValue", func() error {
			_, err := e.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{MaxResults: aws.Int32(101)})
			return err
		}},
		{"foreign NextToken", "InvalidPaginationToken", func() error {
			_, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{NextToken: aws.String("DescribeInstances.1")})
			return err
		}},
		{"ELB PageSize 401", "ValidationError", func() error {
			_, err := l.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(401)})
			return err
		}},
		{"ELB DescribeTags of 21", "ValidationError", func() error {
			_, err := l.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: names})
			return err
		}},
		{"ELB DescribeTags of 20", "", func() error {
			_, err := l.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: names[:20]})
			return err
		}},
		{"ELBv2 DescribeTags of 21", "ValidationError", func() error {
			_, err := v2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: arns})
			return err
		}},
		{"ELBv2 DescribeTags of 20", "", func() error {
			_, err := v2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: arns[:20]})
			return err
		}},
	} {
		if err := tc.call(); code(err) != tc.code || (tc.code == "" && err != nil) {
			t.Errorf("%s: %v, want code %q", tc.name, err, tc.code)
		}
	}
}

// Another region of the fake sees only its own instances and none of the home region's
// subnets, groups and route tables; the home region does not see the other's instances.
func TestRegionsAreSeparate(t *testing.T) {
	s, home, _ := clients(t)
	ctx := context.Background()
	east := s.AddInstance(Instance{Zone: "us-east-1a"})
	west := s.AddInstance(Instance{Zone: "us-west-2b"})
	url, err := s.StartRegion("us-west-2")
	if err != nil {
		t.Fatal(err)
	}
	other := ec2.NewFromConfig(aws.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	ids := func(c *ec2.Client) string {
		out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				got = append(got, aws.ToString(in.InstanceId))
			}
		}
		return strings.Join(got, ",")
	}
	if got := ids(home); got != east {
		t.Errorf("home region sees %q, want %q", got, east)
	}
	if got := ids(other); got != west {
		t.Errorf("us-west-2 sees %q, want %q", got, west)
	}
	if _, err := other.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{east}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("us-west-2 asked for a us-east-1 instance by ID: %v", err)
	}
	if out, err := other.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil || len(out.Subnets) != 0 {
		t.Errorf("us-west-2 subnets: %v, %v; want none", out, err)
	}
	if out, err := other.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{}); err != nil || len(out.SecurityGroups) != 0 {
		t.Errorf("us-west-2 groups: %v, %v; want none", out, err)
	}
	if _, err := other.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{VPC}}); code(err) != "InvalidVpcID.NotFound" {
		t.Errorf("us-west-2 asked for the home VPC: %v", err)
	}
	if out, err := home.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{VPC}}); err != nil || len(out.Vpcs) != 1 {
		t.Errorf("home region VPC: %v, %v", out, err)
	}
}
