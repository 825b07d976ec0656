package benchscenario

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// Cluster is a bench's local control plane with the provider's overlay (deploy/NAME, for its
// RBAC) applied, the ccm binary to run on it and a token that may read the ccm's /metrics.
type Cluster struct {
	*testenv.Env
	Binary string // $CCM_BIN_DIR/ccm-NAME
	Token  string
}

// StartCluster starts the control plane for provider's bench. The caller stops it.
func StartCluster(ctx context.Context, provider string) (*Cluster, error) {
	dir := os.Getenv("CCM_BIN_DIR")
	if dir == "" {
		return nil, fmt.Errorf("set CCM_BIN_DIR to the folder holding ccm-%s (make build-%s), and CCM_TESTBIN", provider, provider)
	}
	env, err := testenv.Start(ctx, testenv.Options{Overlay: provider})
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, Binary: filepath.Join(dir, "ccm-"+provider)}
	if c.Token, err = env.MetricsReaderToken(ctx); err != nil {
		env.Stop()
		return nil, err
	}
	return c, nil
}

// Diff is what each counter ("ec2:DescribeInstances" -> calls) grew by from before to after.
func Diff(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Format prints counters as sorted "op=n" pairs.
func Format(m map[string]int) string {
	var out []string
	for op, n := range m {
		out = append(out, fmt.Sprintf("%s=%d", op, n))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// CreateServices creates n LoadBalancer Services PREFIX-0000, PREFIX-0001, ... in default at
// once, with annotations, and returns each one's time from the creation to its address.
func CreateServices(ctx context.Context, c *Cluster, ccm *testenv.CCM, prefix string, n int, annotations map[string]string) ([]float64, error) {
	done, err := WatchUntil(ctx, c.Env, "services", "default", n, func(obj any) bool {
		return strings.HasPrefix(obj.(metav1.Object).GetName(), prefix+"-") && Addressed(obj)
	})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := Parallel(n, func(i int) error {
		s := testenv.LoadBalancerService("default", fmt.Sprintf("%s-%04d", prefix, i), 80)
		s.Annotations = maps.Clone(annotations)
		_, err := c.Client.CoreV1().Services("default").Create(ctx, s, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	times := Since(done(ccm.Done()), t0)
	if len(times) < n {
		return times, Short(ccm, prefix+" Services addressed", len(times), n)
	}
	return times, nil
}

// NodeAddedLBs is the flag the provider benches share: how many LoadBalancer Services exist
// when one Node is added (the figure is 200). Those beyond M are created first.
const NodeAddedLBs = 200

// RegisterNodes registers the Nodes names at once, as their kubelets would, and returns each
// one's time from the registration to initialised.
func RegisterNodes(ctx context.Context, c *Cluster, ccm *testenv.CCM, names []string) ([]float64, error) {
	done, err := WatchUntil(ctx, c.Env, "nodes", "", len(names), Initialised)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := Parallel(len(names), func(i int) error { return testenv.RegisterNode(ctx, c.Client, names[i]) }); err != nil {
		return nil, err
	}
	times := Since(done(ccm.Done()), t0)
	if len(times) < len(names) {
		return times, Short(ccm, "Nodes initialised", len(times), len(names))
	}
	return times, nil
}

// TopUpServices creates the LoadBalancer Services (na-0000, …) that the node-added scenario
// needs beyond the have that exist.
func TopUpServices(ctx context.Context, c *Cluster, ccm *testenv.CCM, have, want int, annotations map[string]string) error {
	if want <= have {
		return nil
	}
	fmt.Printf("bench: creating %d more LoadBalancer Services for the node-added scenario\n", want-have)
	_, err := CreateServices(ctx, c, ccm, "na", want-have, annotations)
	return err
}

// Restart stops ccm and starts another with start (a new process, nothing changed), and
// returns it once it has ensured n load balancers.
func Restart(ctx context.Context, c *Cluster, ccm *testenv.CCM, start func(name string) (*testenv.CCM, error), n int) (*testenv.CCM, error) {
	fmt.Println("bench: restarting the ccm with nothing changed")
	ccm.Stop(10 * time.Second)
	next, err := start("ccm-2")
	if err != nil {
		return nil, err
	}
	return next, WaitEnsured(ctx, next, c.Token, n)
}
