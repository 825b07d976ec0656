package aws

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// byoMode is Managed mode with the Services of namespace ns allowed to name any group
// (docs/providers/aws.md "Named objects need proof or permission").
const byoMode = managedMode + "AllowedResourceNamespaces = ns\n"

// userGroup adds a group as a user makes it: one rule of its own, no tag of the cluster.
func userGroup(h *harness, name string) string {
	return h.fake.AddSecurityGroup(name, "the user's", map[string]string{"team": "net"},
		fakeaws.Rule{Protocol: "tcp", From: 80, To: 80, CIDR: "192.0.2.0/24"})
}

// groupState is a group's name, rules (with descriptions) and tags, to see it untouched.
func groupState(t *testing.T, h *harness, id string) string {
	t.Helper()
	g, ok := h.fake.Group(id)
	if !ok {
		return "(gone)"
	}
	var rules []string
	for _, r := range g.Rules {
		rules = append(rules, r.String()+" "+r.Description)
	}
	var tags []string
	for _, sg := range h.fake.SecurityGroups() {
		if sg.ID == id {
			for k, v := range sg.Tags {
				tags = append(tags, k+"="+v)
			}
		}
	}
	slices.Sort(tags)
	return g.Name + " " + strings.Join(rules, ",") + " " + strings.Join(tags, ",")
}

func nlbGroups(t *testing.T, h *harness, name string) []string {
	t.Helper()
	nlb, _, _, ok := h.fake.NLBByName(name)
	if !ok {
		t.Fatalf("no NLB %s", name)
	}
	return nlb.SecurityGroups
}

