package fakeaws

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// UpdateSecurityGroupRuleDescriptionsIngress changes a rule's description and nothing else; a
// rule the group does not hold fails the whole request (InvalidPermission.NotFound).
func TestRedescribeIngressThroughSDK(t *testing.T) {
	s, e, _ := clients(t)
	ctx := context.Background()
	g := s.AddSecurityGroup("nodes-2", "", nil, Rule{Protocol: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0", Description: "old"},
		Rule{Protocol: "tcp", From: 30081, To: 30081, CIDR: "0.0.0.0/0", Description: "keep"})
	perm := func(port int32, desc string) ec2types.IpPermission {
		return ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0"), Description: aws.String(desc)}}}
	}
	if _, err := e.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
		GroupId: aws.String(g), IpPermissions: []ec2types.IpPermission{perm(30080, "new")}}); err != nil {
		t.Fatal(err)
	}
	_, err := e.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
		GroupId: aws.String(g), IpPermissions: []ec2types.IpPermission{perm(30081, "lost"), perm(30099, "x")}})
	if code(err) != "InvalidPermission.NotFound" {
		t.Errorf("a missing rule: %v, want InvalidPermission.NotFound", err)
	}
	got, _ := s.Group(g)
	want := []Rule{{Protocol: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0", Description: "new"}, {Protocol: "tcp", From: 30081, To: 30081, CIDR: "0.0.0.0/0", Description: "keep"}}
	if !slices.Equal(got.Rules, want) {
		t.Errorf("rules %v, want %v", got.Rules, want)
	}
}

// Upstream's names: a+UID cut to 32, and target group names within ELBv2's 32 characters.
func TestUpstreamNames(t *testing.T) {
	if n := UpstreamLBName("7c9a3e52-1f0b-4d8e-a6b4-0f1e2d3c4b5a"); n != "a7c9a3e521f0b4d8ea6b40f1e2d3c4b5" {
		t.Errorf("LB name %q", n)
	}
	n := UpstreamTargetGroupName("prod", "kube-system", "ingress-nginx-controller", 443, 31443, "TCP", "TCP", 30)
	if len(n) != 32 || n[:22] != "k8s-kubesyst-ingressn-" {
		t.Errorf("target group name %q", n)
	}
}
