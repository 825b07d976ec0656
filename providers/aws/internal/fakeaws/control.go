package fakeaws

import (
	"fmt"
	"sort"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/simcontrol"
)

// SetOutage makes every API call answer 503 (Unavailable for EC2, ServiceUnavailable for the
// load balancer APIs), as during a regional outage; the SDK's retryer retries those.
func (s *Server) SetOutage(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = on
}

// Control is the fake as the fault harness drives it (simcontrol.Sim). secrets are the
// credentials the ccm was given; secret keys and session tokens the fake hands out through
// STS are added to them.
func (s *Server) Control(secrets ...string) simcontrol.Sim {
	return control{s: s, secrets: secrets}
}

type control struct {
	s       *Server
	secrets []string
}

func (c control) SetOutage(on bool) { c.s.SetOutage(on) }

func (c control) SetThrottle(burst int, rate float64) {
	if burst < 0 {
		burst = 0
	}
	c.s.Throttle(burst, rate)
}

// Terminate terminates the instance whose private DNS name is node (the Node name the
// provider matches when the Node has no providerID).
func (c control) Terminate(node string) error {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, in := range s.instances {
		if in.PrivateDNS == node && in.State != "terminated" {
			in.State = "terminated"
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no instance with private DNS name %q", node)
	}
	return nil
}

// Resources lists the classic ELBs, NLBs, target groups and API-created security groups, each
// with the Service named by its ownership tag.
func (c control) Resources() ([]simcontrol.Resource, error) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []simcontrol.Resource{} // "[]", not null, when the cloud is empty
	for name, lb := range s.elbs {
		out = append(out, simcontrol.Resource{Kind: "loadbalancer", Name: name, Service: lb.Tags[ownership.ServiceTag]})
	}
	for _, lb := range s.nlbs {
		out = append(out, simcontrol.Resource{Kind: "loadbalancer", Name: lb.Name, Service: lb.Tags[ownership.ServiceTag]})
	}
	for _, tg := range s.tgs {
		out = append(out, simcontrol.Resource{Kind: "target-group", Name: tg.Name, Service: tg.Tags[ownership.ServiceTag]})
	}
	for id := range s.groups {
		if id == NodeGroup { // made by New, not by a ccm
			continue
		}
		out = append(out, simcontrol.Resource{Kind: "security-group", Name: id, Service: s.tags[id][ownership.ServiceTag]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (c control) Calls() simcontrol.Calls {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := simcontrol.Calls{Writes: s.writes, Failed: s.failed, PerOp: make(map[string]int, len(s.calls))}
	for op, n := range s.calls {
		out.Total += n
		out.PerOp[op] = n
	}
	for _, n := range s.throttled {
		out.Throttled += n
	}
	return out
}

func (c control) Secrets() []string {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]string(nil), c.secrets...), s.issued...)
}
