package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// planELB is the difference, nothing more: each table row changes one thing in an ELB that
// is otherwise as desired.
func TestPlanELB(t *testing.T) {
	want := func() *desired {
		return &desired{Scheme: "internet-facing", Subnets: []string{"subnet-a", "subnet-b"}, Listeners: []string{"TCP:80:TCP:30080:", "TCP:443:TCP:30443:"},
			HealthCheck: "TCP:30080", HC: hcOptions{Interval: 10, Timeout: 5, Healthy: 2, Unhealthy: 6}, groupIDs: []string{"sg-own"}}
	}
	matching := func() observedELB {
		w := want()
		d := &elbtypes.LoadBalancerDescription{Scheme: aws.String(w.Scheme), Subnets: slices.Clone(w.Subnets), SecurityGroups: []string{"sg-own"},
			HealthCheck: &elbtypes.HealthCheck{Target: aws.String(w.HealthCheck), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)},
			Instances:   []elbtypes.Instance{{InstanceId: aws.String("i-1")}, {InstanceId: aws.String("i-2")}}}
		for _, s := range w.Listeners {
			l := listenerOf(s)
			d.ListenerDescriptions = append(d.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &l})
		}
		return observedELB{desc: d, attrs: newELBAttrs}
	}
	members := []string{"i-1", "i-2"}
	for _, tc := range []struct {
		name    string
		want    func(*desired)
		have    func(*observedELB)
		members []string
		check   func(elbPlan) bool
		repair  string // a part of one repair phrase; "" for none
	}{
		{name: "as desired", check: func(p elbPlan) bool { return p.empty() && len(p.repairs) == 0 }},
		{name: "listener deleted by hand", have: func(o *observedELB) { o.desc.ListenerDescriptions = o.desc.ListenerDescriptions[1:] },
			check: func(p elbPlan) bool {
				return slices.Equal(p.addListeners, []string{"TCP:80:TCP:30080:"}) && len(p.deleteListeners) == 0
			}, repair: "listener TCP/80 was missing"},
		{name: "listener port changed", want: func(d *desired) { d.Listeners[1] = "TCP:8443:TCP:30443:" },
			check: func(p elbPlan) bool {
				return slices.Equal(p.deleteListeners, []int32{443}) && slices.Equal(p.addListeners, []string{"TCP:8443:TCP:30443:"})
			}, repair: "listener TCP/443 was not wanted"},
		{name: "health check changed", have: func(o *observedELB) { o.desc.HealthCheck.Target = aws.String("TCP:22") },
			check: func(p elbPlan) bool { return p.healthCheck && len(p.addListeners) == 0 }, repair: "health check differed"},
		{name: "cross-zone on by hand", have: func(o *observedELB) { o.crossZone = true },
			check: func(p elbPlan) bool { return p.crossZone != nil && !*p.crossZone }, repair: "cross-zone load balancing was on"},
		{name: "subnet moved", want: func(d *desired) { d.Subnets = []string{"subnet-a", "subnet-c"} },
			check: func(p elbPlan) bool {
				return !p.recreate && slices.Equal(p.attachSubnets, []string{"subnet-c"}) && slices.Equal(p.detachSubnets, []string{"subnet-b"})
			}, repair: "subnet subnet-c was not attached"},
		{name: "groups changed", want: func(d *desired) { d.groupIDs = []string{"sg-named"} },
			check: func(p elbPlan) bool { return !p.recreate && slices.Equal(p.groups, []string{"sg-named"}) }, repair: "security groups were"},
		{name: "scheme changed recreates, nothing else planned", want: func(d *desired) { d.Scheme = "internal" },
			check: func(p elbPlan) bool { return p.recreate && len(p.addListeners)+len(p.register) == 0 }, repair: "scheme was internet-facing"},
		{name: "instance deregistered by hand", members: []string{"i-1", "i-2", "i-3"},
			check: func(p elbPlan) bool { return slices.Equal(p.register, []string{"i-3"}) && len(p.deregister) == 0 }, repair: "instance i-3 was not registered"},
		{name: "node gone", members: []string{"i-2"},
			check: func(p elbPlan) bool { return slices.Equal(p.deregister, []string{"i-1"}) && len(p.register) == 0 }, repair: "instance i-1 was registered"},
		{name: "proxy protocol wanted", want: func(d *desired) { d.ProxyProtocol = true },
			check: func(p elbPlan) bool {
				return p.proxyPolicy && len(p.backendPolicies) == 2 && slices.Equal(p.backendPolicies[30080], []string{proxyPolicyName})
			}, repair: "PROXY protocol was off for port 30080"},
		{name: "idle timeout changed by hand", have: func(o *observedELB) { o.attrs.IdleTimeout = 120 },
			check: func(p elbPlan) bool { return p.attrs && p.crossZone == nil }, repair: "idle timeout was 120s"},
		{name: "draining and logs wanted", want: func(d *desired) {
			d.Attrs = &elbAttrs{IdleTimeout: 60, Draining: true, DrainingTimeout: 30, AccessLog: true, Bucket: "b"}
		}, check: func(p elbPlan) bool { return p.attrs }, repair: "connection draining was off, connection draining timeout was 300s, access logs were off"},
		{name: "unset timeouts and a disabled log's bucket are not compared", have: func(o *observedELB) {
			o.attrs.DrainingTimeout, o.attrs.EmitInterval, o.attrs.Bucket = 77, 5, "old"
		}, check: func(p elbPlan) bool { return p.empty() }},
		{name: "ssl policy wanted on the SSL listener only", want: func(d *desired) {
			d.SSLPolicy, d.Listeners[1] = "ELBSecurityPolicy-2016-08", "SSL:443:TCP:30443:arn:c"
		}, check: func(p elbPlan) bool {
			return p.sslPolicy == sslPolicyName("ELBSecurityPolicy-2016-08") && slices.Equal(p.sslListeners, []int32{443})
		}},
		{name: "proxy protocol removed keeps the port's other policies", have: func(o *observedELB) {
			o.desc.BackendServerDescriptions = []elbtypes.BackendServerDescription{{InstancePort: aws.Int32(30080), PolicyNames: []string{"other", proxyPolicyName}}}
		}, check: func(p elbPlan) bool {
			return slices.Equal(p.backendPolicies[30080], []string{"other"}) && len(p.backendPolicies) == 1
		}, repair: "PROXY protocol was on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, o, m := want(), matching(), members
			if tc.want != nil {
				tc.want(w)
			}
			if tc.have != nil {
				tc.have(&o)
			}
			if tc.members != nil {
				m = tc.members
			}
			p := planELB(w, m, o)
			if !tc.check(p) {
				t.Errorf("plan %+v", p)
			}
			if tc.repair == "" {
				return
			}
			if p.empty() {
				t.Errorf("a plan with a repair %q is empty", tc.repair)
			}
			if !slices.ContainsFunc(p.repairs, func(r string) bool { return strings.Contains(r, tc.repair) }) {
				t.Errorf("repairs %q, want one with %q", p.repairs, tc.repair)
			}
		})
	}
}
