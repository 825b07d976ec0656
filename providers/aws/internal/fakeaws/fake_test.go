package fakeaws

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
)

// The fake is checked through the real SDK: the answers must deserialize into the SDK's types
// and its errors must carry the codes the real APIs use.
func clients(t *testing.T) (*Server, *ec2.Client, *elb.Client) {
	t.Helper()
	s := New("us-east-1", "c1")
	s.AddCredentials("AKID", "secret")
	s.AddCredentials("AKIDBASE", "base-secret")
	url, err := s.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	return s, ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) }),
		elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(url) })
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestInstancesThroughSDK(t *testing.T) {
	s, e, _ := clients(t)
	ctx := context.Background()
	id := s.AddInstance(Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: "ip-1", PublicIP: "203.0.113.1",
		Tags: map[string]string{"Name": "one"}, ENIs: []ENI{{Device: 0, PrivateIPs: []string{"10.0.0.1", "10.0.0.2"}}, {Device: 1, PrivateIPs: []string{"10.1.0.1"}}}})
	s.AddInstance(Instance{Type: "m5.large", Zone: "us-east-1b", PrivateDNS: "ip-2"})

	out, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{"one"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) != 1 {
		t.Fatalf("tag filter matched %d reservations, want 1", len(out.Reservations))
	}
	in := out.Reservations[0].Instances[0]
	if aws.ToString(in.InstanceId) != id || in.State.Name != ec2types.InstanceStateNameRunning || aws.ToString(in.Placement.AvailabilityZone) != "us-east-1a" ||
		aws.ToString(in.PrivateIpAddress) != "10.0.0.1" || aws.ToString(in.PublicIpAddress) != "203.0.113.1" || len(in.NetworkInterfaces) != 2 {
		t.Errorf("instance %+v", in)
	}
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id, "i-missing"}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown InstanceId: code %q, want InvalidInstanceID.NotFound", code(err))
	}
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("no-such-filter"), Values: []string{"x"}}}}); code(err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: code %q", code(err))
	}

	// Eventual consistency, 500s and throttling.
	s.SetFaults(Faults{Visibility: time.Hour})
	late := s.AddInstance(Instance{Type: "t3.small", Zone: "us-east-1a"})
	s.SetFaults(Faults{FailOps: map[string]bool{"DescribeSubnets": true}})
	if _, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{late}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("invisible instance: code %q", code(err))
	}
	if _, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); code(err) != "InternalError" {
		t.Errorf("injected failure: code %q", code(err))
	}
	s.SetFaults(Faults{})
	s.Throttle(1, 0.001)
	_, _ = e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if _, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); code(err) != "RequestLimitExceeded" || !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
		t.Errorf("throttled: code %q; the SDK must see a throttle", code(err))
	}
	if s.Throttled()["ec2:DescribeSubnets"] != 1 || s.Calls()["ec2:DescribeSubnets"] != 3 {
		t.Errorf("counters: calls %v throttled %v", s.Calls(), s.Throttled())
	}
}

func TestSecurityGroupsAndELBThroughSDK(t *testing.T) {
	s, e, l := clients(t)
	ctx := context.Background()
	sg, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("lb"), Description: aws.String("d"), VpcId: aws.String(VPC)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("lb"), Description: aws.String("d"), VpcId: aws.String(VPC)}); code(err) != "InvalidGroup.Duplicate" {
		t.Errorf("duplicate group: %q", code(err))
	}
	perm := []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: sg.GroupId}}}}
	if _, err := e.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(NodeGroup), IpPermissions: perm}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId}); code(err) != "DependencyViolation" {
		t.Errorf("deleting a referenced group: %q, want DependencyViolation", code(err))
	}
	refs, err := e.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("ip-permission.group-id"), Values: []string{aws.ToString(sg.GroupId)}}}})
	if err != nil || len(refs.SecurityGroups) != 1 || aws.ToString(refs.SecurityGroups[0].GroupId) != NodeGroup {
		t.Fatalf("groups referring to %s: %v %v", aws.ToString(sg.GroupId), refs, err)
	}
	subnets, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/role/elb"}}}})
	if err != nil || len(subnets.Subnets) != 3 {
		t.Fatalf("public subnets: %v %v", subnets, err)
	}

	if _, err := l.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"nope"}}); code(err) != "LoadBalancerNotFound" {
		t.Errorf("missing ELB: %q", code(err))
	}
	created, err := l.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{LoadBalancerName: aws.String("lb1"), Subnets: []string{aws.ToString(subnets.Subnets[0].SubnetId)},
		SecurityGroups: []string{aws.ToString(sg.GroupId)}, Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}},
		Tags: []elbtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	if err != nil || aws.ToString(created.DNSName) == "" {
		t.Fatalf("CreateLoadBalancer: %v %v", created, err)
	}
	id := s.AddInstance(Instance{Type: "m5.large", Zone: "us-east-1a"})
	if _, err := l.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String("lb1"), Instances: []elbtypes.Instance{{InstanceId: aws.String(id)}}}); err != nil {
		t.Fatal(err)
	}
	d, err := l.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"lb1"}})
	if err != nil || len(d.LoadBalancerDescriptions) != 1 {
		t.Fatal(err)
	}
	lb := d.LoadBalancerDescriptions[0]
	if len(lb.Instances) != 1 || len(lb.ListenerDescriptions) != 1 || aws.ToInt32(lb.ListenerDescriptions[0].Listener.InstancePort) != 30080 || len(lb.SecurityGroups) != 1 {
		t.Errorf("ELB %+v", lb)
	}
	tags, err := l.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{"lb1"}})
	if err != nil || len(tags.TagDescriptions) != 1 || aws.ToString(tags.TagDescriptions[0].Tags[0].Value) != "v" {
		t.Errorf("tags %v %v", tags, err)
	}
	if _, err := e.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(NodeGroup), IpPermissions: perm}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId}); code(err) != "DependencyViolation" {
		t.Errorf("deleting a group an ELB uses: %q, want DependencyViolation", code(err))
	}
	if _, err := l.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("lb1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId}); err != nil {
		t.Errorf("deleting an unused group: %v", err)
	}
}

