// Package fakeaws is a wire-level fake of the EC2, Elastic Load Balancing (classic) and ELBv2
// (network load balancers) Query APIs: an HTTP server that answers the form-encoded POSTs the real aws-sdk-go-v2 clients send
// with XML in the shapes of the AWS API reference, so the provider is tested through the SDK it
// ships with. It keeps state (instances, subnets, security groups, load balancers, tags), counts
// calls per operation, and injects latency, 5xx answers, token-bucket throttling and eventual
// consistency.
package fakeaws

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// API versions the SDK sends; they tell the services apart on one endpoint.
const (
	versionEC2 = "2016-11-15"
	versionELB = "2012-06-01"
)

// Server is the fake. Its zero value is not usable; call New.
type Server struct {
	mu       sync.Mutex
	http     *http.Server
	listener net.Listener
	seq      int
	region   string         // the home region: New's; subnets, groups and route tables live there
	regional []*http.Server // endpoints of other regions (StartRegion)
	// reqRegion is the region of the endpoint serving the current request (under mu).
	reqRegion string
	pageLimit int // SetPageLimit
	ruleLimit int // SetRulesPerGroupLimit
	// newTargetsInitial: targets registered from now on stay "initial" (SetTargetsInitial).
	newTargetsInitial bool
	initial           map[string]bool // target group ARN + "/" + target ID, still "initial"

	instances map[string]*Instance
	subnets   map[string]*Subnet
	groups    map[string]*SecurityGroup
	elbs      map[string]*ClassicLB
	nlbs      map[string]*NLB // by ARN
	tgs       map[string]*TargetGroup
	listeners map[string]*NLBListener
	nlbDelay  time.Duration
	tables    map[string]*RouteTable
	tags      map[string]map[string]string // EC2 resource ID -> tags
	addresses map[string]*Address          // Elastic IPs by allocation ID (addresses.go)

	calls      map[string]int // "ec2:DescribeInstances" -> count, every attempt
	ops        map[string]int // the same, first attempts only (see Operations)
	throttled  map[string]int
	writes     int
	failed     int                // answered with an injected error (outage, FailOps)
	issued     []string           // secret keys and session tokens handed out by AssumeRole
	sessions   map[string]session // access key ID -> temporary credentials from AssumeRole
	keys       map[string]string  // long-term access key ID -> secret (AddCredentials)
	sessionTTL time.Duration
	sigs       map[Signature]int

	mdCalls  map[string]int       // instance metadata requests (imds.go)
	mdTokens map[string]time.Time // IMDSv2 tokens handed out, with their expiry

	// sourceHeaders are the x-amz-source-account and x-amz-source-arn headers of each
	// AssumeRole, in order.
	sourceHeaders [][2]string

	outage bool
	faults Faults
	bucket *bucket
}

// Faults are what the fake does wrong on purpose.
type Faults struct {
	Latency time.Duration
	// FailOps makes these operations ("DescribeInstances") answer 500 InternalError.
	FailOps map[string]bool
	// Visibility delays a new instance's appearance (eventual consistency).
	Visibility time.Duration
	// LoseAnswers carries out these operations, then answers 500 as if the answer were lost on
	// the way (a timeout); the count says how many times.
	LoseAnswers map[string]int
	// EmptyAnswers makes these operations do their work and answer success with an empty
	// result (no load balancer, no target group, no group ID in a Create answer).
	EmptyAnswers map[string]bool
	// DenyOps makes these operations answer 403 AccessDenied (UnauthorizedOperation for EC2)
	// with a message that names the caller's role ARN and account ID, as AWS does.
	DenyOps map[string]bool
	// Interpose runs the function before each of these operations is carried out, without the
	// fake's lock (it may seed the fake), until it returns true: another writer's change landing
	// between a client's read and its write.
	Interpose map[string]func() (done bool)
}

// DeniedMessage is the message of a DenyOps answer; Account is the fake's account ID.
const (
	Account       = "111122223333"
	DeniedMessage = "User: arn:aws:sts::" + Account + ":assumed-role/ccm-controller/ccm-aws is not authorized to perform this operation on resource: arn:aws:iam::" + Account + ":role/ccm-controller"
)

