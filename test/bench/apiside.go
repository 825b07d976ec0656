package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ccm-project/ccm/common/testenv"
)

// storePrefix names the dummy's shard ConfigMaps (dummy.ConfigMapPrefix; the bench does not
// import the provider, it looks at the API server as any client would).
const storePrefix = "ccm-dummy-lb-"

// storeWatch follows the dummy's shard ConfigMaps as the API server reports them: it counts
// their writes, one watch event (ADDED, MODIFIED, DELETED) per write that reached etcd,
// whatever the ccm thinks it did, and keeps every record's fingerprint as last written. The
// watch is restarted from the last resourceVersion seen if the API server closes it, so no
// write is missed or counted twice. Following a watch rather than listing the shards again
// and again keeps the bench's own reads (a whole shard each) off the API server it measures.
type storeWatch struct {
	mu     sync.Mutex
	writes int
	shards map[string]map[string]watched // shard -> data key -> record
	err    error
	cancel context.CancelFunc
}

func watchStore(ctx context.Context, env *testenv.Env) (*storeWatch, error) {
	// Protobuf, as the ccm's own client: a whole shard per event costs the API server less.
	cfg := rest.CopyConfig(env.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cms := client.CoreV1().ConfigMaps("kube-system")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing kube-system ConfigMaps: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &storeWatch{cancel: cancel, shards: map[string]map[string]watched{}}
	for i := range list.Items {
		s.observe(watch.Added, &list.Items[i], false)
	}
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if ctx.Err() == nil {
					s.fail(fmt.Errorf("watching kube-system ConfigMaps: %w", err))
				}
				return
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					s.fail(fmt.Errorf("watching kube-system ConfigMaps: %v", ev.Object))
					w.Stop()
					return
				}
				cm, ok := ev.Object.(*v1.ConfigMap)
				if !ok {
					continue
				}
				rv = cm.ResourceVersion
				if ev.Type != watch.Bookmark {
					s.observe(ev.Type, cm, true)
				}
			}
			w.Stop()
		}
	}()
	return s, nil
}

// watched is a record as the watch last saw it: its text, and the fingerprint in it.
type watched struct{ raw, fingerprint string }

func (s *storeWatch) observe(t watch.EventType, cm *v1.ConfigMap, count bool) {
	if !strings.HasPrefix(cm.Name, storePrefix) {
		return
	}
	s.mu.Lock()
	prev := s.shards[cm.Name]
	s.mu.Unlock()
	recs := map[string]watched{}
	if t != watch.Deleted {
		for k, v := range cm.Data {
			if p, ok := prev[k]; ok && p.raw == v {
				recs[k] = p // unchanged: no need to decode it again
				continue
			}
			var rec struct{ Fingerprint string }
			if json.Unmarshal([]byte(v), &rec) == nil {
				recs[k] = watched{raw: v, fingerprint: rec.Fingerprint}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards[cm.Name] = recs
	if count {
		s.writes++
	}
}

func (s *storeWatch) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// Writes is the number of shard writes seen so far. The watch lags a write by a few
// milliseconds: callers that count a finished burst settle() first.
func (s *storeWatch) Writes() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, s.err
}

// Fingerprints is every record's fingerprint as last seen, by data key.
func (s *storeWatch) Fingerprints() (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, recs := range s.shards {
		for k, r := range recs {
			out[k] = r.fingerprint
		}
	}
	return out, s.err
}

func (s *storeWatch) Stop() { s.cancel() }

// apiCounts is what the API server itself counted of the ConfigMap requests (its
// apiserver_request_total, every namespace), and the CPU time of kube-apiserver and etcd.
type apiCounts struct {
	ConfigMapGets, ConfigMapWrites float64
	ConfigMapConflicts             float64 // writes refused (HTTP 409)
	APIServerCPU, EtcdCPU          float64
	// Time spent serving ConfigMap writes (PUT, PATCH) in the API server, and in etcd's
	// updates of ConfigMaps, with their counts: the sums of their duration histograms.
	WriteSeconds, WriteCount     float64
	EtcdUpdSeconds, EtcdUpdCount float64
}

// meanMS is sum/count in milliseconds, 0 without a count.
func meanMS(sum, count float64) float64 {
	if count == 0 {
		return 0
	}
	return 1000 * sum / count
}

func readAPICounts(ctx context.Context, env *testenv.Env) (apiCounts, error) {
	var c apiCounts
	body, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return c, fmt.Errorf("scraping the API server's /metrics: %w", err)
	}
	m, err := parseMetrics(string(body))
	if err != nil {
		return c, fmt.Errorf("the API server's /metrics: %w", err)
	}
	cm := `resource="configmaps"`
	c.ConfigMapGets = m.sumWith("apiserver_request_total", cm, `verb="GET"`)
	for _, verb := range []string{"POST", "PUT", "CREATE", "UPDATE", "PATCH", "APPLY"} {
		c.ConfigMapWrites += m.sumWith("apiserver_request_total", cm, `verb="`+verb+`"`)
		c.ConfigMapConflicts += m.sumWith("apiserver_request_total", cm, `verb="`+verb+`"`, `code="409"`)
	}
	for _, verb := range []string{"PUT", "PATCH"} {
		c.WriteSeconds += m.sumWith("apiserver_request_duration_seconds_sum", cm, `verb="`+verb+`"`)
		c.WriteCount += m.sumWith("apiserver_request_duration_seconds_count", cm, `verb="`+verb+`"`)
	}
	c.EtcdUpdSeconds = m.sumWith("etcd_request_duration_seconds_sum", cm, `operation="update"`)
	c.EtcdUpdCount = m.sumWith("etcd_request_duration_seconds_count", cm, `operation="update"`)
	for name, to := range map[string]*float64{"kube-apiserver": &c.APIServerCPU, "etcd": &c.EtcdCPU} {
		pid, err := controlPlanePid(env, name)
		if err != nil {
			return c, err
		}
		if *to, err = procCPUSeconds(pid); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (a apiCounts) minus(b apiCounts) apiCounts {
	return apiCounts{a.ConfigMapGets - b.ConfigMapGets, a.ConfigMapWrites - b.ConfigMapWrites,
		a.ConfigMapConflicts - b.ConfigMapConflicts, a.APIServerCPU - b.APIServerCPU, a.EtcdCPU - b.EtcdCPU,
		a.WriteSeconds - b.WriteSeconds, a.WriteCount - b.WriteCount, a.EtcdUpdSeconds - b.EtcdUpdSeconds, a.EtcdUpdCount - b.EtcdUpdCount}
}

// controlPlanePid finds the env's kube-apiserver or etcd: the process of that executable whose
// command line names the env's folder.
func controlPlanePid(env *testenv.Env, name string) (int, error) {
	exe := filepath.Join(env.Bin, name)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if args[0] == exe && strings.Contains(string(b), env.Dir+string(filepath.Separator)) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process of %s", name, env.Dir)
}

// settle waits a moment so that the watch has seen the last writes of a burst.
func settle() { time.Sleep(time.Second) }
