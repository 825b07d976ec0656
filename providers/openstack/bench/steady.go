package main

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/providers/openstack"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// steady is the cost of keeping n unchanged load balancers, measured in-process against the
// fake (no control plane): every Service ensured by a fresh process (a restart), then again by
// the same process (a periodic resync). Counted at the fake: writes, and reads (every other
// call but Keystone's token requests) per load balancer.
type steady struct {
	LBs                         int
	RestartWrites, RestartReads int
	ResyncWrites, ResyncReads   int
	RestartByOp, ResyncByOp     map[string]int
}

func measureSteady(ctx context.Context, n int, extra ...string) (*steady, error) {
	f := fake.New(fake.Options{})
	if _, err := f.Start(); err != nil {
		return nil, err
	}
	defer f.Close()
	conf := f.CloudConfig(append([]string{"floating-network-id = " + fake.PublicNetworkID}, extra...)...)
	newCloud := func() (*openstack.Cloud, error) {
		c, err := openstack.New(strings.NewReader(conf))
		if err != nil {
			return nil, err
		}
		c.UseClusterName("bench")
		return c, nil
	}
	var nodes []*v1.Node
	for i := range 3 {
		name, ip := fmt.Sprintf("steady-node-%d", i), fmt.Sprintf("10.0.9.%d", i+10)
		id := f.AddServer(fake.ServerSpec{Name: name, IPs: []string{ip}})
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "openstack:///" + id},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}}})
	}
	svcs := make([]*v1.Service, n)
	for i := range svcs {
		name := fmt.Sprintf("steady-%04d", i)
		svcs[i] = &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
				Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	}
	ensureAll := func(c *openstack.Cloud) (writes, reads int, byOp map[string]int, err error) {
		lb, _ := c.LoadBalancer()
		before, w0 := f.Calls(), f.Writes()
		for _, svc := range svcs {
			st, err := lb.EnsureLoadBalancer(ctx, "bench", svc, nodes)
			if err != nil {
				return 0, 0, nil, fmt.Errorf("ensuring %s: %w", svc.Name, err)
			}
			svc.Status.LoadBalancer = *st
		}
		byOp = map[string]int{}
		for op, v := range f.Calls() {
			if d := v - before[op]; d > 0 && op != "keystone.CreateToken" {
				byOp[op] = d
				reads += d
			}
		}
		writes = f.Writes() - w0
		return writes, reads - writes, byOp, nil
	}
	first, err := newCloud()
	if err != nil {
		return nil, err
	}
	if _, _, _, err := ensureAll(first); err != nil {
		return nil, err
	}
	s := &steady{LBs: n}
	restarted, err := newCloud()
	if err != nil {
		return nil, err
	}
	if s.RestartWrites, s.RestartReads, s.RestartByOp, err = ensureAll(restarted); err != nil {
		return nil, err
	}
	if s.ResyncWrites, s.ResyncReads, s.ResyncByOp, err = ensureAll(restarted); err != nil {
		return nil, err
	}
	return s, nil
}

// rows are the report's lines for s; sg names the configuration.
func (s *steady) rows(sg string) []benchreport.Row {
	per := func(v int) float64 { return float64(v) / float64(s.LBs) }
	row := func(key, scenario string, writes, reads int) benchreport.Row {
		return benchreport.Row{Key: key, Scenario: fmt.Sprintf("%s, %d unchanged LBs%s (in-process)", scenario, s.LBs, sg),
			Measure: "writes / reads per LB", Value: per(reads), Text: fmt.Sprintf("%d / %.2f", writes, per(reads)),
			Target: "0 / <= ~1", Met: benchreport.Met(writes == 0 && per(reads) <= 1.2)}
	}
	key := "provider.steady"
	if sg != "" {
		key += "_sg"
	}
	return []benchreport.Row{
		row(key+"_restart", "restart", s.RestartWrites, s.RestartReads),
		row(key+"_resync", "periodic resync", s.ResyncWrites, s.ResyncReads),
	}
}