// Classic ELB policies through the SDK: the ELB API's error codes, and the policy shows in
// DescribeLoadBalancers (Policies.OtherPolicies, BackendServerDescriptions).
func TestELBPoliciesThroughSDK(t *testing.T) {
	s, _, l := clients(t)
	ctx := context.Background()
	sn := s.AddSubnet(VPC, "us-east-1a", "10.9.0.0/24", nil)
	if _, err := l.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{LoadBalancerName: aws.String("pol"), Subnets: []string{sn},
		Listeners: []elbtypes.Listener{{Protocol: aws.String("TCP"), LoadBalancerPort: 80, InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(30080)}}}); err != nil {
		t.Fatal(err)
	}
	set := func(names ...string) error {
		_, err := l.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: aws.String("pol"), InstancePort: aws.Int32(30080), PolicyNames: append([]string{}, names...)})
		return err
	}
	if err := set("pp"); code(err) != "PolicyNotFound" {
		t.Errorf("unknown policy: %v, want PolicyNotFound", err)
	}
	create := func(typ string) error {
		_, err := l.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{LoadBalancerName: aws.String("pol"), PolicyName: aws.String("pp"),
			PolicyTypeName: aws.String(typ), PolicyAttributes: []elbtypes.PolicyAttribute{{AttributeName: aws.String("ProxyProtocol"), AttributeValue: aws.String("true")}}})
		return err
	}
	if err := create("NoSuchType"); code(err) != "PolicyTypeNotFound" {
		t.Errorf("unknown type: %v, want PolicyTypeNotFound", err)
	}
	if err := create("ProxyProtocolPolicyType"); err != nil {
		t.Fatal(err)
	}
	if err := create("ProxyProtocolPolicyType"); code(err) != "DuplicatePolicyName" {
		t.Errorf("second create: %v, want DuplicatePolicyName", err)
	}
	if err := set("pp"); err != nil {
		t.Fatal(err)
	}
	out, err := l.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"pol"}})
	if err != nil {
		t.Fatal(err)
	}
	d := out.LoadBalancerDescriptions[0]
	if d.Policies == nil || len(d.Policies.OtherPolicies) != 1 || d.Policies.OtherPolicies[0] != "pp" || len(d.BackendServerDescriptions) != 1 ||
		aws.ToInt32(d.BackendServerDescriptions[0].InstancePort) != 30080 || len(d.BackendServerDescriptions[0].PolicyNames) != 1 {
		t.Errorf("described policies %+v, backends %+v", d.Policies, d.BackendServerDescriptions)
	}
	if err := set(); err != nil {
		t.Fatal(err)
	}
	if lb, _ := s.ClassicLB("pol"); len(lb.BackendPolicies) != 0 || len(lb.Policies) != 1 {
		t.Errorf("after an empty list: backends %v, policies %v; want no backend policy, the policy kept", lb.BackendPolicies, lb.Policies)
	}
}

// Operations leaves out the SDK's retries; Calls counts every attempt.
func TestOperationsLeaveOutRetries(t *testing.T) {
	s, _, _ := clients(t)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.Backoff = retry.BackoffDelayerFunc(noDelay) })
		}}
	e := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(s.URL()) })
	s.SetFaults(Faults{FailOps: map[string]bool{"DescribeSubnets": true}})
	if _, err := e.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); code(err) != "InternalError" {
		t.Fatalf("injected failure: code %q", code(err))
	}
	if c, o := s.Calls()["ec2:DescribeSubnets"], s.Operations()["ec2:DescribeSubnets"]; c != 3 || o != 1 {
		t.Errorf("calls %d, operations %d; want 3 attempts of 1 operation", c, o)
	}
}

