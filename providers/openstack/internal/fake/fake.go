// Package fake is a wire-level OpenStack for tests, the demo and the bench: one HTTP server on
// loopback speaking the JSON of Keystone v3, Nova, Neutron and Octavia for the operations the
// provider calls, with honest status codes and provisioning transitions, call counters per
// operation and fault injection. The provider talks to it through real gophercloud.
package fake

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Cloud; the zero value works (no delays, RegionOne, user admin/secret).
type Options struct {
	Region, Username, Password, ProjectName, DomainName string
	// ProvisionDelay is how long a new load balancer stays PENDING_CREATE.
	ProvisionDelay time.Duration
	// UpdateDelay is how long a load balancer stays PENDING_UPDATE after a change to it or
	// its children, and PENDING_DELETE after a delete.
	UpdateDelay time.Duration
	// ListLag hides a new load balancer from list calls for this long (eventual consistency).
	ListLag time.Duration
	// NoFullyPopulated makes load balancer creates with listeners fail with 400, as providers
	// without single-call creation do.
	NoFullyPopulated bool
	// NoJobboard is Octavia 11 without its jobboard (its default): a fully populated create
	// goes ACTIVE but leaves its listeners, pools, members and monitors PENDING_CREATE for
	// good, and every write to them is refused 409 "... is immutable".
	NoJobboard bool
	// NoBarbican leaves the key-manager (Barbican) out of the catalog and its API.
	NoBarbican bool
	// TokenTTL is how long a token is valid (default 1h): an expired one gets a 401.
	TokenTTL time.Duration
	// The application credential Keystone knows (of the user, scoped to the project):
	// defaults "appcred-ccm", "ccm" and "appcred-secret".
	AppCredID, AppCredName, AppCredSecret string
	// TrustID is the Keystone trust the fake knows (default "trust-ccm"): a token scoped to it
	// acts in the project.
	TrustID string
	// MaxRoutes is Neutron's max_routes, how many routes a router holds: 0 is Neutron's
	// default of 30, negative no limit.
	MaxRoutes int
	// NoExtraRouteAtomic is a Neutron without the extraroute-atomic extension: routes are
	// changed only by replacing a router's whole list.
	NoExtraRouteAtomic bool
}

// Fault is an injected failure: Status is answered (with a JSON error body) Count times, or
// until cleared when Count is 0.
type Fault struct {
	Status int
	Count  int
	// Body, if set, is answered as it is instead of the fake's JSON error.
	Body string
}

// Cloud is the fake's state. All methods are safe for concurrent use.
type Cloud struct {
	opts Options

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	url    string
	seq    int
	tokens map[string]*token
	issued int
	calls  map[string]int
	// interfaceCalls counts service calls per catalog interface (interfaces.go).
	interfaceCalls map[string]int
	userAgents     map[string]int    // calls per User-Agent header
	faults         map[string]*Fault // by operation, "*" for all but Keystone
	latency        time.Duration
	servers        map[string]*server
	flavors        map[string]string // id -> name
	lbFlavors      map[string]bool   // Octavia flavor id -> enabled
	lbAZs          map[string]bool   // Octavia availability zone -> enabled
	ports          map[string]*port
	networks       map[string]*network
	subnets        map[string]*subnet
	fips           map[string]*floatingIP
	lbs            map[string]*loadBalancer
	lis            map[string]*listener
	pools          map[string]*pool
	monitors       map[string]*monitor
	sgs            map[string]*secGroup
	sgRules        map[string]*sgRule
	routers        map[string]*router
	tls            map[string]string // Barbican: "containers/<id>" or "secrets/<id>" -> name
	// errorNext makes the next N created load balancers end in ERROR instead of ACTIVE.
	errorNext int
	vipSeq    int
	fipSeq    int
	// The harness's controls (control.go).
	outage            bool
	bucket            *bucket
	failed, throttled int
	allTokens         []string // every token issued, expired or not
	// beforePortUpdate, when set, runs once before the next port update (BeforeNextPortUpdate).
	beforePortUpdate   func(groups []string) []string
	preconditionFailed int // port updates refused with 412
}

// PreconditionFailures counts port updates refused because their If-Match revision was stale.
func (c *Cloud) PreconditionFailures() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.preconditionFailed
}