// New returns a fake with one VPC (vpc-1), a public and a private subnet per zone of region,
// tagged for load balancers and the cluster, and a node security group.
func New(region, cluster string) *Server {
	s := &Server{
		instances: map[string]*Instance{}, subnets: map[string]*Subnet{}, groups: map[string]*SecurityGroup{},
		elbs: map[string]*ClassicLB{}, tags: map[string]map[string]string{},
		nlbs: map[string]*NLB{}, tgs: map[string]*TargetGroup{}, listeners: map[string]*NLBListener{},
		calls: map[string]int{}, ops: map[string]int{}, throttled: map[string]int{}, tables: map[string]*RouteTable{},
		sessions: map[string]session{}, sigs: map[Signature]int{}, keys: map[string]string{},
		region: region, ruleLimit: DefaultRulesPerGroup, // AWS's quota, as a new account has it (SetRulesPerGroupLimit)
	}
	for i, z := range []string{"a", "b", "c"} {
		pub := s.AddSubnet(VPC, region+z, fmt.Sprintf("10.0.%d.0/24", i), map[string]string{
			"kubernetes.io/role/elb": "1", "kubernetes.io/cluster/" + cluster: "shared"})
		_ = pub
		s.AddSubnet(VPC, region+z, fmt.Sprintf("10.0.%d.0/24", 100+i), map[string]string{
			"kubernetes.io/role/internal-elb": "1", "kubernetes.io/cluster/" + cluster: "shared"})
	}
	s.AddRouteTable(MainRouteTable, map[string]string{"kubernetes.io/cluster/" + cluster: "owned"})
	s.groups[NodeGroup] = &SecurityGroup{ID: NodeGroup, Name: "nodes", VPC: VPC}
	s.tags[NodeGroup] = map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}
	return s
}

// VPC and NodeGroup are the IDs of the fake's VPC and the node security group.
const (
	VPC       = "vpc-1"
	NodeGroup = "sg-nodes"
)

// Start serves on a free loopback port and returns the endpoint URL.
func (s *Server) Start() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	s.listener = l
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(l) }()
	return s.URL(), nil
}

// URL is the endpoint of a started fake.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// StartRegion serves another region of the same fake (same credentials, same account) on a
// new loopback port and returns its endpoint URL. As in EC2, a region sees only its own
// instances (by the region of their zone) and none of the home region's subnets, security
// groups and route tables: a client configured for the wrong region gets empty lists and
// NotFound for IDs, not an error.
func (s *Server) StartRegion(region string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { s.serve(rw, r, region) }),
		ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.regional = append(s.regional, srv)
	s.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), nil
}

// Close stops serving.
func (s *Server) Close() {
	if s.http != nil {
		_ = s.http.Close()
	}
	s.mu.Lock()
	regional := s.regional
	s.mu.Unlock()
	for _, srv := range regional {
		_ = srv.Close()
	}
}

// homeRegion is whether the request being served came to the home region's endpoint.
func (s *Server) homeRegion() bool { return s.reqRegion == s.region }

// inRegion is whether in lives in the region of the request being served: the region of its
// zone (us-east-1a is in us-east-1), or the home region for an instance without a zone.
func (s *Server) inRegion(in *Instance) bool {
	return zoneRegion(in.Zone, s.region) == s.reqRegion
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Throttle makes every call take a token from a bucket of burst tokens refilled at rate per
// second (as EC2 does per account); without a token the answer is RequestLimitExceeded
// (EC2) or Throttling (ELB). burst 0 turns throttling off.
func (s *Server) Throttle(burst int, rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if burst == 0 {
		s.bucket = nil
		return
	}
	s.bucket = &bucket{burst: float64(burst), tokens: float64(burst), rate: rate, last: time.Now()}
}

type bucket struct {
	burst, tokens, rate float64
	last                time.Time
}

func (b *bucket) take() bool {
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Calls returns a copy of the per-operation call counts ("ec2:DescribeInstances").
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Operations counts, per operation, the calls the client made, leaving out its retries (the
// SDK's amz-sdk-request header says attempt=2 and up). Tests of how many calls the ccm makes
// use it: a retry after a lost connection on a loaded machine is the SDK's doing, not the ccm's.
func (s *Server) Operations() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ops)
}

// isRetry tells an SDK retry from a first attempt by the amz-sdk-request header
// ("attempt=2; max=8"); a request without the header is a first attempt.
func isRetry(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("amz-sdk-request"), ";") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			return n != "1"
		}
	}
	return false
}

// Throttled returns a copy of the per-operation counts of throttled answers.
func (s *Server) Throttled() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.throttled))
	for k, v := range s.throttled {
		out[k] = v
	}
	return out
}

// Writes is the number of successful mutating calls served.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Inventory lists every load balancer, security group and rule the fake holds, sorted, so a
// test can compare the cloud before and after.
func (s *Server) Inventory() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n, lb := range s.elbs {
		out = append(out, fmt.Sprintf("elb %s instances=%d", n, len(lb.Instances)))
		_ = lb
	}
	for _, lb := range s.nlbs {
		out = append(out, "nlb "+lb.Name)
	}
	for _, tg := range s.tgs {
		out = append(out, fmt.Sprintf("tg %s targets=%d", tg.Name, len(tg.Targets)))
	}
	for _, l := range s.listeners {
		out = append(out, fmt.Sprintf("listener %d -> %s", l.Port, s.tgs[l.TargetGroup].Name))
	}
	for id, g := range s.groups {
		out = append(out, "sg "+id+" "+g.Name)
		for _, r := range g.Rules {
			out = append(out, "rule "+id+" "+r.String())
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) newID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s-%08x", prefix, s.seq)
}

