package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// backend-protocol ssl on an NLB with ssl-cert, as upstream: the TLS listeners (ssl-ports)
// forward to TLS target groups, the others stay TCP. Turned on and off on a serving NLB, the
// protocol (which ELBv2 cannot change on a target group) goes through a new target group,
// filled with the members first; the listener is switched to it in place once a target is
// healthy, and only then is the old group deleted. No listener is ever deleted or created, and
// a sync with nothing changed writes nothing.
func TestNLBBackendSSLSwitchesTargetGroups(t *testing.T) {
	h := newHarness(t, "nlbtls")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "tls-a", "tls-b")
	ann := map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x",
		annotations.Prefix + "ssl-ports": "443"}
	svc := tcpService("tls", ann)
	ensure := func() error { _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); return err }
	// state: each listener as "protocol/port->target protocol(target group name, targets)".
	state := func() []string {
		_, ls, tgs, _ := h.fake.NLBByName(c.lb.name(svc))
		var out []string
		for i, l := range ls {
			out = append(out, fmt.Sprintf("%s/%d->%s(%s,%d)", l.Protocol, l.Port, tgs[i].Protocol, tgs[i].Name, len(tgs[i].Targets)))
		}
		slices.Sort(out)
		return out
	}
	tgName := func(proto string, nodePort int) string {
		return tgNames.Name("nlbtls", "ns/tls", fmt.Sprintf("%s%d", proto, nodePort))
	}
	tcp80 := fmt.Sprintf("TCP/80->TCP(%s,2)", tgName("tcp", 30080))
	tls443 := func(proto string) string {
		return fmt.Sprintf("TLS/443->%s(%s,2)", map[string]string{"tcp": "TCP", "tls": "TLS"}[proto], tgName(proto, 30443))
	}
	if err := ensure(); err != nil {
		t.Fatal(err)
	}
	if got, want := state(), []string{tcp80, tls443("tcp")}; !slices.Equal(got, want) {
		t.Fatalf("without backend-protocol: %v, want %v", got, want)
	}

	for _, step := range []struct{ backend, from, to string }{{"ssl", "tcp", "tls"}, {"tcp", "tls", "tcp"}} {
		ann[annotations.Prefix+"backend-protocol"] = step.backend
		// The new group's targets are not healthy yet: the listener keeps the old group.
		h.fake.SetTargetsInitial(true)
		ops := h.fake.Operations()
		err := ensure()
		var retry *api.RetryError
		if !errors.As(err, &retry) {
			t.Fatalf("backend %s, new targets initial: %v, want a RetryError", step.backend, err)
		}
		if got, want := state(), []string{tcp80, tls443(step.from)}; !slices.Equal(got, want) {
			t.Errorf("backend %s, new targets initial: %v, want %v (the old group still serving)", step.backend, got, want)
		}
		var newTG bool
		for _, tg := range h.fake.TargetGroups() {
			if tg.Name == tgName(step.to, 30443) {
				newTG = len(tg.Targets) == 2
			}
		}
		if !newTG {
			t.Errorf("backend %s: the new target group %s with both targets is missing", step.backend, tgName(step.to, 30443))
		}
		// Healthy: switched in place, the old group deleted.
		h.fake.SetTargetsInitial(false)
		if err := ensure(); err != nil {
			t.Fatalf("backend %s: %v", step.backend, err)
		}
		after := h.fake.Operations()
		if got, want := state(), []string{tcp80, tls443(step.to)}; !slices.Equal(got, want) {
			t.Errorf("backend %s: %v, want %v", step.backend, got, want)
		}
		d := func(op string) int { return after[op] - ops[op] }
		if d("elbv2:CreateTargetGroup") != 1 || d("elbv2:ModifyListener") != 1 || d("elbv2:DeleteTargetGroup") != 1 ||
			d("elbv2:DeleteListener") != 0 || d("elbv2:CreateListener") != 0 || d("elbv2:RegisterTargets") != 1 {
			t.Errorf("backend %s: CreateTargetGroup %d, RegisterTargets %d, ModifyListener %d, DeleteTargetGroup %d, DeleteListener %d, CreateListener %d; want 1, 1, 1, 1, 0, 0",
				step.backend, d("elbv2:CreateTargetGroup"), d("elbv2:RegisterTargets"), d("elbv2:ModifyListener"), d("elbv2:DeleteTargetGroup"),
				d("elbv2:DeleteListener"), d("elbv2:CreateListener"))
		}
		if n := len(h.fake.TargetGroups()); n != 2 {
			t.Errorf("backend %s: %d target groups, want 2", step.backend, n)
		}
		w0 := h.fake.Writes()
		if err := ensure(); err != nil || h.fake.Writes() != w0 {
			t.Errorf("backend %s, unchanged sync: %v, %d writes; want none", step.backend, err, h.fake.Writes()-w0)
		}
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fake.TargetGroups()); n != 0 {
		t.Errorf("after delete: %d target groups left", n)
	}
}
