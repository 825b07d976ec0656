// Package simcontrol is the small HTTP protocol between a provider's simulator binary
// (providers/NAME/cmd/NAME-sim) and the fault harness (test/faults): the harness switches an
// outage or throttling on, removes a machine, and reads what the simulated cloud holds and how
// many calls it served. One protocol for every provider keeps the harness provider-neutral.
package simcontrol

// Sim is what a simulator implements for the harness. Methods are called concurrently with
// cloud API traffic.
type Sim interface {
	// SetOutage makes every cloud API call fail with a server error (on) or serve normally (off).
	SetOutage(on bool)
	// SetThrottle limits cloud API calls with a token bucket of burst tokens refilled at rate per
	// second, answering the cloud's own throttling error when empty; burst <= 0 turns it off.
	SetThrottle(burst int, rate float64)
	// Terminate makes the machine behind the Node name gone for good (terminated, deleted).
	Terminate(node string) error
	// Resources lists what the cloud holds that a ccm creates for Services (load balancers, and
	// where the provider makes them, security groups, target groups, floating IPs, VIPs). An
	// error when the simulator cannot read them: never an empty list that looks like a clean cloud.
	Resources() ([]Resource, error)
	// Calls counts the cloud API calls served since start.
	Calls() Calls
	// Secrets are the credentials the ccm was configured with (passwords, secret keys, tokens
	// handed out); the harness asserts none appears in any ccm log.
	Secrets() []string
}

// Resource is one cloud object a ccm made for a Service.
type Resource struct {
	Kind string `json:"kind"` // "loadbalancer" for the load balancer itself; others free-form
	Name string `json:"name"`
	// Service is "namespace/name" of the Service it belongs to, from the cloud's ownership tags
	// or names; empty when the simulator cannot tell (the harness counts that as a leak).
	Service string `json:"service"`
}

// Calls are call counters.
type Calls struct {
	Total     int            `json:"total"`
	Writes    int            `json:"writes"`
	Failed    int            `json:"failed"`    // answered with an injected error (outage)
	Throttled int            `json:"throttled"` // answered with a throttling error
	PerOp     map[string]int `json:"perOp"`
}
