package dummy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
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
	// Local and Pods are the Service's backends (poollb.Backends), kept with a sharing key.
	Local bool   `json:"local,omitempty"`
	Pods  string `json:"pods,omitempty"`
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

// errStale: a conditional write found the record changed since the copy it was compared with
// (another writer's change); nothing was written. The caller reads the record and compares again.
var errStale = errors.New("the load balancer record changed since it was read")

// version is what a record was in the copy a sync compared with: a hash of its stored text, or
// none.
type version struct {
	sum    uint64
	exists bool
}

// versionOf is the version of a record stored as raw.
func versionOf(raw string) version {
	return version{sum: maphash.String(versionSeed, raw), exists: true}
}

// versionOfRecord is the version r has once written: the store keeps json.Marshal's text.
func versionOfRecord(r Record) version {
	b, err := json.Marshal(r)
	if err != nil {
		return version{}
	}
	return version{sum: maphash.Bytes(versionSeed, b), exists: true}
}

var versionSeed = maphash.MakeSeed()

// configMapStore keeps records in ConfigMaps of the API server: shared by ccm replicas, kept
// across restarts, written with optimistic concurrency so two writers never both win.
//
// It keeps a copy of each shard as last read or written (its resourceVersion and a hash of each
// record's text, not the text: the records themselves are the caller's), so that a sync can
// compare with the copy and write on the condition that the store still holds what it compared
// with (cached, putIf): no read of a whole shard before each write. A write is
// a patch of the changed records only, conditional on the copy's resourceVersion, and asks the
// API server for the new resourceVersion only (PartialObjectMetadata), so neither side sends a
// whole shard. Changes to one shard that arrive while it is being written share the next write
// (group commit): that saves writes when many more changes are under way than there are
// shards, seldom with the service controller's 10 workers over 8 shards.
//
// The ConfigMaps live in the cluster's own kube-system, so their records are this cluster's:
// a record of this cluster is kept under the data key "namespace_name" (as before records were
// keyed by load balancer name, so stores written by earlier versions read the same), any other
// (made by hand, or a name the scheme had to hash) under its full key.
type configMapStore struct {
	client    kubernetes.Interface
	meta      metadata.Interface // nil: patches answer with the whole ConfigMap (tests' fake)
	namespace string
	cluster   string
	mu        sync.Mutex
	shards    map[string]*shard
}

type shard struct {
	// The copy: known once read or written; exists false when the ConfigMap did not exist.
	known  bool
	exists bool
	rv     string
	data   map[string]uint64 // data key -> hash of the record as stored (versionOf)
	// tracked: the ConfigMap has managedFields, which the next write drops (see patch).
	tracked bool
	// gen counts writes of this process: a read that started before one must not replace
	// the copy with an older state.
	gen     int
	pending []pendingChange
	writing bool
}

