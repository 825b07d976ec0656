package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
)

// cloud is the harness's handle on a provider's cloud: a simulator process driven through
// common/simcontrol, or for the dummy (bare metal: no cloud API) its inventory file and its
// records in ConfigMaps.
type cloud interface {
	CloudConfig() string
	SetOutage(ctx context.Context, on bool) error
	// SetThrottle returns false when the provider has no API to throttle.
	SetThrottle(ctx context.Context, burst int, rate float64) (bool, error)
	Terminate(ctx context.Context, node string) error
	Resources(ctx context.Context) ([]simcontrol.Resource, error)
	Calls(ctx context.Context) (simcontrol.Calls, error)
	Secrets(ctx context.Context) ([]string, error)
}

// startCloud starts the provider's simulated cloud with one machine per node name.
func startCloud(ctx context.Context, env *testenv.Env, root, provider string, nodes []string) (cloud, error) {
	if provider == "dummy" {
		return newDummyCloud(env, nodes)
	}
	bin := filepath.Join(root, "bin", provider+"-sim")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./providers/"+provider+"/cmd/"+provider+"-sim")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the %s simulator: %w", provider, err)
	}
	cfg := filepath.Join(env.Dir, provider+".conf")
	control := filepath.Join(env.Dir, provider+".control")
	args := []string{"--nodes=" + strings.Join(nodes, ","), "--cloud-config=" + cfg, "--control-file=" + control}
	if provider == "openstack" {
		args = append(args, "--provision-delay=1s") // short, so churn converges in minutes
	}
	p, err := env.StartProcess(provider+"-sim", bin, args...)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, e1 := os.Stat(cfg)
		url, e2 := os.ReadFile(control)
		if e1 == nil && e2 == nil {
			return &simCloud{Client: simcontrol.Client{URL: string(url)}, cfg: cfg}, nil
		}
		if p.Exited() || time.Now().After(deadline) {
			return nil, fmt.Errorf("the %s simulator wrote no cloud-config or control URL; its log:\n%s", provider, p.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type simCloud struct {
	simcontrol.Client
	cfg string
}

func (s *simCloud) CloudConfig() string { return s.cfg }

func (s *simCloud) SetThrottle(ctx context.Context, burst int, rate float64) (bool, error) {
	return true, s.Client.SetThrottle(ctx, burst, rate)
}

// dummyCloud: the machines are [Instance] sections of an inventory file the dummy re-reads;
// an "outage" is every machine in state error (look-ups fail); the load balancers are the
// records in ConfigMaps kube-system/ccm-dummy-lb-*.
type dummyCloud struct {
	env       *testenv.Env
	cfg, inv  string
	nodes     []string
	state     map[string]string
	outage    bool
	configMap string
}

func newDummyCloud(env *testenv.Env, nodes []string) (*dummyCloud, error) {
	d := &dummyCloud{env: env, cfg: filepath.Join(env.Dir, "dummy.conf"), inv: filepath.Join(env.Dir, "inventory.conf"),
		nodes: nodes, state: map[string]string{}, configMap: "ccm-dummy-lb-"}
	for _, n := range nodes {
		d.state[n] = "running"
	}
	conf := fmt.Sprintf("[Global]\ninventory = %s\ninventory-refresh = 1s\n\n[Pool \"faults\"]\ncidr = 10.250.0.0/20\n", d.inv)
	if err := os.WriteFile(d.cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return d, d.write()
}

func (d *dummyCloud) write() error {
	var b strings.Builder
	for i, n := range d.nodes {
		state := d.state[n]
		if d.outage { // the cloud answers nothing, not even "gone"
			state = "error"
		}
		fmt.Fprintf(&b, "[Instance %q]\ninternal-ip = 10.251.%d.%d\nstate = %s\n\n", n, i/250, i%250+1, state)
	}
	return simcontrol.WriteFileAtomic(d.inv, b.String())
}

func (d *dummyCloud) CloudConfig() string { return d.cfg }

func (d *dummyCloud) SetOutage(_ context.Context, on bool) error {
	d.outage = on
	return d.write()
}

func (d *dummyCloud) SetThrottle(context.Context, int, float64) (bool, error) { return false, nil }

func (d *dummyCloud) Terminate(_ context.Context, node string) error {
	if _, ok := d.state[node]; !ok {
		return fmt.Errorf("no machine for node %s", node)
	}
	d.state[node] = "gone"
	return d.write()
}

func (d *dummyCloud) Resources(ctx context.Context) ([]simcontrol.Resource, error) {
	cms, err := d.env.Client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []simcontrol.Resource
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, d.configMap) {
			continue
		}
		for key := range cm.Data {
			// Keys are namespace_name ('_' occurs in neither part).
			out = append(out, simcontrol.Resource{Kind: "loadbalancer", Name: cm.Name + "/" + key, Service: strings.Replace(key, "_", "/", 1)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *dummyCloud) Calls(context.Context) (simcontrol.Calls, error) { return simcontrol.Calls{}, nil }

func (d *dummyCloud) Secrets(context.Context) ([]string, error) { return nil, nil }

// The dummy's records, as the orphans scenario reads them: a record is JSON with the Service's
// ownership tags (providers/dummy/store.go, Record).
const dummyUIDTag = "kubernetes.io/service-uid"

func (d *dummyCloud) recordMaps(ctx context.Context) ([]v1.ConfigMap, string, error) {
	cms, err := d.env.Client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	var out []v1.ConfigMap
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, d.configMap) {
			out = append(out, cm)
		}
	}
	return out, cms.ResourceVersion, nil
}

// recordsVersion changes whenever a record ConfigMap is written.
func (d *dummyCloud) recordsVersion(ctx context.Context) (string, error) {
	cms, _, err := d.recordMaps(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the dummy's records: %w", err)
	}
	var b strings.Builder
	for _, cm := range cms {
		fmt.Fprintf(&b, "%s@%s ", cm.Name, cm.ResourceVersion)
	}
	return b.String(), nil
}

// recordUIDs are the Service UIDs the records name, by Service (namespace/name).
func (d *dummyCloud) recordUIDs(ctx context.Context) (map[string]string, error) {
	cms, _, err := d.recordMaps(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range cms {
		for key, val := range cm.Data {
			var r struct {
				Tags map[string]string `json:"tags"`
			}
			if err := json.Unmarshal([]byte(val), &r); err != nil {
				return nil, fmt.Errorf("record %s/%s: %w", cm.Name, key, err)
			}
			out[strings.Replace(key, "_", "/", 1)] = r.Tags[dummyUIDTag]
		}
	}
	return out, nil
}

// watchRecords follows every version of the record ConfigMaps from now; the returned function
// ends it and counts, per Service (namespace/name), how often its record went from one version
// of its ConfigMap to the next (or with the ConfigMap's deletion): a delete, however brief.
func (d *dummyCloud) watchRecords(ctx context.Context) (func() (map[string]int, error), error) {
	cms, rv, err := d.recordMaps(ctx)
	if err != nil {
		return nil, err
	}
	held := map[string]map[string]bool{} // ConfigMap -> keys
	for _, cm := range cms {
		held[cm.Name] = keysOf(cm.Data)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := d.env.Client.CoreV1().ConfigMaps("kube-system").Watch(wctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		cancel()
		return nil, err
	}
	vanished := map[string]int{}
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				done <- fmt.Errorf("watching the dummy's records: %v", apierrors.FromObject(ev.Object))
				return
			}
			cm, ok := ev.Object.(*v1.ConfigMap)
			if !ok || !strings.HasPrefix(cm.Name, d.configMap) {
				continue
			}
			now := keysOf(cm.Data)
			if ev.Type == watch.Deleted {
				now = nil
			}
			for k := range held[cm.Name] {
				if !now[k] {
					vanished[strings.Replace(k, "_", "/", 1)]++
				}
			}
			held[cm.Name] = now
		}
	}()
	return func() (map[string]int, error) {
		cancel()
		w.Stop()
		if err := <-done; err != nil && wctx.Err() == nil {
			return nil, err
		}
		return vanished, nil
	}, nil
}

func keysOf(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