// New returns a Cloud with one tenant network and subnet ("private", 10.0.0.0/16) and one
// external network ("public", 172.24.4.0/24) for floating IPs.
func New(o Options) *Cloud {
	if o.Region == "" {
		o.Region = "RegionOne"
	}
	if o.Username == "" {
		o.Username = "admin"
	}
	if o.Password == "" {
		o.Password = "secret"
	}
	if o.ProjectName == "" {
		o.ProjectName = "demo"
	}
	if o.DomainName == "" {
		o.DomainName = "Default"
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = time.Hour
	}
	if o.TrustID == "" {
		o.TrustID = "trust-ccm"
	}
	if o.AppCredID == "" {
		o.AppCredID = "appcred-ccm"
	}
	if o.AppCredName == "" {
		o.AppCredName = "ccm"
	}
	if o.AppCredSecret == "" {
		o.AppCredSecret = "appcred-secret"
	}
	c := &Cloud{opts: o, tokens: map[string]*token{}, calls: map[string]int{}, interfaceCalls: map[string]int{}, userAgents: map[string]int{}, faults: map[string]*Fault{},
		servers: map[string]*server{}, flavors: map[string]string{}, ports: map[string]*port{},
		networks: map[string]*network{}, subnets: map[string]*subnet{}, fips: map[string]*floatingIP{},
		lbs: map[string]*loadBalancer{}, lis: map[string]*listener{}, pools: map[string]*pool{}, monitors: map[string]*monitor{},
		sgs: map[string]*secGroup{}, sgRules: map[string]*sgRule{}, routers: map[string]*router{}, tls: map[string]string{}}
	c.networks[PrivateNetworkID] = &network{ID: PrivateNetworkID, Name: "private"}
	c.subnets[PrivateSubnetID] = &subnet{ID: PrivateSubnetID, NetworkID: PrivateNetworkID, CIDR: "10.0.0.0/16", IPVersion: 4}
	c.subnets[PrivateSubnetV6ID] = &subnet{ID: PrivateSubnetV6ID, NetworkID: PrivateNetworkID, CIDR: "fd00::/64", IPVersion: 6}
	c.networks[PublicNetworkID] = &network{ID: PublicNetworkID, Name: "public", External: true}
	c.subnets[PublicSubnetID] = &subnet{ID: PublicSubnetID, NetworkID: PublicNetworkID, CIDR: "172.24.4.0/24", IPVersion: 4}
	c.flavors["flavor-small"] = "m1.small"
	return c
}

// Well-known IDs of the networks every fake starts with.
const (
	PrivateNetworkID = "net-private"
	PrivateSubnetID  = "subnet-private"
	// PrivateSubnetV6ID is the IPv6 subnet (fd00::/64) of the private network.
	PrivateSubnetV6ID = "subnet-private-v6"
	PublicNetworkID   = "net-public"
	PublicSubnetID    = "subnet-public"
)

// Start serves on a free port of 127.0.0.1 and returns the Keystone v3 URL (auth-url).
func (c *Cloud) Start() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.ln = ln
	c.url = "http://" + ln.Addr().String()
	c.srv = &http.Server{Handler: c.byInterface(c.routes()), ReadHeaderTimeout: 10 * time.Second}
	c.mu.Unlock()
	go func() { _ = c.srv.Serve(ln) }()
	return c.AuthURL(), nil
}

// AuthURL is the Keystone v3 endpoint.
func (c *Cloud) AuthURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.url + "/identity/v3"
}

// Close stops serving.
func (c *Cloud) Close() {
	if c.srv != nil {
		_ = c.srv.Close()
	}
}

// Region, Username, Password, ProjectName and DomainName are the credentials the fake accepts.
func (c *Cloud) Region() string      { return c.opts.Region }
func (c *Cloud) Username() string    { return c.opts.Username }
func (c *Cloud) Password() string    { return c.opts.Password }
func (c *Cloud) ProjectName() string { return c.opts.ProjectName }
func (c *Cloud) DomainName() string  { return c.opts.DomainName }

// CloudConfig is a cloud.conf for the ccm pointing at the fake: [Global] with the credentials
// it accepts, and [LoadBalancer] on its private subnet with lbOptions ("key = value") added.
func (c *Cloud) CloudConfig(lbOptions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\nauth-url = %s\nusername = %s\npassword = %q\ntenant-name = %s\ndomain-name = %s\nregion = %s\n\n[LoadBalancer]\nsubnet-id = %s\n",
		c.AuthURL(), c.Username(), c.Password(), c.ProjectName(), c.DomainName(), c.Region(), PrivateSubnetID)
	for _, o := range lbOptions {
		b.WriteString(o + "\n")
	}
	return b.String()
}

// SetFault makes op (an operation name such as "octavia.CreateLoadBalancer", or "*" for every
// operation but Keystone's) fail; a zero Fault clears it.
func (c *Cloud) SetFault(op string, f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.Status == 0 {
		delete(c.faults, op)
		return
	}
	c.faults[op] = &f
}