type pendingChange struct {
	dk     string
	value  *string  // nil: delete
	expect *version // nil: unconditional; else written only if the record is still this
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
	out := map[string]Record{}
	for i := range configMapShards {
		name := fmt.Sprintf("%s%d", ConfigMapPrefix, i)
		cm, err := s.read(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("loading load balancer records from ConfigMap %s/%s: %w", s.namespace, name, err)
		}
		if cm == nil {
			continue
		}
		for k, v := range cm.Data {
			r, err := decodeRecord(v)
			if err != nil {
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
// Load. The shard read becomes the copy (see read).
func (s *configMapStore) Get(ctx context.Context, key string) (Record, bool, error) {
	name := s.shardOf(key)
	cm, err := s.read(ctx, name)
	if err != nil {
		return Record{}, false, fmt.Errorf("reading load balancer record from ConfigMap %s/%s: %w", s.namespace, name, err)
	}
	if cm == nil {
		return Record{}, false, nil
	}
	v, ok := cm.Data[s.dataKey(key)]
	if !ok {
		return Record{}, false, nil
	}
	r, err := decodeRecord(v)
	if err != nil {
		klog.ErrorS(err, "Skipping an unreadable load balancer record", "configMap", klog.KObj(cm), "key", key)
		return Record{}, false, nil
	}
	return r, true, nil
}

// read gets shard name (nil if it does not exist) and makes it the copy, unless this process
// wrote the shard meanwhile (the read may predate that write) or is writing it.
func (s *configMapStore) read(ctx context.Context, name string) (*v1.ConfigMap, error) {
	s.mu.Lock()
	gen := s.shard(name).gen
	s.mu.Unlock()
	cm, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if sh := s.shard(name); !sh.writing && sh.gen == gen {
		sh.adopt(cm)
	}
	s.mu.Unlock()
	return cm, nil
}

// adopt makes cm (nil: the ConfigMap does not exist) the shard's copy: its own map, as writes
// change it in place. Callers hold s.mu.
func (sh *shard) adopt(cm *v1.ConfigMap) {
	sh.known, sh.exists, sh.rv, sh.data, sh.tracked = true, cm != nil, "", map[string]uint64{}, false
	if cm != nil {
		sh.rv, sh.tracked = cm.ResourceVersion, len(cm.ManagedFields) > 0
		sh.data = make(map[string]uint64, len(cm.Data))
		for k, raw := range cm.Data {
			sh.data[k] = versionOf(raw).sum
		}
	}
}

// cached returns the version of key's record in the copy of its shard, which a conditional
// write compares with; ok is false when there is no copy (read instead). Callers hold the
// key's lock, so this process has no write of key under way (one abandoned by its caller's
// context may still land; putIf then finds it).
func (s *configMapStore) cached(key string) (v version, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.shard(s.shardOf(key))
	if !sh.known {
		return version{}, false
	}
	sum, exists := sh.data[s.dataKey(key)]
	return version{sum: sum, exists: exists}, true
}

func (s *configMapStore) Put(ctx context.Context, key string, r Record) error {
	return s.putIf(ctx, key, r, nil)
}

// putIf writes r if key's record is still v (nil: in any case); else errStale.
func (s *configMapStore) putIf(ctx context.Context, key string, r Record, v *version) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	raw := string(b)
	return s.modify(ctx, key, pendingChange{dk: s.dataKey(key), value: &raw, expect: v})
}

func (s *configMapStore) Delete(ctx context.Context, key string) error {
	return s.modify(ctx, key, pendingChange{dk: s.dataKey(key)})
}

func (s *configMapStore) shard(name string) *shard {
	if s.shards[name] == nil {
		s.shards[name] = &shard{}
	}
	return s.shards[name]
}

// modify queues a change for the shard of key and waits until a write containing it is done.
// The first caller finds the shard idle and writes everything queued, batch after batch, until
// the queue is empty; the others just wait for their batch's result. Every change of a batch
// gets the batch's result: written, or the error (errStale only for a change whose record
// changed meanwhile).
func (s *configMapStore) modify(ctx context.Context, key string, pc pendingChange) error {
	name := s.shardOf(key)
	pc.done = make(chan error, 1)
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
		batch := sh.pending
		sh.pending = nil
		s.mu.Unlock()
		// The batch carries other callers' changes: it must not fail with this caller's context.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		s.write(wctx, name, sh, batch)
		cancel()
		s.mu.Lock()
	}
	sh.writing = false
	s.mu.Unlock()
	return <-pc.done
}

// write applies batch to shard name: one patch of the changed records (a create if the
// ConfigMap does not exist yet), conditional on the copy's resourceVersion. On a conflict it
// reads the shard once and tries again with the changes still valid. Each change's caller
// gets its result on done; on success the copy follows the write. Called without s.mu, by the
// shard's only writer.
func (s *configMapStore) write(ctx context.Context, name string, sh *shard, batch []pendingChange) {
	answer := func(ps []pendingChange, err error) {
		for _, p := range ps {
			p.done <- err
		}
	}
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		known, exists, rv, tracked := sh.known, sh.exists, sh.rv, sh.tracked
		// Changes whose record is no longer what their caller compared with fail now.
		var live []pendingChange
		for _, p := range batch {
			if p.expect != nil && known {
				sum, ok := sh.data[p.dk]
				if ok != p.expect.exists || (ok && sum != p.expect.sum) {
					p.done <- errStale
					continue
				}
			}
			live = append(live, p)
		}
		s.mu.Unlock()
		batch = live
		if len(batch) == 0 {
			return
		}
		if !known { // a write before any read: read the copy the condition needs
			if _, err := s.readForWriter(ctx, name, sh); err != nil {
				answer(batch, fmt.Errorf("reading ConfigMap %s/%s before writing: %w", s.namespace, name, err))
				return
			}
			attempt--
			continue
		}
		if !exists && !slices.ContainsFunc(batch, func(p pendingChange) bool { return p.value != nil }) {
			answer(batch, nil) // only deletes, from a ConfigMap that does not exist
			return
		}
		var newRV string
		var err error
		if exists {
			newRV, err = s.patch(ctx, name, rv, tracked, batch)
		} else {
			newRV, err = s.create(ctx, name, batch)
		}
		if err == nil {
			s.mu.Lock()
			sh.tracked = !exists // a create is tracked; a patch drops them
			if !exists {
				sh.exists, sh.data = true, map[string]uint64{}
			}
			for _, p := range batch {
				if p.value == nil {
					delete(sh.data, p.dk)
				} else {
					sh.data[p.dk] = versionOf(*p.value).sum
				}
			}
			sh.rv = newRV
			sh.gen++
			s.mu.Unlock()
			answer(batch, nil)
			return
		}
		retry := apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || (exists && apierrors.IsNotFound(err))
		if attempt > 0 || !retry {
			answer(batch, fmt.Errorf("writing %d load balancer record(s) to ConfigMap %s/%s: %w", len(batch), s.namespace, name, err))
			return
		}
		// Another writer changed the shard: read it (the new copy) and check every change
		// against it again.
		if _, rerr := s.readForWriter(ctx, name, sh); rerr != nil {
			answer(batch, fmt.Errorf("re-reading ConfigMap %s/%s after a conflict: %w", s.namespace, name, rerr))
			return
		}
	}
}

// get reads shard name from the API server: nil when it does not exist.
func (s *configMapStore) get(ctx context.Context, name string) (*v1.ConfigMap, error) {
	start := time.Now()
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, name, metav1.GetOptions{})
	observeStore("Get", start, err)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// readForWriter reads shard name and makes it the copy: the writer may, reads of others may not
// while it writes.
func (s *configMapStore) readForWriter(ctx context.Context, name string, sh *shard) (*v1.ConfigMap, error) {
	cm, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	sh.adopt(cm)
	sh.gen++ // reads that started before this one must not replace it
	s.mu.Unlock()
	return cm, nil
}

// patch writes the batch's records (null deletes one) on the condition that the shard is still
// at rv, and returns the new resourceVersion. The API server answers with the ConfigMap's
// metadata only when a metadata client is set.
//
// With tracked, the patch also drops the ConfigMap's managedFields ([{}] resets them), and the
// API server does not track them again on a write without them: nobody applies these
// ConfigMaps server-side, and tracking costs the API server a walk of every record per write
// and the object a field entry per record.
func (s *configMapStore) patch(ctx context.Context, name, rv string, tracked bool, batch []pendingChange) (string, error) {
	data := make(map[string]*string, len(batch))
	for _, p := range batch {
		data[p.dk] = p.value
	}
	meta := map[string]any{"resourceVersion": rv}
	if tracked {
		meta["managedFields"] = []map[string]any{{}}
	}
	body, err := json.Marshal(map[string]any{"metadata": meta, "data": data})
	if err != nil {
		return "", err
	}
	start := time.Now()
	var newRV string
	if s.meta != nil {
		var m *metav1.PartialObjectMetadata
		m, err = s.meta.Resource(v1.SchemeGroupVersion.WithResource("configmaps")).Namespace(s.namespace).
			Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		if err == nil {
			newRV = m.ResourceVersion
		}
	} else {
		var cm *v1.ConfigMap
		cm, err = s.client.CoreV1().ConfigMaps(s.namespace).Patch(ctx, name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		if err == nil {
			newRV = cm.ResourceVersion
		}
	}
	observeStore("Update", start, err)
	return newRV, err
}

// create makes shard name with the batch's records and returns its resourceVersion.
func (s *configMapStore) create(ctx context.Context, name string, batch []pendingChange) (string, error) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "ccm-dummy"}}, Data: map[string]string{}}
	for _, p := range batch {
		if p.value != nil {
			cm.Data[p.dk] = *p.value
		}
	}
	start := time.Now()
	out, err := s.client.CoreV1().ConfigMaps(s.namespace).Create(ctx, cm, metav1.CreateOptions{})
	observeStore("Create", start, err)
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

func decodeRecord(raw string) (Record, error) {
	var r Record
	err := json.Unmarshal([]byte(raw), &r)
	return r, err
}

func observeStore(op string, start time.Time, err error) {
	metrics.ObserveCloudCall(ProviderName, "loadbalancer-store", op, start, metrics.Classify(err, apierrors.IsTooManyRequests))
}
