package nlbplan

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

var hc = Health{Protocol: "TCP", Port: "traffic-port", Healthy: 2, Unhealthy: 2, Timeout: 10, Interval: 10}

func desired() Desired {
	return Desired{
		Ports:           []Port{{Protocol: "TCP", Port: 80, Group: "k8s-tg-web-tcp30080", Backend: "TCP", NodePort: 30080}},
		Health:          hc,
		GroupAttributes: map[string]string{"deregistration_delay.timeout_seconds": "30"},
		Attributes:      [][2]string{{"load_balancing.cross_zone.enabled", "false"}, {"access_logs.s3.enabled", "false"}},
		Members:         []string{"i-1", "i-2"},
		Tags:            map[string]string{"fingerprint": "f1"},
	}
}

// observed is an NLB that holds exactly desired().
func observed() Observed {
	return Observed{
		Attached: []Group{{ARN: "arn:tg1", Name: "k8s-tg-web-tcp30080", Health: hc, Healthy: true,
			Attributes: map[string]string{"deregistration_delay.timeout_seconds": "30", "stickiness.enabled": "false"}, Targets: []string{"i-1", "i-2"}}},
		Listeners:  []Listener{{ARN: "arn:l80", Protocol: "TCP", Port: 80, Forward: "arn:tg1"}},
		Attributes: map[string]string{"load_balancing.cross_zone.enabled": "false", "access_logs.s3.enabled": "false"},
		Tags:       map[string]string{"fingerprint": "f1", "other": "x"},
	}
}

