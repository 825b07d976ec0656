package vsphere

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// loginBackoff is how long a failed login is answered from memory: a wrong password retried
// on every node look-up would lock the vCenter account.
const loginBackoff = 10 * time.Second

// conn is the one session the CCM holds with one vCenter. It logs in on first use, is reused
// by every call, and logs in again only when vCenter says the session is gone (an
// authentication fault), once for all the calls that saw it.
type conn struct {
	vc    vcenter
	creds func() (user, password string, err error)
	// fallback is tried when vCenter refuses creds (upstream's order: the file's credentials,
	// then the Secret); once it is used, it is used from then on.
	fallback    func() (user, password string, err error)
	useFallback bool
	credMu      sync.Mutex // guards useFallback (restClient reads it outside mu)

	mu         sync.Mutex
	client     *vim25.Client // nil until logged in
	gen        int           // bumps on every login; views and REST sessions belong to one
	loginErr   error
	loginErrAt time.Time
	lastErrMsg string
	lastUse    time.Time

	restMu  sync.Mutex
	rest    *rest.Client
	restGen int
}

func (c *conn) url() *url.URL {
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(c.vc.Server, c.vc.Port), Path: "/sdk"}
}

// get returns the logged-in client and its session generation.
func (c *conn) get(ctx context.Context) (*vim25.Client, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastUse = time.Now()
	if c.client != nil {
		return c.client, c.gen, nil
	}
	if c.loginErr != nil && time.Since(c.loginErrAt) < loginBackoff {
		return nil, 0, c.loginErr
	}
	err := c.connectLocked(ctx)
	if err != nil {
		c.loginErr, c.loginErrAt = err, time.Now()
		if msg := err.Error(); msg != c.lastErrMsg { // one log line per cause, not per call
			c.lastErrMsg = msg
			klog.ErrorS(err, "Cannot log in to vCenter", "server", c.vc.Server)
		}
		return nil, 0, err
	}
	c.loginErr, c.lastErrMsg = nil, ""
	return c.client, c.gen, nil
}

// loginError is a failure to open a session: credentials, certificate or network. Its text
// may name the vCenter user; it goes to the log, never into a Service's Events (eventSafe).
type loginError struct{ err error }

func (e *loginError) Error() string { return e.err.Error() }
func (e *loginError) Unwrap() error { return e.err }

func (c *conn) connectLocked(ctx context.Context) error {
	if err := c.connectRawLocked(ctx); err != nil {
		return &loginError{err}
	}
	return nil
}

// current returns the credentials in use: the primary ones, or the fallback once vCenter
// refused the primary ones.
func (c *conn) current() (string, string, error) {
	c.credMu.Lock()
	fb := c.useFallback
	c.credMu.Unlock()
	if fb {
		return c.fallback()
	}
	return c.creds()
}

func (c *conn) connectRawLocked(ctx context.Context) error {
	user, pass, err := c.current()
	if err != nil {
		return fmt.Errorf("vCenter %s: %w", c.vc.Server, err)
	}
	sc := soap.NewClient(c.url(), c.vc.Insecure)
	if c.vc.Thumbprint != "" {
		sc.SetThumbprint(c.url().Host, c.vc.Thumbprint)
	}
	if c.vc.CAFile != "" {
		if err := sc.SetRootCAs(c.vc.CAFile); err != nil {
			return fmt.Errorf("vCenter %s: ca-file %s: %v", c.vc.Server, c.vc.CAFile, err)
		}
	}
	sc.UserAgent = "ccm-vsphere"
	sc.Client.Transport = &throttleRetry{next: sc.Client.Transport, count: countSOAPThrottled} // throttle.go
	var rt soap.RoundTripper = &counter{next: sc}
	if c.vc.Tries > 1 {
		rt = vim25.Retry(rt, vim25.TemporaryNetworkError(c.vc.Tries-1))
	}
	// NewClient needs the soap.Client itself (vAPI clients are made from it) and reads the
	// ServiceContent through it: that one call is counted here.
	start := time.Now()
	raw, err := vim25.NewClient(context.WithValue(ctx, opKey{}, "RetrieveServiceContent"), sc)
	metrics.ObserveCloudCall(ProviderName, "vim25", "RetrieveServiceContent", start, metrics.Classify(err, nil))
	if err != nil {
		return connectError(c.vc, err)
	}
	raw.RoundTripper = rt
	// Login goes through the raw chain; every other call through the re-login wrapper.
	err = session.NewManager(raw).Login(ctx, url.UserPassword(user, pass))
	if refused(err) && c.fallback != nil && !c.usingFallback() {
		klog.InfoS("vCenter refused the config file's credentials; trying the Secret's, as the upstream CCM does", "server", c.vc.Server, "user", user)
		if user, pass, err = c.fallback(); err != nil {
			return fmt.Errorf("vCenter %s: the file's credentials were refused, and: %w", c.vc.Server, err)
		}
		if err = session.NewManager(raw).Login(ctx, url.UserPassword(user, pass)); err == nil {
			c.credMu.Lock()
			c.useFallback = true
			c.credMu.Unlock()
		}
	}
	if err != nil {
		if refused(err) {
			return fmt.Errorf("vCenter %s: login refused for user %q: wrong user name or password", c.vc.Server, user)
		}
		return connectError(c.vc, err)
	}
	client := *raw
	client.RoundTripper = &relogin{c: c, next: rt, gen: c.gen + 1}
	c.client, c.gen = &client, c.gen+1
	klog.V(2).InfoS("Logged in to vCenter", "server", c.vc.Server, "user", user, "session", c.gen)
	return nil
}

