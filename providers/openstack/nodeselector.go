package openstack

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// annNodeSelector narrows the members to the Nodes carrying these labels, as upstream.
const annNodeSelector = annPrefix + "node-selector"

// parseNodeSelector reads upstream's selector form: comma-separated "key=value" (that value),
// "key" or "key=" (the label present, any value). Pure.
func parseNodeSelector(s string) map[string]string {
	out := map[string]string{}
	for _, item := range strings.Split(strings.TrimSpace(s), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(item), "=")
		if k != "" {
			out[k] = v
		}
	}
	return out
}

// selectNodes keeps the Nodes that carry every label of sel (any value where sel has none).
// An empty selector keeps them all. Pure.
func selectNodes(nodes []*v1.Node, sel map[string]string) []*v1.Node {
	if len(sel) == 0 {
		return nodes
	}
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n != nil && matchesLabels(n.Labels, sel) {
			out = append(out, n)
		}
	}
	return out
}

func matchesLabels(labels, sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || (v != "" && got != v) {
			return false
		}
	}
	return true
}

// membersOf is the Nodes that become svc's members: the Service's node-selector annotation, else
// [LoadBalancer] node-selector, as upstream (an annotation present but empty selects all). A
// selector that matches none of several Nodes is said once an hour: the load balancer then has
// no member, which is what upstream does too.
func (l *loadBalancers) membersOf(svc *v1.Service, nodes []*v1.Node) []*v1.Node {
	s, ok := svc.Annotations[annNodeSelector]
	if !ok {
		s = l.c.cfg.LoadBalancer.NodeSelector
	}
	out := selectNodes(nodes, parseNodeSelector(s))
	if len(out) == 0 && len(nodes) > 0 {
		l.c.events.Advise(svc, "NoMatchingNodes", fmt.Sprintf("node-selector %q matches none of the %d Nodes: the load balancer has no members", s, len(nodes)))
	}
	return out
}
