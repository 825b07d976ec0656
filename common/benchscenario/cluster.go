package benchscenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
