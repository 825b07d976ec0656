package vsphere

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// secretCreds holds the credentials read from Kubernetes Secrets, keyed by vCenter host,
// in upstream's format: data keys "<host>.username" and "<host>.password". A watch keeps
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
		return "", "", fmt.Errorf("Secret %s not read yet (does it exist, and may the ServiceAccount get, list and watch it?)", key)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	up, ok := s.byHost[host]
	if !ok || up[0] == "" || up[1] == "" {
		return "", "", fmt.Errorf("Secret %s has no keys %s.username and %s.password", key, host, host)
	}
	return up[0], up[1], nil
}

// watch starts an informer on the one Secret ns/name, tied to stop.
func (s *secretCreds) watch(client kubernetes.Interface, ns, name string, stop <-chan struct{}) {
	key := ns + "/" + name
	s.mu.Lock()
	if _, ok := s.wait[key]; ok {
		s.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.wait[key] = ch
	s.mu.Unlock()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	inf := f.Core().V1().Secrets().Informer()
	var once sync.Once
	update := func(obj any) {
		sec, ok := obj.(*v1.Secret)
		if !ok {
			return
		}
		s.apply(sec)
		once.Do(func() { close(ch) })
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, n any) { update(n) },
	})
	go inf.Run(stop)
	go func() {
		if cache.WaitForCacheSync(stop, inf.HasSynced) {
			once.Do(func() { close(ch) }) // synced without the Secret: lookups say so
		}
	}()
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
