package main

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/simcontrol"
)

func TestPlanOrphansReplaysAndCoversEveryRole(t *testing.T) {
	for _, sz := range []struct{ services, kills int }{{6, 2}, {20, 4}, {3, 1}} {
		for _, seed := range []int64{1, 2, 42, 1732456789123456789} {
			p := planOrphans(seed, sz.services, sz.kills)
			if !reflect.DeepEqual(p, planOrphans(seed, sz.services, sz.kills)) {
				t.Fatalf("seed %d: two plans from one seed", seed)
			}
			all := append(append(append([]string(nil), p.orphaned()...), p.Live...), []string{}...)
			sort.Strings(all)
			want := append([]string(nil), p.Services...)
			sort.Strings(want)
			if !reflect.DeepEqual(all, want) {
				t.Errorf("seed %d: roles %v, want every Service once: %v", seed, all, want)
			}
			if len(p.Deleted) < 2 || len(p.Recreated) < 1 || len(p.ClusterIP) < 1 || len(p.Live) < 1 {
				t.Errorf("seed %d, %d Services: deleted %v, made again %v, ClusterIP %v, live %v", seed, sz.services, p.Deleted, p.Recreated, p.ClusterIP, p.Live)
			}
			if len(p.Churn.Kills) != min(sz.kills, len(p.Churn.Ops)) {
				t.Errorf("seed %d: %d kills, want %d", seed, len(p.Churn.Kills), sz.kills)
			}
			for i, op := range p.Churn.Ops {
				if op.Kind != opUpdate || !contains(p.Services, op.Service) || op.Port < 1000 || op.Port >= 2000 {
					t.Errorf("seed %d op %d: %+v, want a port change of a plan Service", seed, i, op)
				}
			}
			for i, k := range p.Churn.Kills {
				if k.AfterOp < 0 || k.AfterOp >= len(p.Churn.Ops) || (i > 0 && k.AfterOp < p.Churn.Kills[i-1].AfterOp) {
					t.Errorf("seed %d kill %d: after op %d of %d", seed, i, k.AfterOp, len(p.Churn.Ops))
				}
			}
		}
	}
	a, b := planOrphans(1, 6, 2), planOrphans(2, 6, 2)
	if reflect.DeepEqual(a.Churn, b.Churn) {
		t.Error("seeds 1 and 2 gave the same churn")
	}
}

func TestIsDeleteOp(t *testing.T) {
	for op, want := range map[string]bool{
		"elb:DeleteLoadBalancer":                                               true,
		"elbv2:DeregisterTargets":                                              true,
		"ec2:RevokeSecurityGroupIngress":                                       true,
		"ec2:DescribeSecurityGroups":                                           false,
		"elb:CreateLoadBalancerListeners":                                      false,
		"neutron.DeleteFloatingIP":                                             true,
		"octavia.DeleteLoadBalancer":                                           true,
		"octavia.ListLoadBalancers":                                            false,
		"keystone.CreateToken":                                                 false,
		"DELETE /rest/com/vmware/cis/tagging/tag":                              true,
		"POST /rest/com/vmware/cis/tagging/tag":                                false,
		"DELETE /rest/com/vmware/cis/session":                                  false, // logout
		"POST /rest/com/vmware/cis/tagging/tag-association?~action=detach":     true,
		"POST /rest/com/vmware/cis/tagging/tag?~action=list-tags-for-category": false,
		"Destroy_Task":                                                         true,
		"DestroyView":                                                          false,
		"DestroyPropertyFilter":                                                false,
		"DestroyPropertyCollector":                                             false,
		"RetrievePropertiesEx":                                                 false,
	} {
		if got := isDeleteOp(op); got != want {
			t.Errorf("isDeleteOp(%q) = %v, want %v", op, got, want)
		}
	}
}

