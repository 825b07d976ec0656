// Command scalebench measures the service controller at scale: the dummy provider in process,
// its records in a store that answers each call after a set latency (a cloud API's answer
// time), against the real kube-apiserver and etcd of the test control plane.
//
// The scenario: --services LoadBalancer Services are created and served; a drift resync is
// then kept running (every --resync-period) while --new-services Services are created one
// after another, each timed from its creation to its address; then --burst-nodes Nodes are
// registered at once and the store's writes per load balancer are counted until the member
// update is over. `make bench-scale` runs it (and `make bench`); the figures are printed and
// written to bin/bench/scale.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/servicecontroller"
	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/dummy"
)

type settings struct {
	services, newServices, burst, workers int
	latency, resync, nodeDelay, spacing   time.Duration
}

type figures struct {
	setupS       float64
	newTimes     []float64 // seconds from creation to an address, per new Service
	resyncChecks int64     // store reads made by the resync while the new Services waited
	burstLBs     int
	burstWrites  []int // store writes per load balancer during the burst
	burstS       float64
}

func main() {
	var s settings
	flag.IntVar(&s.services, "services", 10000, "LoadBalancer Services served before the measurements")
	flag.IntVar(&s.newServices, "new-services", 20, "Services created one after another while the drift resync runs")
	flag.IntVar(&s.burst, "burst-nodes", 40, "Nodes registered at once after the new Services")
	flag.IntVar(&s.workers, "workers", 10, "--concurrent-service-syncs")
	flag.DurationVar(&s.latency, "latency", 20*time.Millisecond, "the store's answer time per call once the Services are served (a cloud API's)")
	flag.DurationVar(&s.resync, "resync-period", 5*time.Second, "--load-balancer-resync-period during the measurements")
	flag.DurationVar(&s.nodeDelay, "node-sync-delay", time.Second, "--node-sync-delay (Node changes coalesced over this quiet period)")
	flag.DurationVar(&s.spacing, "spacing", 500*time.Millisecond, "time between two new Services")
	out := flag.String("out", "bin/bench", "folder for scale.md")
	flag.Parse()
	command := "make bench-scale SCALE_ARGS=\"" + strings.Join(os.Args[1:], " ") + "\""
	f, err := run(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
	md := report(s, f, command)
	fmt.Print(md)
	if err := os.MkdirAll(*out, 0o755); err == nil {
		err = os.WriteFile(filepath.Join(*out, "scale.md"), []byte(md), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalebench:", err)
		os.Exit(1)
	}
}

func run(s settings) (*figures, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 2000, 4000 // the API server, not the client, is what is measured
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		if err := testenv.RegisterNode(ctx, client, fmt.Sprintf("node-%02d", i)); err != nil {
			return nil, err
		}
	}
	store := newSlowStore()
	cloud, err := dummy.New(strings.NewReader("[Global]\nregion = scale\n\n[Pool \"scale\"]\ncidr = 10.64.0.0/12\n"))
	if err != nil {
		return nil, err
	}
	cloud.UseClusterName("scale")
	cloud.UseStore(store)
	inf := informers.NewSharedInformerFactory(client, 0)
	sc, err := servicecontroller.New(cloud, client, inf.Core().V1().Services(), inf.Core().V1().Nodes(), options(s))
	if err != nil {
		return nil, err
	}
	inf.Start(ctx.Done())
	go sc.Run(ctx, s.workers, nil)
	f := &figures{}

	fmt.Printf("scalebench: serving %d LoadBalancer Services\n", s.services)
	start := time.Now()
	if err := createServices(ctx, env, client, "scale", s.services); err != nil {
		return nil, err
	}
	f.setupS = time.Since(start).Seconds()

	store.latency.Store(int64(s.latency))
	go sc.RunDriftResync(ctx, s.resync)
	time.Sleep(s.resync + s.resync/2) // the first resync is under way
	fmt.Printf("scalebench: %d new Services, %v apart, while the drift resync runs\n", s.newServices, s.spacing)
	reads := store.reads.Load()
	w, err := benchscenario.Watch(ctx, env, "services", "scale-new", s.newServices, benchscenario.Addressed)
	if err != nil {
		return nil, err
	}
	created := make(map[string]time.Time, s.newServices)
	var mu sync.Mutex
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale-new"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	for i := range s.newServices {
		name := fmt.Sprintf("new-%03d", i)
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		if _, err := client.CoreV1().Services("scale-new").Create(ctx, service("scale-new", name), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		time.Sleep(s.spacing)
	}
	at := w.Wait(nil)
	w.Stop()
	f.resyncChecks = store.reads.Load() - reads
	for name, t := range at {
		f.newTimes = append(f.newTimes, t.Sub(created[name]).Seconds())
	}
	if len(f.newTimes) != s.newServices {
		return nil, fmt.Errorf("%d of %d new Services got an address", len(f.newTimes), s.newServices)
	}
	return f, burst(ctx, client, store, s, f)
}

// burst registers s.burst Nodes at once and counts the store's writes per load balancer until
// every load balancer has been written and no write came for 5 s.
func burst(ctx context.Context, client kubernetes.Interface, store *slowStore, s settings, f *figures) error {
	fmt.Printf("scalebench: registering %d Nodes at once\n", s.burst)
	keys := store.keys()
	f.burstLBs = len(keys)
	before := store.writesByKey()
	start := time.Now()
	if err := benchscenario.Parallel(s.burst, func(i int) error {
		return testenv.RegisterNode(ctx, client, fmt.Sprintf("burst-%02d", i))
	}); err != nil {
		return err
	}
	last := store.lastWrite()
	for {
		time.Sleep(time.Second)
		now := store.writesByKey()
		all := true
		for _, k := range keys {
			if now[k] == before[k] {
				all = false
				break
			}
		}
		if l := store.lastWrite(); l != last {
			last = l
			continue
		}
		if all && time.Since(last) > 5*time.Second {
			for _, k := range keys {
				f.burstWrites = append(f.burstWrites, now[k]-before[k])
			}
			f.burstS = last.Sub(start).Seconds()
			return nil
		}
		if time.Since(start) > 20*time.Minute {
			return errors.New("the burst's member update did not finish in 20 minutes")
		}
	}
}

// service is a LoadBalancer Service without node ports: 10,000 would not fit the API
// server's node port range, and the dummy provider does not use them.
func service(ns, name string) *v1.Service {
	s := testenv.LoadBalancerService(ns, name, 80)
	s.Spec.AllocateLoadBalancerNodePorts = new(bool)
	return s
}

func createServices(ctx context.Context, env *testenv.Env, client kubernetes.Interface, ns string, n int) error {
	done, err := benchscenario.WatchUntil(ctx, env, "services", ns, n, benchscenario.Addressed)
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := benchscenario.Parallel(n, func(i int) error {
		_, err := client.CoreV1().Services(ns).Create(ctx, service(ns, fmt.Sprintf("svc-%05d", i)), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if got := len(done(nil)); got != n {
		return fmt.Errorf("%d of %d Services got an address", got, n)
	}
	return nil
}

// discard is an EventRecorder that drops Events: the bench measures the queue, not the Event
// sink, and 20,000 Events at setup would only slow the API server for both runs alike.
func discard() record.EventRecorder { return &record.FakeRecorder{} }

// slowStore is the dummy's MemStore answering each call after latency; it counts reads and
// each record's writes, which is where the bench reads its figures.
type slowStore struct {
	mem     *dummy.MemStore
	latency atomic.Int64
	reads   atomic.Int64
	mu      sync.Mutex
	writes  map[string]int
	last    time.Time
}

func newSlowStore() *slowStore { return &slowStore{mem: dummy.NewMemStore(), writes: map[string]int{}} }

func (s *slowStore) wait() { time.Sleep(time.Duration(s.latency.Load())) }

func (s *slowStore) Load(ctx context.Context) (map[string]dummy.Record, error) {
	s.wait()
	s.reads.Add(1)
	return s.mem.Load(ctx)
}

func (s *slowStore) Get(ctx context.Context, key string) (dummy.Record, bool, error) {
	s.wait()
	s.reads.Add(1)
	return s.mem.Get(ctx, key)
}

func (s *slowStore) Put(ctx context.Context, key string, r dummy.Record) error {
	s.wait()
	s.wrote(key)
	return s.mem.Put(ctx, key, r)
}

func (s *slowStore) Delete(ctx context.Context, key string) error {
	s.wait()
	s.wrote(key)
	return s.mem.Delete(ctx, key)
}

func (s *slowStore) wrote(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes[key]++
	s.last = time.Now()
}

func (s *slowStore) writesByKey() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.writes)
}

func (s *slowStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.writes))
}

func (s *slowStore) lastWrite() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