// nodePortChanged: the Service's port 80 now goes to nodePort 30081, whose group has no
// listener yet.
func nodePortChanged(w *Desired) {
	w.Ports[0].NodePort, w.Ports[0].Group = 30081, "k8s-tg-web-tcp30081"
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   func(*Desired)
		have   func(*Observed)
		check  func(Plan) bool
		repair string // a word of the Event; "" for none
	}{
		{name: "as desired", check: func(p Plan) bool { return isZero(p) }},
		{name: "new NLB", have: func(o *Observed) { *o = Observed{} }, check: func(p Plan) bool {
			return len(p.CreateGroups) == 1 && slices.Equal(p.CreateGroups[0].Register, []string{"i-1", "i-2"}) &&
				len(p.CreateListeners) == 1 && p.CreateListeners[0].Port == 80 && p.Tags["fingerprint"] == "f1" &&
				len(p.Register)+len(p.ModifyListeners)+len(p.Attributes) == 0
		}, repair: "target group k8s-tg-web-tcp30080 was missing"},
		{name: "health check changed", have: func(o *Observed) { o.Attached[0].Health.Interval = 30 }, check: func(p Plan) bool {
			return len(p.ModifyHealth) == 1 && p.ModifyHealth[0].ARN == "arn:tg1" && len(p.CreateGroups) == 0
		}, repair: "health check of target group k8s-tg-web-tcp30080 was TCP:traffic-port: 2/2/10s/30s"},
		{name: "HTTP path compared", want: func(w *Desired) { w.Health.Protocol, w.Health.Path = "HTTP", "/healthz" },
			have:  func(o *Observed) { o.Attached[0].Health.Protocol, o.Attached[0].Health.Path = "HTTP", "/" },
			check: func(p Plan) bool { return len(p.ModifyHealth) == 1 }, repair: "health check"},
		{name: "target group attribute changed", have: func(o *Observed) { o.Attached[0].Attributes["deregistration_delay.timeout_seconds"] = "300" },
			check: func(p Plan) bool {
				return len(p.GroupAttributes) == 1 && p.GroupAttributes[0].Values[0] == [2]string{"deregistration_delay.timeout_seconds", "30"}
			}, repair: `attribute deregistration_delay.timeout_seconds was "300"`},
		{name: "unknown target group attribute is not sent", want: func(w *Desired) { w.GroupAttributes["no.such"] = "1" },
			check: func(p Plan) bool { return len(p.GroupAttributes) == 0 && slices.Equal(p.Unknown, []string{"no.such"}) }},
		{name: "listener not wanted", have: func(o *Observed) {
			o.Listeners = append(o.Listeners, Listener{ARN: "arn:l443", Protocol: "TCP", Port: 443, Forward: "arn:tg1"})
		}, check: func(p Plan) bool { return len(p.DeleteListeners) == 1 && p.DeleteListeners[0].Port == 443 }, repair: "listener TCP/443 was not wanted"},
		{name: "listener missing", have: func(o *Observed) { o.Listeners = nil }, check: func(p Plan) bool {
			return len(p.CreateListeners) == 1 && len(p.DeleteGroups) == 0
		}, repair: "listener TCP/80 was missing"},
		{name: "listener certificate changed", want: func(w *Desired) { w.Ports[0].Protocol, w.Ports[0].Cert = "TLS", "arn:cert" }, check: func(p Plan) bool {
			return len(p.ModifyListeners) == 1 && !p.ModifyListeners[0].PolicyOnly && !p.ModifyListeners[0].AwaitHealthy && p.ModifyListeners[0].To.ARN == "arn:tg1"
		}, repair: "listener TCP/80 differed"},
		{name: "SSL policy changed in place", want: func(w *Desired) { w.Ports[0].SSLPolicy = "new" }, have: func(o *Observed) { o.Listeners[0].SSLPolicy = "old" },
			check: func(p Plan) bool { return len(p.ModifyListeners) == 1 && p.ModifyListeners[0].PolicyOnly }, repair: "had SSL policy old"},
		{name: "nodePort changed: new group, switch once healthy, old one deleted unless waiting", want: nodePortChanged, check: func(p Plan) bool {
			m := p.ModifyListeners
			return len(p.CreateGroups) == 1 && len(m) == 1 && m[0].AwaitHealthy && m[0].From.ARN == "arn:tg1" && m[0].To == Ref{Name: "k8s-tg-web-tcp30081"} &&
				len(p.DeleteGroups) == 1 && slices.Equal(p.DeleteGroups[0].KeptBy, []int32{80}) && !p.Pending
		}, repair: "target group k8s-tg-web-tcp30081 was missing"},
		{name: "switch waits for a healthy target in a group made earlier", want: nodePortChanged, have: func(o *Observed) {
			o.Found = map[string]Group{"k8s-tg-web-tcp30081": {ARN: "arn:tg2", Name: "k8s-tg-web-tcp30081", Health: hc, Targets: []string{"i-1"}}}
		}, check: func(p Plan) bool {
			return p.Pending && len(p.ModifyListeners)+len(p.DeleteGroups)+len(p.CreateGroups) == 0 &&
				len(p.Register) == 1 && p.Register[0].Group.ARN == "arn:tg2" && slices.Equal(p.Register[0].IDs, []string{"i-2"})
		}, repair: "target i-2 was not registered in target group k8s-tg-web-tcp30081"},
		{name: "switch to a healthy group made earlier", want: nodePortChanged, have: func(o *Observed) {
			o.Found = map[string]Group{"k8s-tg-web-tcp30081": {ARN: "arn:tg2", Name: "k8s-tg-web-tcp30081", Health: hc, Healthy: true, Targets: []string{"i-1", "i-2"}}}
		}, check: func(p Plan) bool {
			return !p.Pending && len(p.ModifyListeners) == 1 && p.ModifyListeners[0].To.ARN == "arn:tg2" && !p.ModifyListeners[0].AwaitHealthy &&
				len(p.DeleteGroups) == 1 && p.DeleteGroups[0].Group.ARN == "arn:tg1" && len(p.DeleteGroups[0].KeptBy) == 0
		}, repair: "listener TCP/80 differed"},
		{name: "NLB attribute changed", want: func(w *Desired) { w.Attributes[0][1] = "true" }, check: func(p Plan) bool {
			return slices.Equal(p.Attributes, [][2]string{{"load_balancing.cross_zone.enabled", "true"}})
		}, repair: `attribute load_balancing.cross_zone.enabled was "false"`},
		{name: "NLB attributes not read: not compared", want: func(w *Desired) { w.Attributes[0][1] = "true" }, have: func(o *Observed) { o.Attributes = nil },
			check: func(p Plan) bool { return isZero(p) }},
		{name: "target deregistered by hand", have: func(o *Observed) { o.Attached[0].Targets = []string{"i-2"} }, check: func(p Plan) bool {
			return len(p.Register) == 1 && slices.Equal(p.Register[0].IDs, []string{"i-1"}) && len(p.Deregister) == 0
		}, repair: "target i-1 was not registered"},
		{name: "target no member", have: func(o *Observed) { o.Attached[0].Targets = []string{"i-1", "i-2", "i-9"} }, check: func(p Plan) bool {
			return len(p.Deregister) == 1 && slices.Equal(p.Deregister[0].IDs, []string{"i-9"}) && len(p.Register) == 0
		}, repair: "target i-9 was registered in target group k8s-tg-web-tcp30080 but is no member"},
		{name: "tags changed", want: func(w *Desired) { w.Tags = map[string]string{"fingerprint": "f2"} }, check: func(p Plan) bool {
			return maps.Equal(p.Tags, map[string]string{"fingerprint": "f2"}) && len(p.Repairs) == 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, o := desired(), observed()
			if tc.want != nil {
				tc.want(&w)
			}
			if tc.have != nil {
				tc.have(&o)
			}
			p := Compute(w, o)
			if !tc.check(p) {
				t.Errorf("plan %+v", p)
			}
			if tc.repair != "" && !slices.ContainsFunc(p.Repairs, func(r string) bool { return strings.Contains(r, tc.repair) }) {
				t.Errorf("repairs %q, want one with %q", p.Repairs, tc.repair)
			}
		})
	}
}

func isZero(p Plan) bool {
	return !p.ChangesGroups() && len(p.GroupAttributes)+len(p.Attributes)+len(p.Register)+len(p.Deregister)+len(p.Unknown)+len(p.Repairs) == 0 && p.Tags == nil && !p.Pending
}
