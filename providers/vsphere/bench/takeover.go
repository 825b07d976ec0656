package main

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/providers/vsphere"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

// takeover is the cost of taking over n Services served before ccm, measured in-process at the
// simulator's gate. Upstream's vSphere CCM serves load balancers only through NSX-T (not in
// vCenter, not managed by ccm); without it the addresses came from MetalLB or kube-vip's cloud
// provider and upstream left nothing in vCenter. So the takeover state is n Services whose
// status holds an address of the pool's range, and no record. A fresh ccm ensures every Service
// (the takeover), then once more. Creates are addresses handed out that no Service served
// before (a load balancer here is an address a speaker announces); serving deletes are record
// deletes; changed addresses compare the status with the seeded one.
type takeover struct {
	LBs                                   int
	Creates, ServingDeletes, ChangedAddrs int
	Records                               int // records written: ccm's bookkeeping of the kept addresses
	Writes, Reads                         int
	NextWrites, NextReads                 int
	ByOp                                  map[string]int
}

const opCreateTag, opDeleteTag = "POST /rest/com/vmware/cis/tagging/tag", "DELETE /rest/com/vmware/cis/tagging/tag"

func measureTakeover(ctx context.Context, n int) (*takeover, error) {
	const user, password = "takeover@vsphere.local", "takeover-password"
	s, err := sim.Start(ctx, sim.Options{User: user, Password: password, Datacenters: 1})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg := fmt.Sprintf("[Global]\nserver = %s\nport = %s\nuser = %q\npassword = %q\ninsecure-flag = 1\ndatacenters = %q\n\n[Pool \"metallb-range\"]\ncidr = 10.128.0.0/16\n",
		s.Host(), s.Port(), user, password, sim.DatacenterName(0))
	c, err := vsphere.New(strings.NewReader(cfg))
	if err != nil {
		return nil, err
	}
	c.UseClusterName("bench")
	var nodes []*v1.Node
	for i := range 3 {
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("takeover-node-%d", i)}})
	}
	svcs, addrs := make([]*v1.Service, n), make([]string, n)
	for i := range svcs {
		name := fmt.Sprintf("served-%04d", i)
		addrs[i] = fmt.Sprintf("10.128.%d.%d", 100+i/250, i%250+1) // MetalLB's range, above where ccm allocates first
		svcs[i] = &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID("7d4e2a10-" + name),
			Annotations: map[string]string{"metallb.universe.tf/ip-allocated-from-pool": "default"}},
			Spec:   v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}},
			Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: addrs[i]}}}}}
	}
	lb, _ := c.LoadBalancer()
	t := &takeover{LBs: n}
	ensureAll := func() (simcontrol.Calls, error) {
		c0 := s.Calls()
		for i, svc := range svcs {
			st, err := lb.EnsureLoadBalancer(ctx, "bench", svc, nodes)
			if err != nil {
				return simcontrol.Calls{}, fmt.Errorf("ensuring %s: %w", svc.Name, err)
			}
			if len(st.Ingress) != 1 || st.Ingress[0].IP != addrs[i] {
				t.ChangedAddrs++
			}
			svc.Status.LoadBalancer = *st
		}
		return sub(s.Calls(), c0), nil
	}
	first, err := ensureAll()
	if err != nil {
		return nil, err
	}
	t.Writes, t.Reads, t.ByOp = first.Writes, first.Total-first.Writes, first.PerOp
	t.Records, t.ServingDeletes = first.PerOp[opCreateTag], first.PerOp[opDeleteTag]
	next, err := ensureAll()
	if err != nil {
		return nil, err
	}
	t.NextWrites, t.NextReads = next.Writes, next.Total-next.Writes
	t.ServingDeletes += next.PerOp[opDeleteTag]
	recs, err := s.TagsInCategory(ctx, sim.LBCategory)
	if err != nil {
		return nil, err
	}
	seeded := map[string]bool{}
	for _, a := range addrs {
		seeded[a] = true
	}
	for _, desc := range recs {
		for _, a := range recordIPs(desc) {
			if !seeded[a] {
				t.Creates++
			}
		}
	}
	if len(recs) != n {
		return nil, fmt.Errorf("%d records after the takeover of %d Services", len(recs), n)
	}
	return t, nil
}

// recordIPs are the addresses in a record's description (JSON with an "ips" list), read
// without the provider's parser so a parser bug cannot hide a new address.
func recordIPs(desc string) []string {
	_, rest, ok := strings.Cut(desc, `"ips":[`)
	if !ok {
		return nil
	}
	list, _, _ := strings.Cut(rest, "]")
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.Trim(a, `" `); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func (t *takeover) per(v int) float64 { return float64(v) / float64(t.LBs) }

func (t *takeover) String() string {
	return fmt.Sprintf("%d Services served before ccm (MetalLB or kube-vip, no record): %d new addresses, %d record deletes, %d changed addresses; takeover %d writes (%.2f per LB: %d records), %.2f reads per LB; next sync %d writes, %.2f reads per LB",
		t.LBs, t.Creates, t.ServingDeletes, t.ChangedAddrs, t.Writes, t.per(t.Writes), t.Records, t.per(t.Reads), t.NextWrites, t.per(t.NextReads))
}

// rows are the report's lines for t.
func (t *takeover) rows() []benchreport.Row {
	scen := fmt.Sprintf("takeover of %d Services served before ccm (in-process)", t.LBs)
	zero := t.Creates == 0 && t.ServingDeletes == 0 && t.ChangedAddrs == 0
	return []benchreport.Row{
		{Key: "provider.takeover", Scenario: scen, Measure: "new addresses / record deletes / changed addresses", Value: float64(t.Creates + t.ServingDeletes + t.ChangedAddrs),
			Text: fmt.Sprintf("%d / %d / %d", t.Creates, t.ServingDeletes, t.ChangedAddrs), Target: "0 / 0 / 0", Met: benchreport.Met(zero)},
		{Key: "provider.takeover_reads", Scenario: scen, Measure: "writes / reads per LB during the takeover", Value: t.per(t.Reads),
			Text: fmt.Sprintf("%.2f / %.2f", t.per(t.Writes), t.per(t.Reads))},
		{Key: "provider.takeover_next", Scenario: scen, Measure: "writes / reads per LB of the next sync", Value: float64(t.NextWrites),
			Text: fmt.Sprintf("%d / %.2f", t.NextWrites, t.per(t.NextReads)), Target: "0 writes", Met: benchreport.Met(t.NextWrites == 0)},
	}
}
