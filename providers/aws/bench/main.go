// Command bench measures the aws provider against the EC2/ELB fake with the real ccm-aws
// binary and a real kube-apiserver: cloud calls per operation for the initial sync of N Nodes
// and M LoadBalancer Services, for a ccm restart with nothing changed, for one Node added, and
// the share of throttled calls when M more Services are created under EC2-style throttling.
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/aws/bench
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const cluster = "bench"

var (
	lbType       string
	provisioning time.Duration
)

func main() {
	nodes := flag.Int("nodes", 200, "Nodes (one EC2 instance each)")
	services := flag.Int("services", 100, "LoadBalancer Services")
	burst := flag.Int("burst", 100, "throttling token bucket size for the last phase")
	rate := flag.Float64("rate", 20, "throttling refill per second for the last phase")
	timeout := flag.Duration("timeout", 8*time.Minute, "give up after")
	flag.StringVar(&lbType, "type", "classic", "load balancer type: classic or nlb")
	flag.DurationVar(&provisioning, "nlb-provisioning", 10*time.Second, "how long a new NLB stays provisioning (with --type=nlb)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *nodes, *services, *burst, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type phase struct {
	name      string
	calls     map[string]int
	throttled map[string]int
	took      time.Duration
}

func run(ctx context.Context, nNodes, nSvcs, burst int, rate float64) error {
	binDir := os.Getenv("CCM_BIN_DIR")
	if binDir == "" {
		return fmt.Errorf("set CCM_BIN_DIR (with ccm-aws) and CCM_TESTBIN")
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
	if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", "aws")); err != nil {
		return err
	}
	fake := fakeaws.New("us-east-1", cluster)
	fake.SetNLBProvisioning(provisioning)
	url, err := fake.Start()
	if err != nil {
		return err
	}
	defer fake.Close()
	conf, err := writeConfig(env.Dir, url)
	if err != nil {
		return err
	}
	names := make([]string, nNodes+1)
	for i := range names {
		names[i] = fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", 8+i/65536, i/256%256, i%256)
		if i < nNodes {
			addMachine(fake, names[i], i)
		}
	}
	fmt.Printf("registering %d Nodes\n", nNodes)
	for _, n := range names[:nNodes] {
		if err := testenv.RegisterNode(ctx, env.Client, n); err != nil {
			return err
		}
	}
	start := func(name string) (*testenv.CCM, error) {
		return env.StartCCM(ctx, testenv.CCMOptions{Name: name, Binary: filepath.Join(binDir, "ccm-aws"), Provider: "aws", CloudConfig: conf})
	}
	var phases []phase
	measure := func(name string, do func() error) error {
		c0, t0, s := fake.Calls(), fake.Throttled(), time.Now()
		if err := do(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		quiet(ctx, fake)
		phases = append(phases, phase{name, diff(fake.Calls(), c0), diff(fake.Throttled(), t0), time.Since(s)})
		fmt.Printf("%s: done in %v\n", name, time.Since(s).Round(time.Millisecond))
		return nil
	}

	var ccm *testenv.CCM
	if err := measure("initial sync", func() error {
		if ccm, err = start("ccm-1"); err != nil {
			return err
		}
		if err := waitNodes(ctx, env, names[:nNodes]); err != nil {
			return err
		}
		return createServices(ctx, env, "svc", nSvcs)
	}); err != nil {
		return err
	}
	ccm.Stop(10 * time.Second)
	if err := measure("restart, nothing changed", func() error {
		ccm, err = start("ccm-2")
		if err != nil {
			return err
		}
		// Done when the restarted ccm has ensured every Service once.
		token, err := env.MetricsReaderToken(ctx)
		if err != nil {
			return err
		}
		return poll(ctx, "every Service ensured after the restart", func() (bool, error) {
			n, err := ccm.Metric(token, `ccm_reconcile_total{kind="loadbalancer",operation="ensure"`)
			return n >= float64(nSvcs), err
		})
	}); err != nil {
		return err
	}
	if err := measure("one Node added", func() error {
		addMachine(fake, names[nNodes], nNodes)
		if err := testenv.RegisterNode(ctx, env.Client, names[nNodes]); err != nil {
			return err
		}
		return waitMembers(ctx, fake, nNodes+1)
	}); err != nil {
		return err
	}
	fake.Throttle(burst, rate)
	if err := measure(fmt.Sprintf("%d more Services, throttled %d/%g/s", nSvcs, burst, rate), func() error {
		return createServices(ctx, env, "thr", nSvcs)
	}); err != nil {
		return err
	}
	ccm.Stop(10 * time.Second)
	fmt.Printf("\n%d Nodes, %d Services of type %s", nNodes, nSvcs, lbType)
	if lbType == "nlb" {
		fmt.Printf(" (an NLB is provisioning for %v)", provisioning)
	}
	fmt.Println(":")
	print(phases)
	return nil
}

func addMachine(f *fakeaws.Server, name string, i int) {
	f.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1" + string(rune('a'+i%3)), PrivateDNS: name,
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{fmt.Sprintf("10.%d.%d.%d", 8+i/65536, i/256%256, i%256)}}}})
}

