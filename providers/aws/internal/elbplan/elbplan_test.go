package elbplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// Compute is the difference, nothing more: each table row changes one thing in an ELB that
// is otherwise as desired.
func TestPlanELB(t *testing.T) {
	want := func() *Desired {
		return &Desired{Scheme: "internet-facing", Subnets: []string{"subnet-a", "subnet-b"}, Listeners: []string{"TCP:80:TCP:30080:", "TCP:443:TCP:30443:"},
			HealthCheck: "TCP:30080", Interval: 10, Timeout: 5, Healthy: 2, Unhealthy: 6, Attrs: Attrs{IdleTimeout: 60}, Groups: []string{"sg-own"}}
	}
	matching := func() Observed {
		w := want()
		d := &elbtypes.LoadBalancerDescription{Scheme: aws.String(w.Scheme), Subnets: slices.Clone(w.Subnets), SecurityGroups: []string{"sg-own"},
			HealthCheck: &elbtypes.HealthCheck{Target: aws.String(w.HealthCheck), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)},
			Instances:   []elbtypes.Instance{{InstanceId: aws.String("i-1")}, {InstanceId: aws.String("i-2")}}}
		for _, s := range w.Listeners {
			l := ListenerOf(s)
			d.ListenerDescriptions = append(d.ListenerDescriptions, elbtypes.ListenerDescription{Listener: &l})
		}
		return Observed{Desc: d, Attrs: NewAttrs}
	}
	members := []string{"i-1", "i-2"}
	for _, tc := range []struct {
		name    string
		want    func(*Desired)
		have    func(*Observed)
		members []string
		check   func(Plan) bool
		repair  string // a part of one repair phrase; "" for none
	}{
		{name: "as desired", check: func(p Plan) bool { return p.Empty() && len(p.Repairs) == 0 }},
		{name: "listener deleted by hand", have: func(o *Observed) { o.Desc.ListenerDescriptions = o.Desc.ListenerDescriptions[1:] },
			check: func(p Plan) bool {
				return slices.Equal(p.AddListeners, []string{"TCP:80:TCP:30080:"}) && len(p.DeleteListeners) == 0
			}, repair: "listener TCP/80 was missing"},
		{name: "listener port changed", want: func(d *Desired) { d.Listeners[1] = "TCP:8443:TCP:30443:" },
			check: func(p Plan) bool {
				return slices.Equal(p.DeleteListeners, []int32{443}) && slices.Equal(p.AddListeners, []string{"TCP:8443:TCP:30443:"})
			}, repair: "listener TCP/443 was not wanted"},
		{name: "health check changed", have: func(o *Observed) { o.Desc.HealthCheck.Target = aws.String("TCP:22") },
			check: func(p Plan) bool { return p.HealthCheck && len(p.AddListeners) == 0 }, repair: "health check differed"},
		{name: "cross-zone on by hand", have: func(o *Observed) { o.CrossZone = true },
			check: func(p Plan) bool { return p.CrossZone != nil && !*p.CrossZone }, repair: "cross-zone load balancing was on"},
		{name: "subnet moved", want: func(d *Desired) { d.Subnets = []string{"subnet-a", "subnet-c"} },
			check: func(p Plan) bool {
				return !p.Recreate && slices.Equal(p.AttachSubnets, []string{"subnet-c"}) && slices.Equal(p.DetachSubnets, []string{"subnet-b"})
			}, repair: "subnet subnet-c was not attached"},
		{name: "groups changed", want: func(d *Desired) { d.Groups = []string{"sg-named"} },
			check: func(p Plan) bool { return !p.Recreate && slices.Equal(p.Groups, []string{"sg-named"}) }, repair: "security groups were"},
		{name: "scheme changed recreates, nothing else planned", want: func(d *Desired) { d.Scheme = "internal" },
			check: func(p Plan) bool { return p.Recreate && len(p.AddListeners)+len(p.Register) == 0 }, repair: "scheme was internet-facing"},
		{name: "instance deregistered by hand", members: []string{"i-1", "i-2", "i-3"},
			check: func(p Plan) bool { return slices.Equal(p.Register, []string{"i-3"}) && len(p.Deregister) == 0 }, repair: "instance i-3 was not registered"},
		{name: "node gone", members: []string{"i-2"},
			check: func(p Plan) bool { return slices.Equal(p.Deregister, []string{"i-1"}) && len(p.Register) == 0 }, repair: "instance i-1 was registered"},
		{name: "proxy protocol wanted", want: func(d *Desired) { d.ProxyProtocol = true },
			check: func(p Plan) bool {
				return p.ProxyPolicy && len(p.BackendPolicies) == 2 && slices.Equal(p.BackendPolicies[30080], []string{ProxyPolicyName})
			}, repair: "PROXY protocol was off for port 30080"},
		{name: "idle timeout changed by hand", have: func(o *Observed) { o.Attrs.IdleTimeout = 120 },
			check: func(p Plan) bool { return p.Attrs && p.CrossZone == nil }, repair: "idle timeout was 120s"},
		{name: "draining and logs wanted", want: func(d *Desired) {
			d.Attrs = Attrs{IdleTimeout: 60, Draining: true, DrainingTimeout: 30, AccessLog: true, Bucket: "b"}
		}, check: func(p Plan) bool { return p.Attrs }, repair: "connection draining was off, connection draining timeout was 300s, access logs were off"},
		{name: "unset timeouts and a disabled log's bucket are not compared", have: func(o *Observed) {
			o.Attrs.DrainingTimeout, o.Attrs.EmitInterval, o.Attrs.Bucket = 77, 5, "old"
		}, check: func(p Plan) bool { return p.Empty() }},
		{name: "ssl policy wanted on the SSL listener only", want: func(d *Desired) {
			d.SSLPolicy, d.Listeners[1] = "ELBSecurityPolicy-2016-08", "SSL:443:TCP:30443:arn:c"
		}, check: func(p Plan) bool {
			return p.SSLPolicy == SSLPolicyName("ELBSecurityPolicy-2016-08") && slices.Equal(p.SSLListeners, []int32{443})
		}},
		{name: "proxy protocol removed keeps the port's other policies", have: func(o *Observed) {
			o.Desc.BackendServerDescriptions = []elbtypes.BackendServerDescription{{InstancePort: aws.Int32(30080), PolicyNames: []string{"other", ProxyPolicyName}}}
		}, check: func(p Plan) bool {
			return slices.Equal(p.BackendPolicies[30080], []string{"other"}) && len(p.BackendPolicies) == 1
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
			p := Compute(*w, m, o)
			if !tc.check(p) {
				t.Errorf("plan %+v", p)
			}
			if tc.repair == "" {
				return
			}
			if p.Empty() {
				t.Errorf("a plan with a repair %q is empty", tc.repair)
			}
			if !slices.ContainsFunc(p.Repairs, func(r string) bool { return strings.Contains(r, tc.repair) }) {
				t.Errorf("repairs %q, want one with %q", p.Repairs, tc.repair)
			}
		})
	}
}
