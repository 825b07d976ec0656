package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestNodeSelector(t *testing.T) {
	nodes := []*v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"env": "prod", "lb": ""}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"env": "dev", "lb": "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}
	for _, tc := range []struct {
		sel  string
		want []string
	}{
		{"", []string{"a", "b", "c"}},
		{"env=prod", []string{"a"}},
		{"lb", []string{"a", "b"}},
		{"lb=", []string{"a", "b"}},
		{" env = prod ", nil}, // upstream trims the item, not around "=": the key is "env "
		{"env=prod,lb", []string{"a"}},
		{"env=dev, lb=yes", []string{"b"}},
		{"env=prod=x", nil},
		{",,", []string{"a", "b", "c"}},
		{"zone=x", nil},
	} {
		var got []string
		for _, n := range selectNodes(nodes, parseNodeSelector(tc.sel)) {
			got = append(got, n.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("selector %q: %v, want %v", tc.sel, got, tc.want)
		}
	}
}

// Through gophercloud against the fake: [LoadBalancer] node-selector makes only the labelled
// Nodes members; the Service's annotation overrides it; an annotation change moves the members.
func TestNodeSelectorPicksMembers(t *testing.T) {
	f := newFake(t, fake.Options{})
	c, err := New(strings.NewReader(f.CloudConfig("node-selector = role=edge")))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*v1.Node
	for i, role := range []string{"edge", "edge", "worker"} {
		name, ip := fmt.Sprintf("sel-%d", i), fmt.Sprintf("10.0.7.%d", i+10)
		id := f.AddServer(fake.ServerSpec{Name: name, IPs: []string{ip}})
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": role}},
			Spec:   v1.NodeSpec{ProviderID: "openstack:///" + id},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}}})
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-sel", Annotations: map[string]string{}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	lb, _ := c.LoadBalancer()
	members := func() []string {
		for i := 0; i < 100; i++ {
			st, err := lb.EnsureLoadBalancer(context.Background(), "kubernetes", svc, nodes)
			if err == nil {
				svc.Status.LoadBalancer = *st
				break
			}
			time.Sleep(20 * time.Millisecond) // PENDING_CREATE
		}
		for _, l := range f.LoadBalancers() {
			if strings.HasSuffix(l.Name, "_ns_web") && len(l.Listeners) == 1 {
				return l.Listeners[0].Members
			}
		}
		return nil
	}
	if got := members(); !slices.Equal(got, []string{"10.0.7.10:30080", "10.0.7.11:30080"}) {
		t.Errorf("[LoadBalancer] node-selector role=edge: members %v", got)
	}
	svc.Annotations[annNodeSelector] = "role=worker"
	if got := members(); !slices.Equal(got, []string{"10.0.7.12:30080"}) {
		t.Errorf("annotation role=worker: members %v", got)
	}
	svc.Annotations[annNodeSelector] = ""
	if got := members(); len(got) != 3 {
		t.Errorf("an empty annotation selects every Node: members %v", got)
	}
}
