package dummy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/poollb"
)

// apiServer is client-go's fake made to keep resourceVersions, refuse a write whose
// resourceVersion is stale (409, as kube-apiserver does) and count the patches that reset
// managedFields. client-go's fake does neither.
type apiServer struct {
	*fake.Clientset
	mu        sync.Mutex
	rv        int
	conflicts int
	resets    int   // patches with managedFields [{}]
	fail      error // when set, every write fails with it
}

func newAPIServer() *apiServer {
	a := &apiServer{Clientset: fake.NewClientset()}
	gvr := v1.SchemeGroupVersion.WithResource("configmaps")
	tracker := a.Tracker()
	a.PrependReactor("create", "configmaps", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.fail != nil {
			return true, nil, a.fail
		}
		cm := act.(k8stesting.CreateAction).GetObject().(*v1.ConfigMap).DeepCopy()
		a.rv++
		cm.ResourceVersion = strconv.Itoa(a.rv)
		cm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "ccm", Operation: metav1.ManagedFieldsOperationUpdate}}
		if err := tracker.Create(gvr, cm, cm.Namespace); err != nil {
			return true, nil, err
		}
		return true, cm, nil
	})
	a.PrependReactor("patch", "configmaps", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.fail != nil {
			return true, nil, a.fail
		}
		p := act.(k8stesting.PatchAction)
		obj, err := tracker.Get(gvr, p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*v1.ConfigMap)
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
				ManagedFields   []any  `json:"managedFields"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &meta); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		if rv := meta.Metadata.ResourceVersion; rv != "" && rv != cur.ResourceVersion {
			a.conflicts++
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), p.GetName(), fmt.Errorf("resourceVersion %s, not %s", cur.ResourceVersion, rv))
		}
		orig, _ := json.Marshal(cur)
		patched, err := strategicpatch.StrategicMergePatch(orig, p.GetPatch(), &v1.ConfigMap{})
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		next := &v1.ConfigMap{}
		if err := json.Unmarshal(patched, next); err != nil {
			return true, nil, err
		}
		a.rv++
		next.ResourceVersion = strconv.Itoa(a.rv)
		if meta.Metadata.ManagedFields != nil {
			a.resets++
		}
		return true, next, tracker.Update(gvr, next, next.Namespace)
	})
	a.PrependReactor("update", "configmaps", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		cm := act.(k8stesting.UpdateAction).GetObject().(*v1.ConfigMap).DeepCopy()
		obj, err := tracker.Get(gvr, cm.Namespace, cm.Name)
		if err != nil {
			return true, nil, err
		}
		if cm.ResourceVersion != obj.(*v1.ConfigMap).ResourceVersion {
			a.conflicts++
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), cm.Name, errors.New("stale"))
		}
		a.rv++
		cm.ResourceVersion = strconv.Itoa(a.rv)
		return true, cm, tracker.Update(gvr, cm, cm.Namespace)
	})
	return a
}

// served counts the API calls by verb since the last call of served.
func (a *apiServer) served(seen *int) map[string]int {
	acts := a.Actions()
	out := map[string]int{}
	for _, act := range acts[*seen:] {
		if act.GetResource().Resource == "configmaps" {
			out[act.GetVerb()]++
		}
	}
	*seen = len(acts)
	return out
}

// sameShardKeys returns n store keys of cluster c whose records share one shard.
func sameShardKeys(s *configMapStore, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := names.Name(s.cluster, "ns", fmt.Sprintf("svc-%d", i))
		if len(keys) == 0 || s.shardOf(k) == s.shardOf(keys[0]) {
			keys = append(keys, k)
		}
	}
	return keys
}

func rec(name, fp string) Record {
	return Record{Name: name, IPs: []string{"192.0.2.1"}, Fingerprint: fp, Tags: map[string]string{"k": "v"}}
}

// Conditional writes against the copy: no read after the load, concurrent changes of one shard
// share writes, the first patch after the create drops managedFields, and a record changed by
// another writer since the copy fails its change alone (errStale, nothing written) while the
// shard's other changes are written after one re-read.
func TestConfigMapStoreConditionalWrites(t *testing.T) {
	ctx := context.Background()
	api := newAPIServer()
	s := newConfigMapStore(api, "kube-system", "c")
	keys := sameShardKeys(s, 20)
	if _, err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	seen := 0
	api.served(&seen)

	// 20 new records at once, each on the condition that it does not exist yet.
	var wg sync.WaitGroup
	errs := make([]error, len(keys))
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, ok := s.cached(k)
			if !ok || v.exists {
				errs[i] = fmt.Errorf("cached(%s) = %+v, ok %v; want a copy without it", k, v, ok)
				return
			}
			errs[i] = s.putIf(ctx, k, rec(k, "1"), &v)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	calls := api.served(&seen)
	if calls["get"] != 0 || calls["create"] != 1 || calls["create"]+calls["patch"] >= len(keys) {
		t.Errorf("20 new records of one shard: %v, want no get, one create and fewer writes than records", calls)
	}
	cm, err := api.CoreV1().ConfigMaps("kube-system").Get(ctx, s.shardOf(keys[0]), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != len(keys) {
		t.Errorf("the shard holds %d records, want %d", len(cm.Data), len(keys))
	}
	if calls["patch"] > 0 && api.resets != 1 {
		t.Errorf("%d patches reset managedFields, want the first after the create only", api.resets)
	}
	api.served(&seen)

	// Another writer (another ccm, a hand edit) changes keys[0] in the store.
	other := newConfigMapStore(api, "kube-system", "c")
	if err := other.Put(ctx, keys[0], rec(keys[0], "theirs")); err != nil {
		t.Fatal(err)
	}
	api.served(&seen)
	conflicts := api.conflicts

	// This store's copy still has its own keys[0]: a change of it compared with that copy
	// fails and writes nothing; keys[1]'s change is written after one re-read of the shard.
	v0, _ := s.cached(keys[0])
	v1, _ := s.cached(keys[1])
	var err0, err1 error
	wg.Add(2)
	go func() { defer wg.Done(); err0 = s.putIf(ctx, keys[0], rec(keys[0], "2"), &v0) }()
	go func() { defer wg.Done(); err1 = s.putIf(ctx, keys[1], rec(keys[1], "2"), &v1) }()
	wg.Wait()
	if !errors.Is(err0, errStale) {
		t.Errorf("a change compared with a copy another writer made stale: %v, want errStale", err0)
	}
	if err1 != nil {
		t.Errorf("a change of a record nobody else changed: %v", err1)
	}
	if api.conflicts == conflicts {
		t.Errorf("no conflict at the API server: the write was not conditional on the copy")
	}
	got0, _, _ := other.Get(ctx, keys[0])
	got1, _, _ := other.Get(ctx, keys[1])
	if got0.Fingerprint != "theirs" || got1.Fingerprint != "2" {
		t.Errorf("store after the stale change: %s=%q %s=%q, want theirs and 2", keys[0], got0.Fingerprint, keys[1], got1.Fingerprint)
	}
	// The re-read is the new copy: the stale change, compared again with it, is written.
	v, ok := s.cached(keys[0])
	if !ok || v != versionOfRecord(rec(keys[0], "theirs")) {
		t.Fatalf("copy after the re-read: %+v ok %v, want the other writer's record", v, ok)
	}
	if err := s.putIf(ctx, keys[0], rec(keys[0], "3"), &v); err != nil {
		t.Errorf("the change compared with the re-read copy: %v", err)
	}
}

// A failed write fails every change of its batch, and nothing of it enters the copy.
func TestConfigMapStoreFailedWriteFailsEveryWaiter(t *testing.T) {
	ctx := context.Background()
	api := newAPIServer()
	s := newConfigMapStore(api, "kube-system", "c")
	keys := sameShardKeys(s, 8)
	if err := s.Put(ctx, keys[0], rec(keys[0], "1")); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	api.fail = apierrors.NewInternalError(errors.New("etcd is gone"))
	api.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(keys))
	for i, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _ := s.cached(k)
			errs[i] = s.putIf(ctx, k, rec(k, "2"), &v)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil || errors.Is(err, errStale) {
			t.Errorf("change %d of a failed write: %v, want the write's error", i, err)
		}
	}
	for _, k := range keys {
		v, _ := s.cached(k)
		if (k == keys[0]) != v.exists || (v.exists && v != versionOfRecord(rec(k, "1"))) {
			t.Errorf("copy of %s after the failed write: %+v", k, v)
		}
	}
}

// A sync against the copy writes once and reads nothing; when another writer changed the
// record meanwhile, the conditional write fails, the sync reads the record and repairs it.
func TestOptimisticSyncRepairsAnotherWritersChange(t *testing.T) {
	ctx := context.Background()
	api := newAPIServer()
	c, err := New(strings.NewReader(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	c.UseStore(newConfigMapStore(api, "kube-system", "c"))
	svc := svcUID("default", "web", "uid-web", nil, 80)
	if _, err := c.lb.EnsureLoadBalancer(ctx, "c", svc, []*v1.Node{nodeNamed("n1")}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	api.served(&seen)
	if err := c.lb.UpdateLoadBalancer(ctx, "c", svc, []*v1.Node{nodeNamed("n1"), nodeNamed("n2")}); err != nil {
		t.Fatal(err)
	}
	if calls := api.served(&seen); calls["get"] != 0 || calls["patch"] != 1 {
		t.Errorf("a member change: %v, want one patch and no get", calls)
	}

	// A hand edit of the record's ports, then a member change compared with the (now old) copy.
	k := recordKey("c", svc)
	other := newConfigMapStore(api, "kube-system", "c")
	edited, _, err := other.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	edited.Ports = []string{"TCP/8080"}
	if err := other.Put(ctx, k, edited); err != nil {
		t.Fatal(err)
	}
	api.served(&seen)
	nodes := []*v1.Node{nodeNamed("n1"), nodeNamed("n2"), nodeNamed("n3")}
	if err := c.lb.UpdateLoadBalancer(ctx, "c", svc, nodes); err != nil {
		t.Fatal(err)
	}
	calls := api.served(&seen)
	if calls["patch"] != 2 || calls["get"] != 2 {
		t.Errorf("a member change after a hand edit: %v, want a refused patch, the shard read twice (the writer's re-read, the sync's read) and the repair", calls)
	}
	got, _, err := other.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	want := c.lb.record(ownership.Of("c", svc), svc, poollb.CanonicalAddrs(got.IPs), "", []string{"n1", "n2", "n3"})
	if strings.Join(got.Ports, ",") != "TCP/80" || got.Fingerprint != want.Fingerprint {
		t.Errorf("record after the repair: ports %v fingerprint %s, want [TCP/80] and the three Nodes' %s", got.Ports, got.Fingerprint, want.Fingerprint)
	}
}
