// Command bench measures the vSphere provider against vcsim and the real kube-apiserver: N
// Nodes (N VMs) registered at once, the vCenter calls and sessions it takes to initialise
// them, the wall time, and the calls of one periodic address refresh of all nodes.
//
//	CCM_BIN_DIR=bin CCM_TESTBIN=bin/testbin go run ./providers/vsphere/bench --nodes=100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

func main() {
	nodes := flag.Int("nodes", 100, "Nodes (and VMs) to initialise at once")
	dcs := flag.Int("datacenters", 2, "datacenters in the simulated vCenter (VMs spread over them)")
	refresh := flag.Duration("refresh", 10*time.Second, "the ccm's --node-status-update-frequency (periodic address refresh)")
	rounds := flag.Int("rounds", 3, "refresh rounds to average")
	flag.Parse()
	if err := run(*nodes, *dcs, *refresh, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n, dcs int, refresh time.Duration, rounds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := os.Getenv("CCM_BIN_DIR")
	if dir == "" {
		return fmt.Errorf("set CCM_BIN_DIR to the folder holding ccm-vsphere (make build-vsphere)")
	}
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", "vsphere")); err != nil {
		return err
	}
	const user, password = "bench@vsphere.local", "bench-password"
	s, err := sim.Start(ctx, sim.Options{User: user, Password: password, Datacenters: dcs, ZoneCategory: "k8s-zone", RegionCategory: "k8s-region"})
	if err != nil {
		return err
	}
	defer s.Close()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
		if _, err := s.AddVM(ctx, names[i], i%dcs, 0, []sim.NIC{{Network: "VM Network", IPs: []string{fmt.Sprintf("10.8.%d.%d", i/250, i%250+1)}}}); err != nil {
			return err
		}
	}
	var dcList []string
	for i := range dcs {
		dcList = append(dcList, sim.DatacenterName(i))
	}
	// cache-ttl below the refresh period, so every refresh round reads vCenter (the worst case).
	cfg := fmt.Sprintf("[Global]\nserver = %s\nport = %s\nuser = %q\npassword = %q\ninsecure-flag = 1\ndatacenters = %q\ncache-ttl = %s\n\n[Labels]\nzone = k8s-zone\nregion = k8s-region\n",
		s.Host(), s.Port(), user, password, strings.Join(dcList, ","), refresh/2)
	cfgPath := filepath.Join(env.Dir, "vsphere.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	ccm, err := env.StartCCM(ctx, testenv.CCMOptions{Binary: filepath.Join(dir, "ccm-vsphere"), Provider: "vsphere", CloudConfig: cfgPath,
		Args: []string{"--node-status-update-frequency=" + refresh.String()}})
	if err != nil {
		return err
	}
	tok, err := env.MetricsReaderToken(ctx)
	if err != nil {
		return err
	}
	if err := waitLeader(ctx, ccm, tok); err != nil {
		return err
	}
	before, err := calls(ccm, tok)
	if err != nil {
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := testenv.RegisterNode(ctx, env.Client, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	for {
		list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		done := 0
		for _, nd := range list.Items {
			if nd.Spec.ProviderID != "" && nd.Labels["topology.kubernetes.io/zone"] != "" {
				done++
			}
		}
		if done == n {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d nodes initialised; ccm log %s", done, n, ccm.LogPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wall := time.Since(start)
	time.Sleep(500 * time.Millisecond) // let in-flight calls land in the metrics
	after, err := calls(ccm, tok)
	if err != nil {
		return err
	}
	init := sub(after, before)

	// Periodic refresh: watch the counters for a few rounds of --node-status-update-frequency
	// and count the bursts of calls (one per round), so the figure is per observed round.
	r0, err := calls(ccm, tok)
	if err != nil {
		return err
	}
	prev, bursts, lastChange := total(r0), 0, time.Time{}
	for end := time.Now().Add(time.Duration(rounds)*refresh + refresh/2); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		cur, err := calls(ccm, tok)
		if err != nil {
			return err
		}
		if t := total(cur); t != prev {
			if time.Since(lastChange) > refresh/2 {
				bursts++
			}
			prev, lastChange = t, time.Now()
		}
	}
	time.Sleep(500 * time.Millisecond)
	r1, err := calls(ccm, tok)
	if err != nil {
		return err
	}
	ref := sub(r1, r0)
	if bursts == 0 {
		bursts = 1 // no call at all: report zero per round
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "vSphere bench: %d Nodes / VMs in %d datacenters, vcsim + real kube-apiserver\n", n, dcs)
	fmt.Fprintf(w, "figure\tvalue\ttarget\n")
	fmt.Fprintf(w, "vCenter calls to initialise all\t%.0f\t\n", total(init))
	fmt.Fprintf(w, "vCenter calls per node\t%.2f\t<= 5\n", total(init)/float64(n))
	fmt.Fprintf(w, "sessions opened (SOAP Login)\t%.0f\t1 per vCenter\n", init["vim25 Login"])
	fmt.Fprintf(w, "vAPI (tagging) sessions opened\t%.0f\t\n", init["vapi POST /rest/com/vmware/cis/session"]+init["vapi POST /api/session"])
	fmt.Fprintf(w, "wall time, all initialised\t%v\t<= 7s\n", wall.Round(10*time.Millisecond))
	fmt.Fprintf(w, "refresh rounds observed\t%d\t\n", bursts)
	fmt.Fprintf(w, "calls per refresh of all nodes\t%.2f\t\n", total(ref)/float64(bursts))
	fmt.Fprintf(w, "calls per node per refresh\t%.3f\t<= 0.6\n", total(ref)/float64(bursts)/float64(n))
	w.Flush()
	fmt.Println("\ninitialisation calls by operation:")
	printOps(init)
	fmt.Printf("\nrefresh calls by operation (%d rounds of %v):\n", bursts, refresh)
	printOps(ref)
	return nil
}

func waitLeader(ctx context.Context, c *testenv.CCM, tok string) error {
	for ctx.Err() == nil {
		if code, _, err := c.Get("/healthz", tok); err == nil && code == 200 {
			time.Sleep(6 * time.Second) // leader election (lease 4s) and controllers starting
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return ctx.Err()
}

// calls scrapes ccm_cloud_api_requests_total for the vsphere provider by "service operation".
func calls(c *testenv.CCM, tok string) (map[string]float64, error) {
	code, body, err := c.Get("/metrics", tok)
	if err != nil || code != 200 {
		return nil, fmt.Errorf("/metrics: %d %v", code, err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "ccm_cloud_api_requests_total{") || !strings.Contains(l, `provider="vsphere"`) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return nil, err
		}
		out[label(l, "service")+" "+label(l, "operation")] += v
	}
	return out, nil
}

func label(l, name string) string {
	i := strings.Index(l, name+`="`)
	if i < 0 {
		return ""
	}
	rest := l[i+len(name)+2:]
	return rest[:strings.Index(rest, `"`)]
}

func sub(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func total(m map[string]float64) (t float64) {
	for _, v := range m {
		t += v
	}
	return t
}

func printOps(m map[string]float64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("  %-50s %.0f\n", k, m[k])
	}
}