// SetLatency delays every answer by d.
func (c *Cloud) SetLatency(d time.Duration) {
	c.mu.Lock()
	c.latency = d
	c.mu.Unlock()
}

// SetDelays changes the provisioning and update delays for what happens from now on.
func (c *Cloud) SetDelays(provision, update time.Duration) {
	c.mu.Lock()
	c.opts.ProvisionDelay, c.opts.UpdateDelay = provision, update
	c.mu.Unlock()
}

// ExpireTokens invalidates every token issued so far: the next call with one gets a 401.
func (c *Cloud) ExpireTokens() {
	c.mu.Lock()
	c.tokens = map[string]*token{}
	c.mu.Unlock()
}

// TokensIssued counts successful Keystone token requests.
func (c *Cloud) TokensIssued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.issued
}

// Calls returns a copy of the per-operation call counts.
func (c *Cloud) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// Writes counts mutating calls to Nova, Neutron and Octavia (token requests are not writes).
func (c *Cloud) Writes() int {
	n := 0
	for op, v := range c.Calls() {
		if IsWrite(op) {
			n += v
		}
	}
	return n
}

// CallSummary is the call counts as "op=n" sorted, for logs.
func (c *Cloud) CallSummary() string {
	var out []string
	for op, v := range c.Calls() {
		out = append(out, fmt.Sprintf("%s=%d", op, v))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// IsWrite: op (the fake's name of a call) changes the cloud.
func IsWrite(op string) bool {
	_, verb, _ := strings.Cut(op, ".")
	for _, p := range []string{"Create", "Update", "Delete", "Batch"} {
		if strings.HasPrefix(verb, p) && op != "keystone.CreateToken" {
			return true
		}
	}
	return false
}

func (c *Cloud) nextID(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s-%06d", prefix, c.seq)
}

// handler wraps one operation: latency, counting, token check, faults, then fn under c.mu.
type opFunc func(w http.ResponseWriter, r *http.Request)

func (c *Cloud) op(name string, fn opFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		lat := c.latency
		c.mu.Unlock()
		if lat > 0 {
			time.Sleep(lat)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.calls[name]++
		if c.refused(w) {
			return
		}
		if name != "keystone.CreateToken" {
			tok := c.tokens[r.Header.Get("X-Auth-Token")]
			if tok == nil || !time.Now().Before(tok.expires) {
				writeErr(w, http.StatusUnauthorized, "The request you have made requires authentication.")
				return
			}
			if tok.projectID != c.projectID() && !strings.HasSuffix(name, ".Versions") {
				// Nova, Neutron and Octavia act in the token's project: the fake's resources
				// are all in one, and a token of another project (or a domain) gets none.
				writeErr(w, http.StatusForbidden, "You are not authorized to perform the requested action: the token is not scoped to project "+c.projectID())
				return
			}
			for _, k := range []string{name, "*"} {
				if f := c.faults[k]; f != nil {
					if f.Count > 0 {
						if f.Count--; f.Count == 0 {
							delete(c.faults, k)
						}
					}
					if f.Body != "" {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(f.Status)
						_, _ = w.Write([]byte(f.Body))
						return
					}
					writeErr(w, f.Status, "injected fault")
					return
				}
			}
		}
		c.tick()
		fn(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"faultcode": http.StatusText(status), "faultstring": msg,
		"error": map[string]any{"code": status, "message": msg}})
}

func decode(r *http.Request, into any) error {
	return json.NewDecoder(r.Body).Decode(into)
}

func (c *Cloud) routes() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /identity/v3/auth/tokens", c.op("keystone.CreateToken", c.createToken))
	// Version discovery documents, which gophercloud reads for unversioned endpoints.
	for _, v := range []struct{ path, op, id string }{{"/network/{$}", "neutron.Versions", "v2.0"}, {"/load-balancer/{$}", "octavia.Versions", "v2.0"}, {"/compute/{$}", "nova.Versions", "v2.1"}, {"/key-manager/{$}", "barbican.Versions", "v1"}} {
		m.HandleFunc("GET "+v.path, c.op(v.op, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{"id": v.id, "status": "CURRENT",
				"links": []any{map[string]any{"rel": "self", "href": c.url + r.Header.Get(prefixHeader) + strings.TrimSuffix(v.path, "{$}") + v.id + "/"}}}}})
		}))
	}
	c.novaRoutes(m)
	c.neutronRoutes(m)
	c.octaviaRoutes(m)
	if !c.opts.NoBarbican {
		c.barbicanRoutes(m)
	}
	return m
}