// security-groups on an NLB in Managed mode, as upstream HEAD: the NLB is created with exactly
// those groups; ccm makes no group of its own and writes nothing into them; an unchanged sync
// and a restart write nothing; a changed list is one SetSecurityGroups; the delete leaves
// the user's groups as they were.
func TestNLBNamedGroupsLifecycle(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	a, b := userGroup(h, "user-a"), userGroup(h, "user-b")
	before := map[string]string{a: groupState(t, h, a), b: groupState(t, h, b)}
	c := h.cloud(t, byoMode)
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "n1")
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + annotations.SecurityGroup: a + ", " + b})
	svc.UID = "uid-web"
	ops0 := h.fake.Operations()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	name := c.lb.name(svc)
	if got := nlbGroups(t, h, name); !slices.Equal(got, []string{a, b}) {
		t.Errorf("NLB groups %v, want [%s %s]", got, a, b)
	}
	ops := h.fake.Operations()
	if n := ops["ec2:CreateSecurityGroup"] - ops0["ec2:CreateSecurityGroup"]; n != 0 {
		t.Errorf("%d groups created; want none (the NLB uses the named ones)", n)
	}
	for _, sg := range h.fake.SecurityGroups() {
		if sg.Name == nlbGroupName(name) {
			t.Errorf("ccm's own group %s made", sg.ID)
		}
	}
	for id, s := range before {
		if got := groupState(t, h, id); got != s {
			t.Errorf("user's group changed: %s, was %s", got, s)
		}
	}

	w0 := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("unchanged sync: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}
	restarted, _ := h.cloud(t, byoMode).LoadBalancer()
	if _, err := restarted.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("after a restart: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}

	svc.Annotations[annotations.Prefix+annotations.SecurityGroup] = b
	ops0 = h.fake.Operations()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	ops = h.fake.Operations()
	if got := nlbGroups(t, h, name); !slices.Equal(got, []string{b}) || ops["elbv2:SetSecurityGroups"]-ops0["elbv2:SetSecurityGroups"] != 1 {
		t.Errorf("after naming only %s: NLB groups %v, %d SetSecurityGroups; want [%s], 1", b, got, ops["elbv2:SetSecurityGroups"]-ops0["elbv2:SetSecurityGroups"], b)
	}

	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := h.fake.NLBByName(name); ok {
		t.Errorf("NLB left after the delete")
	}
	for id, s := range before {
		if got := groupState(t, h, id); got != s {
			t.Errorf("user's group after the delete: %s, was %s", got, s)
		}
	}
}

// A Service switching from its own group to named groups, and back, as upstream: the named
// groups replace its own (SetSecurityGroups), which is deleted only once detached (the fake
// refuses to delete a group an NLB uses); back, its own group is made again and replaces the
// named ones, which stay as they were. A named group that carries the Service's ownership
// tags (its proof) is still the user's: it is never synced or deleted as the own group.
func TestNLBSwitchOwnAndNamedGroups(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	c := h.cloud(t, byoMode)
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "n1")
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	svc.UID = "uid-web"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	name := c.lb.name(svc)
	own := nlbGroups(t, h, name)
	if len(own) != 1 {
		t.Fatalf("NLB groups %v: want its own", own)
	}
	// The user's group proven the Service's by its tags, not by permission.
	tagged := h.fake.AddSecurityGroup("user-proved", "the user's", ownership.Of("byo", svc).Tags(),
		fakeaws.Rule{Protocol: "tcp", From: 443, To: 443, CIDR: "198.51.100.0/24"})
	was := groupState(t, h, tagged)

	svc.Annotations[annotations.Prefix+annotations.SecurityGroup] = tagged
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := nlbGroups(t, h, name); !slices.Equal(got, []string{tagged}) {
		t.Errorf("after naming %s: NLB groups %v", tagged, got)
	}
	if _, ok := h.fake.Group(own[0]); ok {
		t.Errorf("the Service's own group %s left after the switch", own[0])
	}
	if ok, evs := h.events.Await(svc, 2*time.Second, v1.EventTypeNormal, reasonNLBGroupsReplaced, annotations.Prefix+annotations.SecurityGroup, "were "+own[0]+", now "+tagged); !ok {
		t.Errorf("no Normal Event saying the own group was replaced by the named one: %v", evs)
	}
	w0 := h.fake.Writes()
	restarted, _ := h.cloud(t, byoMode).LoadBalancer()
	if _, err := restarted.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("restart after the switch: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}

	delete(svc.Annotations, annotations.Prefix+annotations.SecurityGroup)
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	back := nlbGroups(t, h, name)
	if len(back) != 1 || back[0] == tagged {
		t.Fatalf("switched back: NLB groups %v; want a new own group only", back)
	}
	if g, _ := h.fake.Group(back[0]); g.Name != nlbGroupName(name) {
		t.Errorf("switched back: group %s, want ccm's %s", g.Name, nlbGroupName(name))
	}
	if ok, evs := h.events.Await(svc, 2*time.Second, v1.EventTypeNormal, reasonNLBGroupsReplaced, annotations.Prefix+annotations.SecurityGroup+" is not set", "were "+tagged+", now "+back[0]); !ok {
		t.Errorf("no Normal Event saying the named group was replaced by the own one: %v", evs)
	}
	if got := groupState(t, h, tagged); got != was {
		t.Errorf("the user's group after the switch back: %s, was %s", got, was)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fake.Group(back[0]); ok {
		t.Errorf("own group left after the delete")
	}
	if got := groupState(t, h, tagged); got != was {
		t.Errorf("the user's group after the delete: %s, was %s", got, was)
	}
}

// A named group that does not exist, or that is neither the Service's nor allowed, stops the
// Service before anything is written, with an error naming the annotation (and the missing ID).
func TestNLBNamedGroupRefused(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	a := userGroup(h, "user-a")
	for _, tc := range []struct{ cfg, groups, want string }{
		{byoMode, a + ",sg-0000404", `security group "sg-0000404" does not exist`},
		{managedMode, a, a}, // not the Service's, not allowed: ownership.ErrNotOwned
	} {
		c := h.cloud(t, tc.cfg)
		lb, _ := c.LoadBalancer()
		svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + annotations.SecurityGroup: tc.groups})
		w0 := h.fake.Writes()
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, parityNodes(h, "n1"))
		if err == nil || !strings.Contains(err.Error(), annotations.Prefix+annotations.SecurityGroup) || !strings.Contains(err.Error(), tc.want) || h.fake.Writes() != w0 {
			t.Errorf("%s: %v, %d writes; want an error naming the annotation and %q, no write", tc.groups, err, h.fake.Writes()-w0, tc.want)
		}
		if tc.cfg == managedMode && !errors.Is(err, ownership.ErrNotOwned) {
			t.Errorf("%s: %v; want ErrNotOwned", tc.groups, err)
		}
		if _, _, _, ok := h.fake.NLBByName(c.lb.name(svc)); ok {
			t.Errorf("%s: NLB created", tc.groups)
		}
	}
}

