package aws

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

func nlbAfterRestart(t *testing.T, h *harness, svc *v1.Service, nodes []*v1.Node) *loadBalancers {
	t.Helper()
	ctx := context.Background()
	first := h.cloud(t, "").lb
	h.fake.SetNLBProvisioning(0)
	st, err := first.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = *st
	lb := h.cloud(t, "").lb
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w {
		t.Fatalf("the unchanged sync after the restart: %v, %d writes", err, h.fake.Writes()-w)
	}
	return lb
}

// An NLB sync that decided on the listing's tags reads them again before its first write: an
// NLB retagged for another Service since is not written to. Before any change is due, the
// check costs nothing.
func TestNLBOwnershipReadBeforeAWrite(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "freshnlb")
	_, md := h.machine("fn-a")
	_, md2 := h.machine("fn-b")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "fn-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := lbService("web", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	svc.UID = types.UID("uid-web")
	lb := nlbAfterRestart(t, h, svc, nodes)
	name := lbName("freshnlb", svc)
	nlb, _, _, ok := h.fake.NLBByName(name)
	if !ok {
		t.Fatal("no NLB")
	}
	op := h.operator()
	if _, err := op.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{nlb.ARN},
		Tags: []v2types.Tag{{Key: aws.String(ownership.ServiceUIDTag), Value: aws.String("uid-someone-else")}}}); err != nil {
		t.Fatal(err)
	}
	// Unchanged: nothing to write, so no fresh read either.
	reads := h.fake.Operations()["elbv2:DescribeTags"]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatalf("an unchanged sync: %v", err)
	}
	if d := h.fake.Operations()["elbv2:DescribeTags"] - reads; d != 0 {
		t.Errorf("an unchanged sync read the NLB's tags %d times, want 0 (the listing's are enough when nothing is written)", d)
	}
	// A second Node: targets to register, so the tags are read again and the write refused.
	refusedWithoutWrites(t, h, func() error {
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fn-b"}, Spec: v1.NodeSpec{ProviderID: md2.ProviderID}}))
		return err
	})
}

// refusedWithoutWrites runs a sync of a load balancer retagged for another Service: it must be
// refused as not owned, with no write reaching the fake.
func refusedWithoutWrites(t *testing.T, h *harness, sync func() error) {
	t.Helper()
	w := h.fake.Writes()
	if err := sync(); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("a sync of a load balancer whose tags name another Service = %v, want a not-owned refusal", err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("%d writes to a load balancer this Service no longer owns", d)
	}
}

// The same for a classic ELB whose only due write is a security group rule: the rules are
// written after the check too.
func TestELBOwnershipReadBeforeARuleWrite(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "freshrule")
	_, md := h.machine("fw-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "fw-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web")},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	first := h.cloud(t, "").lb
	st, err := first.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = *st
	lb := h.cloud(t, "").lb
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	name := lbName("freshrule", svc)
	op := h.operator()
	if _, err := op.elb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{name},
		Tags: []elbtypes.Tag{{Key: aws.String(ownership.ServiceUIDTag), Value: aws.String("uid-someone-else")}}}); err != nil {
		t.Fatal(err)
	}
	group, ok := h.fake.GroupByName("k8s-elb-" + name)
	if !ok {
		t.Fatal("no ELB group")
	}
	g, _ := h.fake.Group(group)
	if len(g.Rules) == 0 {
		t.Fatal("the ELB group has no rule to revoke")
	}
	r := g.Rules[0]
	if _, err := op.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(group),
		IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String(r.Protocol), FromPort: aws.Int32(int32(r.From)), ToPort: aws.Int32(int32(r.To)),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String(r.CIDR)}}}}}); err != nil {
		t.Fatal(err)
	}
	// The listings have their own ages: the groups' is read again now, the ELBs' is not.
	lb.gsnap.ForgetAll()
	refusedWithoutWrites(t, h, func() error {
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
		return err
	})
}

// An NLB cannot change its scheme: a change of the internal annotation deletes and makes it
// again, with a Recreated Event, no drift Event; its target groups are kept.
func TestNLBSchemeChangeRecreates(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "nlbscheme")
	_, md := h.machine("ns-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "ns-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := lbService("web", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	svc.UID = types.UID("uid-web")
	lb := nlbAfterRestart(t, h, svc, nodes)
	name := lbName("nlbscheme", svc)
	before, _, tgsBefore, _ := h.fake.NLBByName(name)
	creates, deletes := h.fake.Operations()["elbv2:CreateTargetGroup"], h.fake.Operations()["elbv2:DeleteTargetGroup"]
	svc.Annotations[annotations.Prefix+annotations.Internal] = "true"
	st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	after, _, tgsAfter, ok := h.fake.NLBByName(name)
	if !ok || after.Scheme != "internal" || after.ARN == before.ARN || len(st.Ingress) != 1 || st.Ingress[0].Hostname == svc.Status.LoadBalancer.Ingress[0].Hostname {
		t.Errorf("after the scheme change: NLB %+v (was %+v), status %+v", after, before, st)
	}
	ops := h.fake.Operations()
	if len(tgsAfter) != len(tgsBefore) || ops["elbv2:CreateTargetGroup"] != creates || ops["elbv2:DeleteTargetGroup"] != deletes {
		t.Errorf("target groups %d (were %d), %d created, %d deleted; want the same ones kept", len(tgsAfter), len(tgsBefore),
			ops["elbv2:CreateTargetGroup"]-creates, ops["elbv2:DeleteTargetGroup"]-deletes)
	}
	if found, evs := h.events.Await(svc, 5*time.Second, v1.EventTypeNormal, svcevents.ReasonRecreated, "scheme"); !found {
		t.Errorf("no Recreated Event; Events: %q", evs)
	}
	for _, ev := range h.events.On(svc) {
		if strings.Contains(ev, " "+svcevents.ReasonDriftRepaired+":") {
			t.Errorf("a change of the Service was reported as drift: %s", ev)
		}
	}
	svc.Status.LoadBalancer = *st
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w {
		t.Errorf("the sync after the recreation: %v, %d writes; want none", err, h.fake.Writes()-w)
	}
}