func noDelay(int, error) (time.Duration, error) { return 0, nil }

// ELBv2 SetSecurityGroups on an NLB, as AWS answers it: the list replaces the groups (read
// back by DescribeLoadBalancers); an unknown group is InvalidSecurityGroup; an NLB created
// without groups takes none (InvalidConfigurationRequest).
func TestNLBSetSecurityGroupsThroughSDK(t *testing.T) {
	s, _, _ := clients(t)
	ctx := context.Background()
	url := s.URL()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	v2 := elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(url) })
	a := s.AddSecurityGroup("a", "d", nil)
	b := s.AddSecurityGroup("b", "d", nil)
	subnet := s.SubnetIDs()[0]
	with, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("with"), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		Subnets: []string{subnet}, SecurityGroups: []string{a}})
	if err != nil {
		t.Fatal(err)
	}
	arn := with.LoadBalancers[0].LoadBalancerArn
	out, err := v2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: arn, SecurityGroups: []string{b, a}})
	if err != nil || len(out.SecurityGroupIds) != 2 {
		t.Fatalf("SetSecurityGroups: %v %v", out, err)
	}
	d, err := v2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{aws.ToString(arn)}})
	if err != nil || len(d.LoadBalancers) != 1 || len(d.LoadBalancers[0].SecurityGroups) != 2 || d.LoadBalancers[0].SecurityGroups[0] != b {
		t.Errorf("groups read back: %v %v, want [%s %s]", d, err, b, a)
	}
	if _, err := v2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: arn, SecurityGroups: []string{"sg-nope"}}); code(err) != "InvalidSecurityGroup" {
		t.Errorf("unknown group: %q, want InvalidSecurityGroup", code(err))
	}
	without, err := v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String("without"), Type: elbv2types.LoadBalancerTypeEnumNetwork, Subnets: []string{subnet}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: without.LoadBalancers[0].LoadBalancerArn, SecurityGroups: []string{a}}); code(err) != "InvalidConfigurationRequest" {
		t.Errorf("NLB created without groups: %q, want InvalidConfigurationRequest", code(err))
	}
}

// AWS's quota of inbound rules per group (60 by default), counted apart for IPv4 and IPv6: an
// Authorize past it fails whole with RulesPerSecurityGroupLimitExceeded.
func TestRulesPerGroupLimitThroughSDK(t *testing.T) {
	s, e, _ := clients(t)
	s.SetRulesPerGroupLimit(DefaultRulesPerGroup)
	ctx := context.Background()
	perm := func(proto string, ranges ...string) []ec2types.IpPermission {
		p := ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80)}
		for _, r := range ranges {
			if proto == "v6" {
				p.Ipv6Ranges = append(p.Ipv6Ranges, ec2types.Ipv6Range{CidrIpv6: aws.String(r)})
			} else {
				p.IpRanges = append(p.IpRanges, ec2types.IpRange{CidrIp: aws.String(r)})
			}
		}
		return []ec2types.IpPermission{p}
	}
	authorize := func(p []ec2types.IpPermission) error {
		_, err := e.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(NodeGroup), IpPermissions: p})
		return err
	}
	var v4 []string
	for i := 0; i < DefaultRulesPerGroup-1; i++ {
		v4 = append(v4, fmt.Sprintf("10.0.%d.0/24", i))
	}
	if err := authorize(perm("v4", v4...)); err != nil {
		t.Fatal(err)
	}
	// One more fits; two more in one call do not, and neither is added.
	if err := authorize(perm("v4", "192.0.2.0/24", "198.51.100.0/24")); code(err) != "RulesPerSecurityGroupLimitExceeded" {
		t.Errorf("past the limit: %v, want RulesPerSecurityGroupLimitExceeded", err)
	}
	if g, _ := s.Group(NodeGroup); len(g.Rules) != DefaultRulesPerGroup-1 {
		t.Errorf("a refused call added rules: %d, want %d", len(g.Rules), DefaultRulesPerGroup-1)
	}
	if err := authorize(perm("v4", "192.0.2.0/24")); err != nil {
		t.Errorf("the 60th rule: %v", err)
	}
	if err := authorize(perm("v6", "2001:db8::/32")); err != nil {
		t.Errorf("IPv6 rules are counted apart: %v", err)
	}
	s.SetRulesPerGroupLimit(61)
	if err := authorize(perm("v4", "198.51.100.0/24")); err != nil {
		t.Errorf("a raised limit: %v", err)
	}
}
