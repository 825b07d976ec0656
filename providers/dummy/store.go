package dummy

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// Record is one load balancer as the dummy cloud stores it.
type Record struct {
	Name        string            `json:"name"`
	IPs         []string          `json:"ips"`
	Fingerprint string            `json:"fingerprint"` // of the desired state last written
	Tags        map[string]string `json:"tags"`        // ownership: ownership.Identity.Tags of the Service
	Ports       []string          `json:"ports,omitempty"`
	SharingKey  string            `json:"sharingKey,omitempty"` // AnnotationSharedIP
}

// Store is where the dummy cloud keeps its load balancers: the part of a real cloud that
// outlives the ccm process, so that a restart or a failover finds them again.
type Store interface {
	Load(ctx context.Context) (map[string]Record, error) // by key: the record's (load balancer) name
	Put(ctx context.Context, key string, r Record) error
	Delete(ctx context.Context, key string) error
}

// MemStore keeps records in memory: for tests and for a ccm without an API client. It counts
// writes, which is what the conformance suite reads.
type MemStore struct {
	mu      sync.Mutex
	records map[string]Record
	writes  int
	reads   int
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{records: map[string]Record{}} }

// Load implements Store.
func (m *MemStore) Load(context.Context) (map[string]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	out := make(map[string]Record, len(m.records))
	for k, r := range m.records {
		out[k] = r
	}
	return out, nil
}

// Get reads one record (recordReader).
func (m *MemStore) Get(_ context.Context, key string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	r, ok := m.records[key]
	return r, ok, nil
}

// Put implements Store.
func (m *MemStore) Put(_ context.Context, key string, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[key] = r
	m.writes++
	return nil
}

// Delete implements Store.
func (m *MemStore) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, key)
	m.writes++
	return nil
}

// Writes is the number of Put and Delete calls so far.
func (m *MemStore) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// Reads is the number of Load and Get calls so far.
func (m *MemStore) Reads() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// configMapShards spreads records over several ConfigMaps so that 10,000 Services stay far
// below the 1 MiB limit of one object.
const configMapShards = 8

// ConfigMapPrefix names the ConfigMaps (in kube-system) holding the dummy cloud's records.
const ConfigMapPrefix = "ccm-dummy-lb-"

// configMapStore keeps records in ConfigMaps of the API server: shared by ccm replicas, kept
// across restarts, written with optimistic concurrency so two writers never both win. Changes
// to one shard that arrive while it is being written are batched into the next write, so a
// burst of new Services costs a few ConfigMap writes, not one each.
//
// The ConfigMaps live in the cluster's own kube-system, so their records are this cluster's:
// a record of this cluster is kept under the data key "namespace_name" (as before records were
// keyed by load balancer name, so stores written by earlier versions read the same), any other
// (made by hand, or a name the scheme had to hash) under its full key.
type configMapStore struct {
	client    kubernetes.Interface
	namespace string
	cluster   string
	mu        sync.Mutex
	shards    map[string]*shard
}

type shard struct {
	cm      *v1.ConfigMap // last known; nil when it does not exist yet
	pending []pendingChange
	writing bool
}

type pendingChange struct {
	key    string
	change func(map[string]string)
	done   chan error
}

func newConfigMapStore(client kubernetes.Interface, namespace, cluster string) *configMapStore {
	return &configMapStore{client: client, namespace: namespace, cluster: cluster, shards: map[string]*shard{}}
}

// shardOf is the ConfigMap holding a store key: that of namespace/name for a record of this
// cluster (where earlier versions put it), else that of the key.
func (s *configMapStore) shardOf(key string) string {
	h := fnv.New32a()
	if ns, name, ok := names.Parse(s.cluster, key); ok {
		key = ns + "/" + name
	}
	h.Write([]byte(key))
	return fmt.Sprintf("%s%d", ConfigMapPrefix, h.Sum32()%configMapShards)
}

// dataKey maps a store key to a ConfigMap key: "namespace_name" for a record of this cluster
// ('_' occurs in neither part), the key itself (a load balancer name, made of characters a
// ConfigMap key allows) for any other.
func (s *configMapStore) dataKey(key string) string {
	if ns, name, ok := names.Parse(s.cluster, key); ok {
		return ns + "_" + name
	}
	return key
}

// storeKey is the inverse of dataKey: a data key with exactly one '_' is "namespace_name" (a
// load balancer name has at least three).
func (s *configMapStore) storeKey(dk string) string {
	if ns, name, ok := strings.Cut(dk, "_"); ok && !strings.Contains(name, "_") {
		return names.Name(s.cluster, ns, name)
	}
	return dk
}