// Without Managed mode the annotation is ignored, as upstream ignores it, with a Warning that
// says so; the NLB gets no group. In Managed mode, an NLB made without groups keeps none.
func TestNLBNamedGroupsIgnoredWithoutMode(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	a := userGroup(h, "user-a")
	lb, _ := h.cloud(t, "[Global]\nAllowedResourceNamespaces = ns\n").LoadBalancer()
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + annotations.SecurityGroup: a})
	svc.UID = "uid-web"
	nodes := parityNodes(h, "n1")
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	c := h.cloud(t, byoMode)
	if got := nlbGroups(t, h, c.lb.name(svc)); len(got) != 0 {
		t.Errorf("NLB groups %v without the mode; want none", got)
	}
	if ok, evs := h.events.Await(svc, 2*time.Second, "Warning", reasonUnusedAnnotation, "NLBSecurityGroupMode = Managed"); !ok {
		t.Errorf("no Warning saying the annotation needs the mode: %v", evs)
	}
	// Then the mode: AWS cannot give groups to this NLB; no group written (the fingerprint
	// tag alone changes with the mode), a Warning.
	managed, _ := c.LoadBalancer()
	ops0 := h.fake.Operations()
	if _, err := managed.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	ops := h.fake.Operations()
	for _, op := range []string{"elbv2:SetSecurityGroups", "ec2:CreateSecurityGroup", "elbv2:CreateLoadBalancer", "ec2:AuthorizeSecurityGroupIngress"} {
		if n := ops[op] - ops0[op]; n != 0 {
			t.Errorf("NLB without groups in Managed mode: %d %s; want none", n, op)
		}
	}
	w0 := h.fake.Writes()
	if _, err := managed.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("next sync: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}
	if ok, evs := h.events.Await(svc, 2*time.Second, "Warning", "created without security groups"); !ok {
		t.Errorf("no Warning saying the NLB cannot take groups: %v", evs)
	}
}

// The upstream CCM (HEAD) made the NLB in Managed mode with security-groups: ccm in the same
// mode takes it over with no create, no group made, no SetSecurityGroups, nothing written into
// the user's group, no Warning; the next sync writes nothing.
func TestUpstreamNLBWithNamedGroupsTakenOver(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	a := userGroup(h, "user-a")
	was := groupState(t, h, a)
	svc := migService(3, true)
	svc.Annotations[annotations.Prefix+annotations.SecurityGroup] = a
	u := h.upstreamOf(migCluster, svc, nodes)
	u.NLB, u.ManagedSG, u.BYOGroups = true, true, []string{a}
	addr := h.fake.SeedUpstream(u)
	lb, _ := h.cloud(t, managedMode+"AllowedResourceNamespaces = shop\n").LoadBalancer()
	ops0 := h.fake.Operations()
	st := ensureOK(t, lb, svc, nodes)
	ops := h.fake.Operations()
	d := func(op string) int { return ops[op] - ops0[op] }
	if c, del := servingChanges(ops); c != 0 || del != 0 || !strings.EqualFold(st.Ingress[0].Hostname, addr) {
		t.Errorf("%d creates, %d serving deletes, address %s (upstream's %s)", c, del, st.Ingress[0].Hostname, addr)
	}
	if d("ec2:CreateSecurityGroup") != 0 || d("elbv2:SetSecurityGroups") != 0 || d("ec2:DeleteSecurityGroup") != 0 {
		t.Errorf("takeover: CreateSecurityGroup %d, SetSecurityGroups %d, DeleteSecurityGroup %d; want none", d("ec2:CreateSecurityGroup"), d("elbv2:SetSecurityGroups"), d("ec2:DeleteSecurityGroup"))
	}
	if got := nlbGroups(t, h, fakeaws.UpstreamLBName(string(svc.UID))); !slices.Equal(got, []string{a}) {
		t.Errorf("NLB groups %v, want [%s]", got, a)
	}
	if got := groupState(t, h, a); got != was {
		t.Errorf("the user's group: %s, was %s", got, was)
	}
	for _, e := range h.events.On(svc) {
		if strings.HasPrefix(e, v1.EventTypeWarning) {
			t.Errorf("takeover: %s", e)
		}
	}
	w0 := h.fake.Writes()
	ensureOK(t, lb, svc, nodes)
	if h.fake.Writes() != w0 {
		t.Errorf("the sync after the takeover wrote %d", h.fake.Writes()-w0)
	}
	if err := lb.EnsureLoadBalancerDeleted(context.Background(), migCluster, svc); err != nil {
		t.Fatal(err)
	}
	if got := groupState(t, h, a); got != was {
		t.Errorf("the user's group after the delete: %s, was %s", got, was)
	}
}