func refused(err error) bool {
	return err != nil && (fault.Is(err, &types.InvalidLogin{}) || fault.Is(err, &types.NotAuthenticated{}))
}

func (c *conn) usingFallback() bool {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	return c.useFallback
}

func connectError(vc vcenter, err error) error {
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case soap.IsCertificateUntrusted(err) || errors.As(err, &ue) || errors.As(err, &he):
		// Never suggest insecure-flag: it turns verification off for every call.
		return fmt.Errorf("vCenter %s: certificate not trusted (%v): set ca-file to the CA bundle that signed it, or thumbprint to its SHA-1 thumbprint", vc.Server, err)
	case isNetErr(err):
		return fmt.Errorf("vCenter %s: cannot connect to %s:%s: %v", vc.Server, vc.Server, vc.Port, err)
	}
	return fmt.Errorf("vCenter %s: %v", vc.Server, err)
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || strings.Contains(err.Error(), "connection refused")
}

// expire drops the session of generation gen (if still current) so that the next call logs
// in again. Calls racing on the same expired session log in once.
func (c *conn) expire(gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && c.client != nil {
		klog.InfoS("vCenter session expired; logging in again", "server", c.vc.Server)
		c.client = nil
	}
}

// reset drops the session because the credentials changed.
func (c *conn) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client, c.loginErr, c.lastErrMsg = nil, nil, ""
}

// relogin retries a call once with a new session when vCenter says it does not know ours.
type relogin struct {
	c    *conn
	next soap.RoundTripper
	gen  int
}

func (r *relogin) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	err := r.next.RoundTrip(ctx, req, res)
	if err == nil || !fault.Is(err, &types.NotAuthenticated{}) {
		return err
	}
	r.c.expire(r.gen)
	client, _, lerr := r.c.get(ctx)
	if lerr != nil {
		return lerr
	}
	return client.RoundTripper.(*relogin).next.RoundTrip(ctx, req, res)
}

// counter counts every SOAP call by method in ccm_cloud_api_requests_total.
type counter struct{ next soap.RoundTripper }

func (c *counter) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	start := time.Now()
	op := methodName(req)
	err := c.next.RoundTrip(context.WithValue(ctx, opKey{}, op), req, res)
	metrics.ObserveCloudCall(ProviderName, "vim25", op, start, metrics.Classify(err, nil))
	return err
}

// methodName is the SOAP method of a request body: *methods.RetrievePropertiesExBody ->
// RetrievePropertiesEx.
func methodName(req soap.HasFault) string {
	t := reflect.TypeOf(req)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.TrimSuffix(t.Name(), "Body")
}

// restClient returns a vAPI (REST) client logged in for the tagging service. vCenter keeps
// vAPI sessions apart from SOAP ones, so this is the second session per vCenter, opened only
// when [Labels] asks for zones or regions.
func (c *conn) restClient(ctx context.Context) (*rest.Client, error) {
	client, gen, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	c.restMu.Lock()
	defer c.restMu.Unlock()
	if c.rest != nil && c.restGen == gen {
		return c.rest, nil
	}
	rc := rest.NewClient(client)
	// Every attempt is counted (metrics.Transport), so the retry goes above it.
	rc.Client.Client.Transport = &throttleRetry{next: &metrics.Transport{Provider: ProviderName, Service: "vapi", Operation: restOperation, Next: rc.Client.Client.Transport}}
	user, pass, err := c.current()
	if err != nil {
		return nil, &loginError{err}
	}
	if err := rc.Login(ctx, url.UserPassword(user, pass)); err != nil {
		return nil, &loginError{fmt.Errorf("vCenter %s: vAPI login for tags: %v", c.vc.Server, err)}
	}
	c.rest, c.restGen = rc, gen
	return rc, nil
}

// dropRest forgets the vAPI session after a 401 so the next call logs in again.
func (c *conn) dropRest(rc *rest.Client) {
	c.restMu.Lock()
	defer c.restMu.Unlock()
	if c.rest == rc {
		c.rest = nil
	}
}

// restOperation names a vAPI call without the IDs in its path: "GET /api/cis/tagging/tag".
func restOperation(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var keep []string
	for _, p := range parts {
		if strings.HasPrefix(p, "urn:") || len(p) > 30 {
			break
		}
		keep = append(keep, p)
	}
	op := r.Method + " /" + strings.Join(keep, "/")
	if a := r.URL.Query().Get("action"); a != "" {
		op += "?action=" + a
	}
	return op
}

// keepAlive touches sessions idle for longer than every, so vCenter's idle timeout (30 min by
// default) does not end them between the node controller's refreshes.
func (c *conn) keepAlive(ctx context.Context, every time.Duration) {
	c.mu.Lock()
	client, idle := c.client, time.Since(c.lastUse)
	c.mu.Unlock()
	if client == nil || idle < every {
		return
	}
	if _, err := methods.GetCurrentTime(ctx, client); err != nil {
		klog.V(2).InfoS("vCenter keep-alive failed", "server", c.vc.Server, "err", err)
	}
}