func (s *configMapStore) Load(ctx context.Context) (map[string]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Record{}
	for i := range configMapShards {
		name := fmt.Sprintf("%s%d", ConfigMapPrefix, i)
		start := time.Now()
		cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, name, metav1.GetOptions{})
		observeStore("Get", start, err)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("loading load balancer records from ConfigMap %s/%s: %w", s.namespace, name, err)
		}
		s.shard(name).cm = cm
		for k, v := range cm.Data {
			var r Record
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				// One damaged record must not stop every load balancer: skip it. Its address
				// stays reserved through the Service's status.
				klog.ErrorS(err, "Skipping an unreadable load balancer record", "configMap", klog.KObj(cm), "key", k)
				continue
			}
			out[s.storeKey(k)] = r
		}
	}
	return out, nil
}

// Get reads the record of key: one read of its shard. An unreadable record is skipped, as by
// Load. The shard copy read becomes the base of the next write (unless one is under way), so a
// repair after another writer's change does not first meet a conflict; a copy older than one
// written meanwhile only costs that write one re-read.
func (s *configMapStore) Get(ctx context.Context, key string) (Record, bool, error) {
	name := s.shardOf(key)
	start := time.Now()
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, name, metav1.GetOptions{})
	observeStore("Get", start, err)
	if apierrors.IsNotFound(err) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("reading load balancer record from ConfigMap %s/%s: %w", s.namespace, name, err)
	}
	s.mu.Lock()
	if sh := s.shard(name); !sh.writing {
		sh.cm = cm
	}
	s.mu.Unlock()
	v, ok := cm.Data[s.dataKey(key)]
	if !ok {
		return Record{}, false, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		klog.ErrorS(err, "Skipping an unreadable load balancer record", "configMap", klog.KObj(cm), "key", key)
		return Record{}, false, nil
	}
	return r, true, nil
}

func (s *configMapStore) Put(ctx context.Context, key string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.modify(ctx, key, func(data map[string]string) { data[s.dataKey(key)] = string(b) })
}

func (s *configMapStore) Delete(ctx context.Context, key string) error {
	return s.modify(ctx, key, func(data map[string]string) { delete(data, s.dataKey(key)) })
}

func (s *configMapStore) shard(name string) *shard {
	if s.shards[name] == nil {
		s.shards[name] = &shard{}
	}
	return s.shards[name]
}

// modify queues change for the shard of key and waits until a write containing it is done.
// The first caller finds the shard idle and writes everything queued, batch after batch, until
// the queue is empty; the others just wait for their batch's result.
func (s *configMapStore) modify(ctx context.Context, key string, change func(map[string]string)) error {
	name := s.shardOf(key)
	pc := pendingChange{key: key, change: change, done: make(chan error, 1)}
	s.mu.Lock()
	sh := s.shard(name)
	sh.pending = append(sh.pending, pc)
	if sh.writing {
		s.mu.Unlock()
		select {
		case err := <-pc.done:
			return err
		case <-ctx.Done():
			return ctx.Err() // the change may still be written; the next Ensure reconciles
		}
	}
	sh.writing = true
	for len(sh.pending) > 0 {
		batch, cm := sh.pending, sh.cm
		sh.pending = nil
		s.mu.Unlock()
		// The batch carries other callers' changes: it must not fail with this caller's context.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		written, err := s.write(wctx, name, cm, batch)
		cancel()
		s.mu.Lock()
		if err == nil {
			sh.cm = written
		} else if written != nil {
			sh.cm = written // a fresher copy read after a conflict
		}
		for _, p := range batch {
			p.done <- err
		}
	}
	sh.writing = false
	s.mu.Unlock()
	return <-pc.done
}

// write applies batch to the shard and writes it (creating it if need be), re-reading once on a
// conflict. It returns the ConfigMap as now stored.
func (s *configMapStore) write(ctx context.Context, name string, cm *v1.ConfigMap, batch []pendingChange) (*v1.ConfigMap, error) {
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	for attempt := 0; ; attempt++ {
		var out *v1.ConfigMap
		var err error
		start := time.Now()
		if cm == nil {
			fresh := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "ccm-dummy"}}, Data: map[string]string{}}
			for _, p := range batch {
				p.change(fresh.Data)
			}
			out, err = cms.Create(ctx, fresh, metav1.CreateOptions{})
			observeStore("Create", start, err)
		} else {
			next := cm.DeepCopy()
			if next.Data == nil {
				next.Data = map[string]string{}
			}
			for _, p := range batch {
				p.change(next.Data)
			}
			out, err = cms.Update(ctx, next, metav1.UpdateOptions{})
			observeStore("Update", start, err)
		}
		if err == nil {
			return out, nil
		}
		if attempt > 0 || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			// Hand back the copy we have, so the next write starts from the freshest one.
			return cm, fmt.Errorf("writing %d load balancer record(s) to ConfigMap %s/%s: %w", len(batch), s.namespace, name, err)
		}
		fresh, gerr := cms.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return cm, fmt.Errorf("re-reading ConfigMap %s/%s after a conflict: %w", s.namespace, name, gerr)
		}
		cm = fresh
	}
}

func observeStore(op string, start time.Time, err error) {
	metrics.ObserveCloudCall(ProviderName, "loadbalancer-store", op, start, metrics.Classify(err, apierrors.IsTooManyRequests))
}
