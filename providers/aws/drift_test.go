package aws

// The drift part of the conformance harness: out-of-band changes made as an operator would,
// through the fake's own API with the SDK (they count at the fake, outside the sync measured).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

var _ cloudtest.DriftHarness = (*harness)(nil)

func (h *harness) Events() *cloudtest.EventSink { return h.events }

// operator is the SDK pointed at the fake with the harness's credentials: someone at the console.
type operator struct {
	ec2   *ec2.Client
	elb   *elb.Client
	elbv2 *elbv2.Client
}

func (h *harness) operator() operator {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", testSecret, ""),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} }}
	return operator{
		ec2:   ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(h.url) }),
		elb:   elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(h.url) }),
		elbv2: elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(h.url) }),
	}
}

func lbName(cluster string, svc *v1.Service) string {
	return lbname.AWSELB.Name(cluster, svc.Namespace, svc.Name)
}

func nlbAnnotation(svc *v1.Service) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[annotations.Prefix+annotations.Type] = "nlb"
}

func must(t cloudtest.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("breaking it by hand, %s: %v", what, err)
	}
}

func (h *harness) DriftCases(t cloudtest.T) []cloudtest.DriftCase {
	op, ctx := h.operator(), context.Background()
	classic := func(cluster string, svc *v1.Service) (string, fakeaws.ClassicLB) {
		name := lbName(cluster, svc)
		lb, ok := h.fake.ClassicLB(name)
		if !ok {
			t.Fatalf("no classic ELB %s to break", name)
		}
		return name, lb
	}
	nlb := func(cluster string, svc *v1.Service) (fakeaws.NLB, []fakeaws.NLBListener, []fakeaws.TargetGroup) {
		lb, ls, tgs, ok := h.fake.NLBByName(lbName(cluster, svc))
		if !ok || len(ls) == 0 || len(tgs) == 0 {
			t.Fatalf("no NLB with listeners for %s to break", svc.Name)
		}
		return lb, ls, tgs
	}
	return []cloudtest.DriftCase{
		{Name: "classic: listener deleted", MaxWrites: 1, Mentions: "listener TCP/80 was missing",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				name, _ := classic(cluster, svc)
				_, err := op.elb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String(name), LoadBalancerPorts: []int32{80}})
				must(t, "DeleteLoadBalancerListeners", err)
			}},
		{Name: "classic: health check changed", MaxWrites: 1, Mentions: "health check",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				name, _ := classic(cluster, svc)
				_, err := op.elb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(name), HealthCheck: &elbtypes.HealthCheck{
					Target: aws.String("TCP:22"), Interval: aws.Int32(30), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(10), UnhealthyThreshold: aws.Int32(10)}})
				must(t, "ConfigureHealthCheck", err)
			}},
		{Name: "classic: security group rule revoked", MaxWrites: 1, Mentions: "ingress rule tcp/80-80 from 0.0.0.0/0",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, lb := classic(cluster, svc)
				_, err := op.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(lb.SecurityGroups[0]),
					IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}}})
				must(t, "RevokeSecurityGroupIngress", err)
			}},
		{Name: "classic: node rule revoked", MaxWrites: 1, Mentions: "of security group " + fakeaws.NodeGroup + " was missing",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, lb := classic(cluster, svc)
				_, err := op.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(fakeaws.NodeGroup),
					IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080),
						UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(lb.SecurityGroups[0])}}}}})
				must(t, "RevokeSecurityGroupIngress", err)
			}},
		{Name: "classic: instance deregistered", MaxWrites: 1, Mentions: "was not registered",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				name, lb := classic(cluster, svc)
				_, err := op.elb.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String(name),
					Instances: []elbtypes.Instance{{InstanceId: aws.String(lb.Instances[0])}}})
				must(t, "DeregisterInstancesFromLoadBalancer", err)
			}},
		{Name: "classic: cross-zone turned on", MaxWrites: 1, Mentions: "cross-zone load balancing was on",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				name, _ := classic(cluster, svc)
				_, err := op.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(name),
					LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: true}}})
				must(t, "ModifyLoadBalancerAttributes", err)
			}},
		// Recreated: CreateLoadBalancer, ConfigureHealthCheck, RegisterInstances, AddTags (the
		// fingerprint). Its group and rules are still there.
		{Name: "classic: load balancer deleted", MaxWrites: 4, Mentions: "the load balancer was deleted",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				name, _ := classic(cluster, svc)
				_, err := op.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)})
				must(t, "DeleteLoadBalancer", err)
			}},
		{Name: "nlb: node rule revoked", Mutate: nlbAnnotation, MaxWrites: 1, Mentions: "of security group " + fakeaws.NodeGroup + " was missing",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				nlb(cluster, svc)
				// The Service's own rule. First of the NLB cases: a range held by the NLBs of
				// earlier cases on the same nodePort is claimed as halves, at most two levels deep.
				id := ownership.Identity{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
				g, _ := h.fake.Group(fakeaws.NodeGroup)
				i := slices.IndexFunc(g.Rules, func(r fakeaws.Rule) bool { return r.CIDR != "" && ownership.DescribedBy(id, r.Description) })
				if i < 0 {
					t.Fatalf("no node rule of %s to revoke", svc.Name)
				}
				r := g.Rules[i]
				_, err := op.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(fakeaws.NodeGroup),
					IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String(r.Protocol), FromPort: aws.Int32(int32(r.From)), ToPort: aws.Int32(int32(r.To)),
						IpRanges: []ec2types.IpRange{{CidrIp: aws.String(r.CIDR)}}}}})
				must(t, "RevokeSecurityGroupIngress", err)
			}},
		{Name: "nlb: listener deleted", Mutate: nlbAnnotation, MaxWrites: 1, Mentions: "listener TCP/80 was missing",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, ls, _ := nlb(cluster, svc)
				_, err := op.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(ls[0].ARN)})
				must(t, "DeleteListener", err)
			}},
		{Name: "nlb: target group health check changed", Mutate: nlbAnnotation, MaxWrites: 1, Mentions: "health check of target group",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, _, tgs := nlb(cluster, svc)
				_, err := op.elbv2.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{TargetGroupArn: aws.String(tgs[0].ARN),
					HealthCheckProtocol: v2types.ProtocolEnumHttp, HealthCheckPort: aws.String("8080"), HealthCheckPath: aws.String("/")})
				must(t, "ModifyTargetGroup", err)
			}},
		{Name: "nlb: target deregistered", Mutate: nlbAnnotation, MaxWrites: 1, Mentions: "was not registered in target group",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, _, tgs := nlb(cluster, svc)
				_, err := op.elbv2.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgs[0].ARN),
					Targets: []v2types.TargetDescription{{Id: aws.String(tgs[0].Targets[0])}}})
				must(t, "DeregisterTargets", err)
			}},
		{Name: "nlb: target group attribute changed", Mutate: func(svc *v1.Service) {
			nlbAnnotation(svc)
			svc.Annotations[annotations.Prefix+annotations.TGAttributes] = "proxy_protocol_v2.enabled=false,deregistration_delay.timeout_seconds=30"
		}, MaxWrites: 1, Mentions: "attribute proxy_protocol_v2.enabled was \"true\"",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				_, _, tgs := nlb(cluster, svc)
				_, err := op.elbv2.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(tgs[0].ARN),
					Attributes: []v2types.TargetGroupAttribute{{Key: aws.String("proxy_protocol_v2.enabled"), Value: aws.String("true")}}})
				must(t, "ModifyTargetGroupAttributes", err)
			}},
		// Recreated: CreateLoadBalancer, CreateListener, AddTags. The target groups, their
		// targets and the node rules outlive the NLB and are taken over again.
		{Name: "nlb: load balancer deleted", Mutate: nlbAnnotation, MaxWrites: 3, Mentions: "the load balancer was deleted",
			Break: func(t cloudtest.T, cluster string, svc *v1.Service) {
				lb, _, _ := nlb(cluster, svc)
				_, err := op.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lb.ARN)})
				must(t, "DeleteLoadBalancer", err)
			}},
	}
}