// ServeHTTP implements http.Handler: the home region's endpoint.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) { s.serve(rw, r, s.region) }

func (s *Server) serve(rw http.ResponseWriter, r *http.Request, region string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	f := form(vals)
	action, version := f.get("Action"), f.get("Version")
	svc := map[string]string{versionEC2: "ec2", versionELB: "elb", versionELBv2: "elbv2", versionSTS: "sts"}[version]
	s.mu.Lock()
	latency := s.faults.Latency
	interpose := s.faults.Interpose[action]
	s.mu.Unlock()
	if interpose != nil && interpose() {
		s.mu.Lock()
		delete(s.faults.Interpose, action)
		s.mu.Unlock()
	}
	if latency > 0 {
		time.Sleep(latency)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqRegion = region
	op := svc + ":" + action
	s.calls[op]++
	if !isRetry(r) {
		s.ops[op]++
	}
	if op == "sts:AssumeRole" {
		s.sourceHeaders = append(s.sourceHeaders, [2]string{r.Header.Get("X-Amz-Source-Account"), r.Header.Get("X-Amz-Source-Arn")})
	}
	sig := signature(op, r)
	s.sigs[sig]++
	authErr := s.authenticate(svc, r, body)
	var out string
	var aerr *apiError
	switch {
	case svc == "":
		aerr = &apiError{Status: 400, Code: "InvalidAction", Message: "unknown API version " + version}
	case authErr != nil:
		aerr = authErr
	case s.outage:
		s.failed++
		code := "ServiceUnavailable"
		if svc == "ec2" {
			code = "Unavailable"
		}
		aerr = &apiError{Status: 503, Code: code, Message: "injected outage"}
	case s.bucket != nil && !s.bucket.take():
		s.throttled[op]++
		if svc == "ec2" {
			aerr = &apiError{Status: 503, Code: "RequestLimitExceeded", Message: "Request limit exceeded."}
		} else {
			aerr = &apiError{Status: 400, Code: "Throttling", Message: "Rate exceeded"}
		}
	case s.faults.FailOps[action]:
		s.failed++
		aerr = &apiError{Status: 500, Code: "InternalError", Message: "injected failure"}
	case s.faults.DenyOps[action]:
		s.failed++
		code := "AccessDenied"
		if svc == "ec2" {
			code = "UnauthorizedOperation"
		}
		aerr = &apiError{Status: 403, Code: code, Message: DeniedMessage}
	case svc == "ec2":
		out, aerr = s.ec2(action, f)
	case svc == "elbv2":
		out, aerr = s.elbv2(action, f)
	case svc == "sts":
		out, aerr = s.sts(action, f)
	default:
		out, aerr = s.elb(action, f)
	}
	if aerr == nil && s.faults.LoseAnswers[action] > 0 {
		s.faults.LoseAnswers[action]--
		aerr = &apiError{Status: 500, Code: "InternalError", Message: "injected: done, answer lost"}
	}
	if aerr == nil && s.faults.EmptyAnswers[action] {
		out = ""
	}
	rw.Header().Set("Content-Type", "text/xml")
	rid := s.newID("req")
	if aerr != nil {
		rw.WriteHeader(aerr.Status)
		var x w
		if svc == "ec2" {
			x.open("Response")
			x.open("Errors")
			x.open("Error")
			x.leaf("Code", aerr.Code)
			x.leaf("Message", aerr.Message)
			x.close("Error")
			x.close("Errors")
			x.leaf("RequestID", rid)
			x.close("Response")
		} else {
			x.open("ErrorResponse")
			x.open("Error")
			x.leaf("Type", "Sender")
			x.leaf("Code", aerr.Code)
			x.leaf("Message", aerr.Message)
			x.close("Error")
			x.leaf("RequestId", rid)
			x.close("ErrorResponse")
		}
		_, _ = io.WriteString(rw, x.b.String())
		return
	}
	if svc != "sts" && isWrite(action) { // AssumeRole changes nothing in the inventory
		s.writes++
	}
	if svc == "ec2" {
		fmt.Fprintf(rw, `<%sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>%s</requestId>%s</%sResponse>`, action, rid, out, action)
		return
	}
	ns := "http://elasticloadbalancing.amazonaws.com/doc/" + version + "/"
	if svc == "sts" {
		ns = "https://sts.amazonaws.com/doc/" + version + "/"
	}
	fmt.Fprintf(rw, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
		action, ns, action, out, action, rid, action)
}

func isWrite(action string) bool {
	return !strings.HasPrefix(action, "Describe")
}