// The Service's own group, once detached, may still be in use for a while (here: a rule
// referring to it, which EC2 answers with DependencyViolation as for lingering interfaces):
// the switch still succeeds, and a later sync finds the group again by its name and deletes
// it; after that a sync writes nothing.
func TestNLBDroppedOwnGroupDeletedLater(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	a := userGroup(h, "user-a")
	c := h.cloud(t, byoMode)
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "n1")
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	svc.UID = "uid-web"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	name := c.lb.name(svc)
	own := nlbGroups(t, h, name)[0]
	holder := h.fake.AddSecurityGroup("holder", "refers to the own group", nil, fakeaws.Rule{Protocol: "-1", SourceSG: own})

	svc.Annotations[annotations.Prefix+annotations.SecurityGroup] = a
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatalf("switch with the own group still in use: %v", err)
	}
	if got := nlbGroups(t, h, name); !slices.Equal(got, []string{a}) {
		t.Errorf("NLB groups %v, want [%s]", got, a)
	}
	if _, ok := h.fake.Group(own); !ok {
		t.Fatalf("own group %s deleted while in use", own)
	}
	if _, err := c.api.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(holder)}); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fake.Group(own); ok {
		t.Errorf("own group %s left once no longer in use", own)
	}
	w0 := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("next sync: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}
}

// security-groups that is not a list of group IDs ("foo") on an NLB: outside Managed mode the
// annotation is ignored (as upstream HEAD ignores it there) with the Warning, and the Service is
// served; in Managed mode it is refused naming the annotation, before any write. On a classic
// ELB it is refused in any mode.
func TestNLBMalformedNamedGroupsOnlyRefusedInManagedMode(t *testing.T) {
	for _, c := range []struct {
		typ     string
		refused bool
	}{{"nlb", false}, {"", true}} {
		o, err := annotations.Parse(tcpService("s", map[string]string{annotations.Prefix + annotations.Type: c.typ, annotations.Prefix + annotations.SecurityGroup: "foo"}))
		if (err != nil) != c.refused || (err != nil && !strings.Contains(err.Error(), annotations.Prefix+annotations.SecurityGroup)) {
			t.Errorf("type %q: %v, want refused %v", c.typ, err, c.refused)
		}
		if err == nil && o.NLBGroupIDErr == nil {
			t.Errorf("type %q: the malformed ID is not kept for Managed mode", c.typ)
		}
	}

	h := newHarness(t, "byo")
	ctx := context.Background()
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + annotations.SecurityGroup: "foo"})
	svc.UID = "uid-web"
	nodes := parityNodes(h, "n1")
	managed, _ := h.cloud(t, byoMode).LoadBalancer()
	w0 := h.fake.Writes()
	if _, err := managed.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+annotations.SecurityGroup) || !strings.Contains(err.Error(), `"foo"`) || h.fake.Writes() != w0 {
		t.Errorf("Managed mode: %v, %d writes; want an error naming the annotation and \"foo\", no write", err, h.fake.Writes()-w0)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	for range 2 { // provisioning at first
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
		if err != nil && !strings.Contains(err.Error(), "provisioning") && !strings.Contains(err.Error(), "retry") {
			t.Fatalf("without the mode: %v; want the Service served", err)
		}
	}
	if _, _, _, ok := h.fake.NLBByName(h.cloud(t, "").lb.name(svc)); !ok {
		t.Errorf("without the mode: no NLB")
	}
	if ok, evs := h.events.Await(svc, 2*time.Second, v1.EventTypeWarning, reasonUnusedAnnotation, "NLBSecurityGroupMode = Managed"); !ok {
		t.Errorf("no Warning saying the annotation needs the mode: %v", evs)
	}
}

// A Service naming its own group in security-groups (the group ccm made for it): the group is
// the user's from then on, as the docs say, and the Service's delete leaves it.
func TestNLBNamedOwnGroupNotDeletedWithService(t *testing.T) {
	h := newHarness(t, "byo")
	ctx := context.Background()
	c := h.cloud(t, byoMode)
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "n1")
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	svc.UID = "uid-web"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	own := nlbGroups(t, h, c.lb.name(svc))
	if len(own) != 1 {
		t.Fatalf("NLB groups %v: want its own", own)
	}
	svc.Annotations[annotations.Prefix+annotations.SecurityGroup] = own[0]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	ops0 := h.fake.Operations()
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := h.fake.NLBByName(c.lb.name(svc)); ok {
		t.Errorf("NLB left after the delete")
	}
	if _, ok := h.fake.Group(own[0]); !ok || h.fake.Operations()["ec2:DeleteSecurityGroup"] != ops0["ec2:DeleteSecurityGroup"] {
		t.Errorf("the named group %s deleted with the Service", own[0])
	}
}
