package servicecontroller

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// NeedsSync reports whether an update from old to cur can change cur's load balancer, for the
// fields the library compares in v0.37: whether a load balancer is wanted, source ranges,
// ports (name, protocol, port, nodePort, targetPort, appProtocol), session affinity and its
// config, loadBalancerIP, externalIPs, annotations, UID, externalTrafficPolicy,
// healthCheckNodePort and the number of IP families. Anything else (labels, finalizers, status,
// a resync's identical copy) does not sync.
func (c Classes) NeedsSync(old, cur *v1.Service) bool {
	wantOld, wantCur := c.Wants(old), c.Wants(cur)
	if !wantOld && !wantCur {
		return false
	}
	if wantOld != wantCur {
		return true
	}
	o, n := &old.Spec, &cur.Spec
	return !reflect.DeepEqual(o.LoadBalancerSourceRanges, n.LoadBalancerSourceRanges) ||
		!portsEqual(o.Ports, n.Ports) ||
		o.SessionAffinity != n.SessionAffinity ||
		!reflect.DeepEqual(o.SessionAffinityConfig, n.SessionAffinityConfig) ||
		o.LoadBalancerIP != n.LoadBalancerIP ||
		!slicesEqual(o.ExternalIPs, n.ExternalIPs) ||
		!reflect.DeepEqual(old.Annotations, cur.Annotations) ||
		old.UID != cur.UID ||
		o.ExternalTrafficPolicy != n.ExternalTrafficPolicy ||
		o.HealthCheckNodePort != n.HealthCheckNodePort ||
		len(o.IPFamilies) != len(n.IPFamilies) // a family can be added or dropped, not changed
}

func portsEqual(a, b []v1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Protocol != y.Protocol || x.Port != y.Port || x.NodePort != y.NodePort ||
			x.TargetPort != y.TargetPort || !reflect.DeepEqual(x.AppProtocol, y.AppProtocol) {
			return false
		}
	}
	return true
}

// slicesEqual treats nil and empty alike, as a length-then-items comparison does.
func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
