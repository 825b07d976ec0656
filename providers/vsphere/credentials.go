package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// secretCreds holds the credentials read from Kubernetes Secrets, keyed by vCenter host,
// in upstream's format: data keys "<host>.username" and "<host>.password". Polling keeps
// them current, so a rotated password is used from the next login on. Values never reach a
// log line.
type secretCreds struct {
	mu     sync.RWMutex
	byHost map[string][2]string     // host -> user, password
	onSet  func(host string)        // called when a host's credentials change
	wait   map[string]chan struct{} // closed when the Secret is first read
}

func newSecretCreds(onSet func(string)) *secretCreds {
	return &secretCreds{byHost: map[string][2]string{}, onSet: onSet, wait: map[string]chan struct{}{}}
}

// lookup returns the credentials of host from Secret ns/name, waiting a little for the
// first read after start.
func (s *secretCreds) lookup(host, ns, name string) (string, string, error) {
	key := ns + "/" + name
	s.mu.RLock()
	ch := s.wait[key]
	s.mu.RUnlock()
	if ch == nil {
		return "", "", fmt.Errorf("credentials are to come from Secret %s, but there is no API client to read it", key)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		return "", "", fmt.Errorf("Secret %s not read yet", key)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	up, ok := s.byHost[host]
	if !ok || up[0] == "" || up[1] == "" {
		return "", "", fmt.Errorf("Secret %s has no keys %s.username and %s.password", key, host, host)
	}
	return up[0], up[1], nil
}

// watch reads the Secret ns/name now and every secretPoll after, until stop. It reads with a
// plain HTTP client on purpose: client-go's request logging prints response bodies at -v=8
// and above, which for a Secret would put the password (base64) in the log.
func (s *secretCreds) watch(cfg *rest.Config, ns, name string, stop <-chan struct{}) {
	key := ns + "/" + name
	s.mu.Lock()
	if _, ok := s.wait[key]; ok {
		s.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.wait[key] = ch
	s.mu.Unlock()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		klog.ErrorS(err, "No HTTP client to read the credentials Secret", "secret", key)
		close(ch)
		return
	}
	u := strings.TrimRight(cfg.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(ns) + "/secrets/" + url.PathEscape(name)
	go func() {
		defer func() {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}()
		var lastVersion, lastErr string
		for first := true; ; first = false {
			sec, err := getSecret(hc, u)
			switch {
			case err != nil && err.Error() != lastErr:
				lastErr = err.Error()
				klog.ErrorS(err, "Cannot read the vCenter credentials Secret", "secret", key)
			case err == nil && sec.ResourceVersion != lastVersion:
				lastVersion, lastErr = sec.ResourceVersion, ""
				s.apply(sec)
			}
			if first {
				close(ch)
			}
			select {
			case <-stop:
				return
			case <-time.After(secretPoll):
			}
		}
	}()
}

// secretPoll is how often the credentials Secret is read again (one GET of one object).
const secretPoll = 10 * time.Second

func getSecret(hc *http.Client, u string) (*v1.Secret, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET Secret: HTTP %d (does it exist, and may the ServiceAccount get it?)", res.StatusCode)
	}
	var sec v1.Secret
	if err := json.NewDecoder(res.Body).Decode(&sec); err != nil {
		return nil, fmt.Errorf("GET Secret: cannot decode the answer")
	}
	return &sec, nil
}

func (s *secretCreds) apply(sec *v1.Secret) {
	hosts := map[string][2]string{}
	for k, v := range sec.Data {
		for _, suffix := range []string{".username", ".password"} {
			if len(k) > len(suffix) && k[len(k)-len(suffix):] == suffix {
				host := k[:len(k)-len(suffix)]
				up := hosts[host]
				if suffix == ".username" {
					up[0] = string(v)
				} else {
					up[1] = string(v)
				}
				hosts[host] = up
			}
		}
	}
	var changed []string
	s.mu.Lock()
	for h, up := range hosts {
		if old, ok := s.byHost[h]; ok && old != up {
			changed = append(changed, h)
		}
		s.byHost[h] = up
	}
	s.mu.Unlock()
	klog.V(2).InfoS("Read vCenter credentials from Secret", "secret", sec.Namespace+"/"+sec.Name, "vcenters", len(hosts))
	for _, h := range changed {
		klog.InfoS("vCenter credentials changed in the Secret; the next call logs in with them", "server", h)
		s.onSet(h)
	}
}
