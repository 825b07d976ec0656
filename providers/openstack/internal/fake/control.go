package fake

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/simcontrol"
)

// The fault harness's controls (common/simcontrol): an outage of every service, Keystone
// included; a token bucket in front of every call answering 429 with Retry-After, as the
// rate-limit middleware of an OpenStack deployment does; and counters of both.

// bucket is a token bucket; a nil bucket lets everything through.
type bucket struct {
	burst, rate, tokens float64
	last                time.Time
}

// take spends a token, or says how long until one is there.
func (b *bucket) take(now time.Time) (time.Duration, bool) {
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	if b.rate <= 0 {
		return time.Hour, false
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second)), false
}

// SetOutage makes every call, Keystone's included, answer 503 (on) or serve normally (off).
func (c *Cloud) SetOutage(on bool) {
	c.mu.Lock()
	c.outage = on
	c.mu.Unlock()
}

// SetThrottle puts a token bucket of burst tokens refilled at rate per second in front of
// every call; burst <= 0 removes it.
func (c *Cloud) SetThrottle(burst int, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if burst <= 0 {
		c.bucket = nil
		return
	}
	c.bucket = &bucket{burst: float64(burst), rate: rate, tokens: float64(burst), last: time.Now()}
}

// refused answers a call the outage or the throttle turns away, counting it. Callers hold c.mu.
func (c *Cloud) refused(w http.ResponseWriter) bool {
	if c.outage {
		c.failed++
		writeErr(w, http.StatusServiceUnavailable, "simulated outage: service unavailable")
		return true
	}
	if c.bucket == nil {
		return false
	}
	wait, ok := c.bucket.take(time.Now())
	if ok {
		return false
	}
	c.throttled++
	secs := int(math.Ceil(wait.Seconds())) // Retry-After is whole seconds
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeErr(w, http.StatusTooManyRequests, fmt.Sprintf("Rate limit exceeded; retry after %d seconds", secs))
	return true
}

// Counters are the call counts for the harness: every call, including refused ones.
func (c *Cloud) Counters() simcontrol.Calls {
	per := c.Calls()
	out := simcontrol.Calls{PerOp: per}
	for op, n := range per {
		out.Total += n
		if IsWrite(op) {
			out.Writes += n
		}
	}
	c.mu.Lock()
	out.Failed, out.Throttled = c.failed, c.throttled
	c.mu.Unlock()
	return out
}

// Terminate deletes the servers named node, as when the machine is gone for good.
func (c *Cloud) Terminate(node string) error {
	c.mu.Lock()
	var ids []string
	for id, s := range c.servers {
		if s.Name == node {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return fmt.Errorf("no server named %s", node)
	}
	for _, id := range ids {
		c.DeleteServer(id)
	}
	return nil
}

// The descriptions the provider writes (loadbalancer.go, floatingip.go, secgroups.go); a
// floating IP or security group without one was not made by the ccm.
const (
	lbDescPrefix  = "Kubernetes external service "
	fipDescPrefix = "Floating IP for Kubernetes external service "
	sgDescPrefix  = "Security Group for Service "
)

// serviceIn reads "namespace/name" from an ownership description (ownership.Description), or
// from the one that follows prefix in an upstream-style description.
func serviceIn(desc, prefix string) string {
	if id, _, ok := ownership.ParseDescription(desc); ok && id.Namespace != "" {
		return id.Service()
	}
	rest, ok := strings.CutPrefix(desc, prefix)
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, " ")
	return key
}

// Resources lists the load balancers (with the Service of their ownership tag, else of their
// description), and the floating IPs and security groups the ccm created.
func (c *Cloud) Resources() []simcontrol.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick()
	out := []simcontrol.Resource{}
	for _, lb := range c.lbs {
		svc := ""
		for _, t := range lb.Tags {
			if v, ok := strings.CutPrefix(t, ownership.ServiceTag+"="); ok {
				svc = v
			}
		}
		if svc == "" {
			svc = serviceIn(lb.Description, lbDescPrefix)
		}
		out = append(out, simcontrol.Resource{Kind: "loadbalancer", Name: lb.Name, Service: svc})
	}
	for _, f := range c.fips {
		if svc := serviceIn(f.Description, fipDescPrefix); svc != "" {
			out = append(out, simcontrol.Resource{Kind: "floatingip", Name: f.FloatingIP, Service: svc})
		}
	}
	for _, g := range c.sgs {
		if svc := serviceIn(g.Description, sgDescPrefix); svc != "" {
			out = append(out, simcontrol.Resource{Kind: "securitygroup", Name: g.Name, Service: svc})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Secrets are the password, every token Keystone handed out and the application
// credential's secret.
func (c *Cloud) Secrets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(append([]string{c.opts.Password}, c.allTokens...), c.opts.AppCredSecret)
}

// Control is c as the harness drives it.
func Control(c *Cloud) simcontrol.Sim { return control{c} }

// control adapts Cloud, whose Calls is the older per-operation map, to simcontrol.Sim.
type control struct{ c *Cloud }

func (s control) SetOutage(on bool)                         { s.c.SetOutage(on) }
func (s control) SetThrottle(burst int, rate float64)       { s.c.SetThrottle(burst, rate) }
func (s control) Terminate(node string) error               { return s.c.Terminate(node) }
func (s control) Resources() ([]simcontrol.Resource, error) { return s.c.Resources(), nil }
func (s control) Calls() simcontrol.Calls                   { return s.c.Counters() }
func (s control) Secrets() []string                         { return s.c.Secrets() }
