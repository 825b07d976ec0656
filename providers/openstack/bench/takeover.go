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

// takeover is the cost of taking over n load balancers the upstream CCM made (fake.SeedUpstream:
// its names, tags, listeners, pools, members, floating IPs and, with security groups, its
// per-Service groups on the nodes' ports; every second Service is dual-stack, served by
// upstream on one IPv4 load balancer), measured in-process at the fake: a fresh ccm
// ensures every Service once (the takeover), then once more. Creates are of load balancers,
// listeners, pools and floating IPs; serving deletes of load balancers, listeners, pools,
// members, monitors and floating IPs; changed addresses compare the status with upstream's.
type takeover struct {
	LBs                                      int
	Creates, ServingDeletes, ChangedAddrs    int
	Writes, Reads                            int
	NextWrites, NextReads                    int
	ByOp                                     map[string]int
	UpstreamGroupsLeft, UpstreamGroupsSeeded int
}

func measureTakeover(ctx context.Context, n int, withSG bool) (*takeover, error) {
	f := fake.New(fake.Options{})
	if _, err := f.Start(); err != nil {
		return nil, err
	}
	defer f.Close()
	extra := []string{"floating-network-id = " + fake.PublicNetworkID}
	if withSG {
		extra = append(extra, "manage-security-groups = true")
	}
	c, err := openstack.New(strings.NewReader(f.CloudConfig(extra...)))
	if err != nil {
		return nil, err
	}
	c.UseClusterName("bench")
	var nodes []*v1.Node
	var portIDs []string
	members := map[string]string{}
	for i := range 3 {
		name, ip := fmt.Sprintf("takeover-node-%d", i), fmt.Sprintf("10.0.9.%d", i+10)
		id := f.AddServer(fake.ServerSpec{Name: name, IPs: []string{ip}})
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "openstack:///" + id},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}}})
		portIDs, members[name] = append(portIDs, f.ServerPortID(id)), ip
	}
	t := &takeover{LBs: n}
	svcs, addrs := make([]*v1.Service, n), make([]string, n)
	for i := range svcs {
		name := fmt.Sprintf("upstream-%04d", i)
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, UID: types.UID("0b7c3a4e-" + name), Annotations: map[string]string{}},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
				Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		u := fake.UpstreamService{Cluster: "bench", Namespace: svc.Namespace, Name: name, UID: string(svc.UID), Nodes: members,
			Ports: []fake.UpstreamPort{{Protocol: "TCP", Port: 80, NodePort: 30080}}}
		if withSG {
			u.SecurityGroupPorts = portIDs
			t.UpstreamGroupsSeeded++
		}
		id, addr := f.SeedUpstream(u)
		svc.Annotations["loadbalancer.openstack.org/load-balancer-id"] = id
		svc.Annotations["loadbalancer.openstack.org/load-balancer-address"] = addr
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
		if i%2 == 1 {
			// Dual-stack as upstream served it, on one load balancer of the first family:
			// the takeover creates no second one (singlefamily.go in the provider).
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, v1.IPv6Protocol)
		}
		svcs[i], addrs[i] = svc, addr
	}
	lb, _ := c.LoadBalancer()
	ensureAll := func() (writes, reads int, byOp map[string]int, err error) {
		before, w0 := f.Calls(), f.Writes()
		for i, svc := range svcs {
			st, err := lb.EnsureLoadBalancer(ctx, "bench", svc, nodes)
			if err != nil {
				return 0, 0, nil, fmt.Errorf("ensuring %s: %w", svc.Name, err)
			}
			if len(st.Ingress) != 1 || st.Ingress[0].IP != addrs[i] {
				t.ChangedAddrs++
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
	if t.Writes, t.Reads, t.ByOp, err = ensureAll(); err != nil {
		return nil, err
	}
	for op, v := range t.ByOp {
		switch op {
		case "octavia.CreateLoadBalancer", "octavia.CreateListener", "octavia.CreatePool", "neutron.CreateFloatingIP":
			t.Creates += v
		case "octavia.DeleteLoadBalancer", "octavia.DeleteListener", "octavia.DeletePool", "octavia.DeleteMember",
			"octavia.DeleteHealthMonitor", "neutron.DeleteFloatingIP":
			t.ServingDeletes += v
		}
	}
	if t.NextWrites, t.NextReads, _, err = ensureAll(); err != nil {
		return nil, err
	}
	for _, g := range f.SecurityGroups() {
		if strings.HasPrefix(g.Name, "lb-sg-0b7c3a4e-") {
			t.UpstreamGroupsLeft++
		}
	}
	return t, nil
}

func (t *takeover) per(v int) float64 { return float64(v) / float64(t.LBs) }

func (t *takeover) String() string {
	return fmt.Sprintf("%d LBs made by the upstream CCM: %d creates, %d deletes of serving resources, %d changed addresses; takeover %d writes (%.2f per LB), %.2f reads per LB; next sync %d writes, %.2f reads per LB; upstream groups left %d of %d",
		t.LBs, t.Creates, t.ServingDeletes, t.ChangedAddrs, t.Writes, t.per(t.Writes), t.per(t.Reads), t.NextWrites, t.per(t.NextReads), t.UpstreamGroupsLeft, t.UpstreamGroupsSeeded)
}

// rows are the report's lines for t; sg names the configuration.
func (t *takeover) rows(sg string) []benchreport.Row {
	key := "provider.takeover"
	if sg != "" {
		key += "_sg"
	}
	scen := fmt.Sprintf("takeover of %d LBs made by the upstream CCM%s (in-process)", t.LBs, sg)
	zero := t.Creates == 0 && t.ServingDeletes == 0 && t.ChangedAddrs == 0 && t.UpstreamGroupsLeft == 0
	return []benchreport.Row{
		{Key: key, Scenario: scen, Measure: "creates / serving deletes / changed addresses", Value: float64(t.Creates + t.ServingDeletes + t.ChangedAddrs),
			Text: fmt.Sprintf("%d / %d / %d", t.Creates, t.ServingDeletes, t.ChangedAddrs), Target: "0 / 0 / 0", Met: benchreport.Met(zero)},
		{Key: key + "_reads", Scenario: scen, Measure: "writes / reads per LB during the takeover", Value: t.per(t.Reads),
			Text: fmt.Sprintf("%.2f / %.2f", t.per(t.Writes), t.per(t.Reads))},
	}
}