// LoadBalancerState is svc's ELB or NLB with what defines it, security groups by name and the
// node group's rules of this Service; no DNS names or ARNs.
func (h *harness) LoadBalancerState(_ cloudtest.T, cluster string, svc *v1.Service) (string, bool) {
	name := lbName(cluster, svc)
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	groupName := func(id string) string {
		if g, ok := h.fake.Group(id); ok {
			return g.Name
		}
		return id
	}
	rules := func(id string, keep func(fakeaws.Rule) bool) {
		g, ok := h.fake.Group(id)
		if !ok {
			return
		}
		for _, r := range g.Rules {
			if keep(r) {
				r.SourceSG = groupName(r.SourceSG)
				add("group %s rule %s", g.Name, r)
			}
		}
	}
	id := ownership.Identity{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
	mine := func(r fakeaws.Rule) bool { return ownership.DescribedBy(id, r.Description) }
	if lb, ok := h.fake.ClassicLB(name); ok {
		add("elb scheme=%s subnets=%v crosszone=%v instances=%v", lb.Scheme, sortedCopy(lb.Subnets), lb.CrossZone, sortedCopy(lb.Instances))
		add("elb healthcheck=%+v", lb.HealthCheck)
		for _, l := range lb.Listeners {
			add("elb listener %+v", l)
		}
		for n, p := range lb.Policies {
			add("elb policy %s %s %v", n, p.Type, p.Attributes)
		}
		for port, ns := range lb.BackendPolicies {
			add("elb backend %d %v", port, ns)
		}
		for _, g := range lb.SecurityGroups {
			add("elb group %s", groupName(g))
			rules(g, func(fakeaws.Rule) bool { return true })
		}
		rules(fakeaws.NodeGroup, mine)
	} else if lb, ls, tgs, ok := h.fake.NLBByName(name); ok {
		add("nlb scheme=%s subnets=%v", lb.Scheme, sortedCopy(lb.Subnets))
		tgName := map[string]string{}
		for _, tg := range tgs {
			tgName[tg.ARN] = tg.Name
			add("tg %s protocol=%s port=%d health=%s:%s:%s thresholds=%s proxy_protocol_v2=%v targets=%v", tg.Name, tg.Protocol, tg.Port,
				tg.HealthProtocol, tg.HealthPort, tg.HealthPath, tg.HealthThresholds, tg.ProxyProtocolV2, sortedCopy(tg.Targets))
		}
		for _, l := range ls {
			add("listener port=%d protocol=%s tg=%s cert=%s", l.Port, l.Protocol, tgName[l.TargetGroup], l.Cert)
		}
		rules(fakeaws.NodeGroup, mine)
	} else {
		return "", false
	}
	sort.Strings(out)
	return strings.Join(out, "\n"), true
}

func sortedCopy(v []string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}
