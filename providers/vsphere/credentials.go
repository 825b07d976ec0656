package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	hints  map[string]string        // ns/name/host -> why the Secret has no usable pair
	onSet  func(host string)        // called when a host's credentials change
	wait   map[string]chan struct{} // closed when the Secret is first read
}

func newSecretCreds(onSet func(string)) *secretCreds {
	return &secretCreds{byHost: map[string][2]string{}, hints: map[string]string{}, onSet: onSet, wait: map[string]chan struct{}{}}
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
		return "", "", fmt.Errorf("Secret %s has no keys %s.username and %s.password (nor server_<id>, username_<id>, password_<id> naming it)%s", key, host, host, s.hints[key+"/"+host])
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
	hosts := parseCredentials(sec.Data)
	var changed []string
	s.mu.Lock()
	for h := range hosts {
		if hint := sessionManagerHint(sec.Data, h); hint != "" {
			s.hints[sec.Namespace+"/"+sec.Name+"/"+h] = hint
		}
	}
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

// parseCredentials reads vCenter credentials in the forms the upstream CCM reads from a
// Secret or a secrets directory: "<host>.username" and "<host>.password", or the triple
// "server_<id>", "username_<id>", "password_<id>". Keys of upstream's shared session
// manager ("<host>.vc-session-manager-url" and "-token") are not supported: lookup says so.
func parseCredentials(data map[string][]byte) map[string][2]string {
	hosts := map[string][2]string{}
	set := func(host string, i int, v []byte) {
		up := hosts[host]
		up[i] = strings.TrimSuffix(string(v), "\n")
		hosts[host] = up
	}
	for k, v := range data {
		switch {
		case strings.HasSuffix(k, ".username") && len(k) > len(".username"):
			set(strings.TrimSuffix(k, ".username"), 0, v)
		case strings.HasSuffix(k, ".password") && len(k) > len(".password"):
			set(strings.TrimSuffix(k, ".password"), 1, v)
		case strings.HasPrefix(k, "server_") && len(k) > len("server_"):
			id, host := strings.TrimPrefix(k, "server_"), strings.TrimSpace(string(v))
			if u, ok := data["username_"+id]; ok {
				set(host, 0, u)
			}
			if p, ok := data["password_"+id]; ok {
				set(host, 1, p)
			}
		case strings.HasSuffix(k, ".vc-session-manager-url"):
			host := strings.TrimSuffix(k, ".vc-session-manager-url")
			if _, ok := hosts[host]; !ok {
				hosts[host] = [2]string{}
			}
		}
	}
	return hosts
}

// lookupDir reads host's credentials from the files of a secrets directory (each file's name
// is a key, its content the value, as a Secret mounted as a volume). It reads at every login,
// so a rotated file is used from the next login on.
func lookupDir(dir, host string) (string, string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", fmt.Errorf("secrets-directory %s: %v", dir, err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), "..") { // a mounted Secret's ..data link
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		data[e.Name()] = b
	}
	up := parseCredentials(data)[host]
	if up[0] == "" || up[1] == "" {
		return "", "", fmt.Errorf("secrets-directory %s has no files %s.username and %s.password (nor server_<id>, username_<id>, password_<id> naming it)%s", dir, host, host, sessionManagerHint(data, host))
	}
	return up[0], up[1], nil
}

// sessionManagerHint explains a host that only has upstream's shared session manager keys.
func sessionManagerHint(data map[string][]byte, host string) string {
	if _, ok := data[host+".vc-session-manager-url"]; ok {
		return "; it has " + host + ".vc-session-manager-url: ccm does not support upstream's shared session manager, it logs in with a user name and password"
	}
	return ""
}