func writeConfig(dir, url string) (string, error) {
	creds := filepath.Join(dir, "aws-credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDBENCH\naws_secret_access_key = bench-secret\n"), 0o600); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "aws.conf")
	return conf, os.WriteFile(conf, []byte(fmt.Sprintf("[Global]\nRegion = us-east-1\nKubernetesClusterID = %s\nCredentialsFile = %s\n\n"+
		"[ServiceOverride \"ec2\"]\nService = ec2\nURL = %s\n\n[ServiceOverride \"elb\"]\nService = elasticloadbalancing\nURL = %s\n", cluster, creds, url, url)), 0o600)
}

func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (last error: %v)", what, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func waitNodes(ctx context.Context, env *testenv.Env, names []string) error {
	return poll(ctx, "Nodes initialised", func() (bool, error) {
		l, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, n := range l.Items {
			if n.Spec.ProviderID != "" {
				done++
			}
		}
		return done >= len(names), nil
	})
}

func createServices(ctx context.Context, env *testenv.Env, prefix string, n int) error {
	for i := 0; i < n; i++ {
		s := testenv.LoadBalancerService("default", fmt.Sprintf("%s-%d", prefix, i), 80)
		if lbType == "nlb" {
			s.Annotations = map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
		}
		if _, err := env.Client.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return poll(ctx, "Services with a hostname", func() (bool, error) {
		l, err := env.Client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, s := range l.Items {
			if strings.HasPrefix(s.Name, prefix+"-") && len(s.Status.LoadBalancer.Ingress) > 0 {
				done++
			}
		}
		return done >= n, nil
	})
}

func waitMembers(ctx context.Context, f *fakeaws.Server, n int) error {
	return poll(ctx, "every load balancer with the new instance", func() (bool, error) {
		if lbType == "nlb" {
			m, _ := f.MinTargets()
			return m >= n, nil
		}
		for _, name := range f.ClassicLBNames() {
			if lb, _ := f.ClassicLB(name); len(lb.Instances) < n {
				return false, nil
			}
		}
		return true, nil
	})
}

// quiet waits until the fake has seen no call for 3 seconds.
func quiet(ctx context.Context, f *fakeaws.Server) {
	last, since := total(f.Calls()), time.Now()
	for time.Since(since) < 3*time.Second && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if t := total(f.Calls()); t != last {
			last, since = t, time.Now()
		}
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func diff(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func isWrite(op string) bool {
	_, name, _ := strings.Cut(op, ":")
	return !strings.HasPrefix(name, "Describe")
}

func print(phases []phase) {
	ops := map[string]bool{}
	for _, p := range phases {
		for op := range p.calls {
			ops[op] = true
		}
	}
	var sorted []string
	for op := range ops {
		sorted = append(sorted, op)
	}
	sort.Strings(sorted)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "operation\t")
	for _, p := range phases {
		fmt.Fprintf(w, "%s\t", p.name)
	}
	fmt.Fprintln(w)
	row := func(label string, f func(p phase) string) {
		fmt.Fprintf(w, "%s\t", label)
		for _, p := range phases {
			fmt.Fprintf(w, "%s\t", f(p))
		}
		fmt.Fprintln(w)
	}
	for _, op := range sorted {
		row(op, func(p phase) string { return fmt.Sprint(p.calls[op]) })
	}
	sum := func(p phase, write bool) int {
		n := 0
		for op, v := range p.calls {
			if isWrite(op) == write {
				n += v
			}
		}
		return n
	}
	row("reads", func(p phase) string { return fmt.Sprint(sum(p, false)) })
	row("writes", func(p phase) string { return fmt.Sprint(sum(p, true)) })
	row("throttled", func(p phase) string {
		t, c := total(p.throttled), total(p.calls)
		if c == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%.1f%%)", t, 100*float64(t)/float64(c))
	})
	row("wall time", func(p phase) string { return p.took.Round(100 * time.Millisecond).String() })
	w.Flush()
}