func TestCollectedProblems(t *testing.T) {
	p := orphanPlan{Deleted: []string{"d"}, Recreated: []string{"r"}, ClusterIP: []string{"c"}, Live: []string{"l"}}
	lb := func(svc, name string) simcontrol.Resource {
		return simcontrol.Resource{Kind: "loadbalancer", Name: name, Service: "ns/" + svc}
	}
	sg := func(svc, name string) simcontrol.Resource {
		return simcontrol.Resource{Kind: "security-group", Name: name, Service: "ns/" + svc}
	}
	before := []simcontrol.Resource{lb("d", "lb-d"), sg("d", "sg-d"), lb("r", "lb-r"), sg("r", "sg-r1"), lb("c", "lb-c"), lb("l", "lb-l"), sg("l", "sg-l")}
	collected := []simcontrol.Resource{lb("r", "lb-r"), sg("r", "sg-r2"), lb("l", "lb-l"), sg("l", "sg-l")}
	for _, tc := range []struct {
		name  string
		after []simcontrol.Resource
		want  []string // substrings, one per problem
	}{
		{"collected", collected, nil},
		{"nothing done", before, []string{"ns/d (orphaned) still has loadbalancer lb-d, security-group sg-d", "ns/c (orphaned) still has loadbalancer lb-c"}},
		{"a group of a deleted Service left", append(append([]simcontrol.Resource(nil), collected...), sg("d", "sg-d")), []string{"ns/d (orphaned) still has security-group sg-d"}},
		{"the live one's group replaced", []simcontrol.Resource{lb("r", "lb-r"), sg("r", "sg-r2"), lb("l", "lb-l"), sg("l", "sg-l2")}, []string{"ns/l (live) had"}},
		{"the live one lost its load balancer", []simcontrol.Resource{lb("r", "lb-r"), sg("r", "sg-r2"), sg("l", "sg-l")}, []string{"ns/l (live) had"}},
		{"the predecessor's group left", append(append([]simcontrol.Resource(nil), collected...), sg("r", "sg-r1")), []string{"ns/r (made again) has 2 security-group, its predecessor had 1"}},
		{"made again without a load balancer", []simcontrol.Resource{lb("l", "lb-l"), sg("l", "sg-l")}, []string{"ns/r (made again) has 0 load balancers"}},
		{"an empty listing is no collection", nil, []string{"ns/l (live) had", "ns/r (made again) has 0 load balancers"}},
	} {
		got := collectedProblems("ns", p, before, tc.after)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d problems %q, want %d", tc.name, len(got), got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: problem %d = %q, want it to say %q", tc.name, i, got[i], w)
			}
		}
	}
	if n := orphanLBs("ns", p, before); n != 3 {
		t.Errorf("orphanLBs = %d, want 3", n)
	}
	if m := missing(before, collected); len(m) != 4 {
		t.Errorf("missing = %v, want 4 (lb-d, sg-d, sg-r1, lb-c)", m)
	}
}

func TestMetricSample(t *testing.T) {
	body := "# HELP ccm_orphaned_load_balancers x\n# TYPE ccm_orphaned_load_balancers gauge\n" +
		"ccm_orphaned_load_balancers{provider=\"aws\"} 4\nccm_orphaned_load_balancers_deleted_total{provider=\"aws\"} 2\n"
	if v, ok, err := metricSample(body, gaugeSeries); err != nil || !ok || v != 4 {
		t.Errorf("gauge = %v %v %v, want 4 (not the counter's line too)", v, ok, err)
	}
	if v, ok, err := metricSample(body, deletedSeries); err != nil || !ok || v != 2 {
		t.Errorf("counter = %v %v %v", v, ok, err)
	}
	// Absent (no round finished yet) is not 0.
	if _, ok, err := metricSample("# HELP ccm_orphaned_load_balancers x\n", gaugeSeries); ok || err != nil {
		t.Errorf("an absent gauge reads as present (%v) or fails (%v)", ok, err)
	}
	if _, _, err := metricSample("ccm_orphaned_load_balancers{provider=\"aws\"} x\n", gaugeSeries); err == nil {
		t.Error("an unreadable sample must be an error")
	}
}

func TestParseGC(t *testing.T) {
	out := `LOAD BALANCER                       SERVICE       UID                                   VERDICT
kube_service_testcluster_orphans_o-0  orphans/o-0   6b1c0e9e-0000-4000-8000-000000000001  orphan: would be deleted
kube_service_testcluster_orphans_o-3  orphans/o-3   -                                     kept (its Service wants it)
2 load balancers of cluster testcluster, 1 orphaned; dry run: nothing deleted
`
	g, err := parseGC(out)
	if err != nil {
		t.Fatal(err)
	}
	if g.Total != 2 || g.Orphaned != 1 || !g.DryRun ||
		!reflect.DeepEqual(g.Verdicts, map[string][]string{"orphans/o-0": {"orphan: would be deleted"}, "orphans/o-3": {"kept (its Service wants it)"}}) {
		t.Errorf("parsed %+v", g)
	}
	deleted := strings.Replace(out, "; dry run: nothing deleted", ", 1 deleted", 1)
	if g, err := parseGC(deleted); err != nil || g.DryRun {
		t.Errorf("a real run reads as a dry run: %+v %v", g, err)
	}
	for name, bad := range map[string]string{
		"no table":        "listing the load balancers of cluster x (nothing deleted): denied\n",
		"rows != summary": strings.Replace(out, "2 load balancers", "3 load balancers", 1),
		"no summary":      strings.Replace(out, "2 load balancers of cluster testcluster, 1 orphaned; dry run: nothing deleted\n", "", 1),
	} {
		if _, err := parseGC(bad); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestCallDelta(t *testing.T) {
	before := simcontrol.Calls{PerOp: map[string]int{"a": 1, "b": 2}}
	after := simcontrol.Calls{PerOp: map[string]int{"a": 1, "b": 5, "c:DeleteX": 2}}
	d := callDelta(before, after)
	if !reflect.DeepEqual(d, map[string]int{"b": 3, "c:DeleteX": 2}) {
		t.Fatalf("delta %v", d)
	}
	if n := sumOps(d, nil, isDeleteOp); n != 2 {
		t.Errorf("deletes %d", n)
	}
	if n := sumOps(d, []string{"b"}, nil); n != 3 {
		t.Errorf("b %d", n)
	}
	if s := formatOps(d, nil, 1); s != "b 3, … 1 more" {
		t.Errorf("formatOps = %q", s)
	}
}
