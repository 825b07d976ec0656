package app

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// autoMemoryFraction is the share of the container's memory limit given to the Go collector as
// its soft limit: the rest covers what the collector does not count against it (stacks,
// runtime bookkeeping, freed pages not yet returned) so that the kernel's hard limit is not
// reached first.
const autoMemoryFraction = 0.9

// memoryLimit is the --memory-limit flag. The Go collector's soft limit is process-wide, so it
// is applied as soon as the value is known: the default at registration, a given value when
// the flag is parsed. GOMEMLIMIT, when set, wins over both (the runtime has applied it).
type memoryLimit struct {
	value  string
	cgroup string // root of the cgroup file system; a test points it elsewhere
}

// memoryLimitInForce records the last limit applied (0: none) and its source, for the log
// line at start; like the limit itself it is process-wide.
var memoryLimitInForce struct {
	bytes  int64
	source string
}

// defaultGCPercent is ccm's collector target when GOGC is not set: the heap may grow to 1.5
// times what was live after the last collection, not twice (Go's 100). Most of ccm's live heap
// is its informer caches, which live as long as the process, so with 100 half the peak heap
// was headroom for garbage: at 5,000 Nodes and 10,000 LoadBalancer Services (live heap about
// 60 MB) that is 30 MB of peak RSS more, for collections half as frequent.
const defaultGCPercent = 50

// gcPercentInForce records the collector target applied and its source, for the log line.
var gcPercentInForce struct {
	percent int
	source  string
}

// addMemoryOptions is what NewCommand does for memory: --memory-limit on fs and the default
// collector target. The service controller, the other half (coalesced Node events, a digest
// per Service), is chosen in servicecontroller.go.
func addMemoryOptions(fs *pflag.FlagSet) {
	applyGCPercent()
	addMemoryLimitFlag(fs)
}

// applyGCPercent sets the collector target to defaultGCPercent unless GOGC is set, which wins
// (the runtime has applied it: GOGC=100 restores Go's default).
func applyGCPercent() {
	if env, set := os.LookupEnv("GOGC"); set {
		gcPercentInForce.percent, gcPercentInForce.source = debug.SetGCPercent(-1), "GOGC="+env
		debug.SetGCPercent(gcPercentInForce.percent)
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	gcPercentInForce.percent, gcPercentInForce.source = defaultGCPercent, "ccm default"
}

// addMemoryLimitFlag registers --memory-limit on fs and applies its default.
func addMemoryLimitFlag(fs *pflag.FlagSet) {
	m := &memoryLimit{value: "auto", cgroup: "/sys/fs/cgroup"}
	m.apply()
	fs.Var(m, "memory-limit", "Soft memory limit for the Go garbage collector: 'auto' (90% of the container's cgroup memory limit, "+
		"none if it has no limit), 'off', or a quantity such as 200Mi. The environment variable GOMEMLIMIT, when set, wins. "+
		"A soft limit makes the collector run more often near it, trading CPU for a lower peak; it never fails an allocation.")
}

func (m *memoryLimit) String() string { return m.value }
func (m *memoryLimit) Type() string   { return "string" }

func (m *memoryLimit) Set(v string) error {
	if _, _, err := m.resolve(v); err != nil {
		return err
	}
	m.value = v
	m.apply()
	return nil
}

// resolve turns a flag value into a limit in bytes (0: none) and says where it came from.
func (m *memoryLimit) resolve(v string) (int64, string, error) {
	switch v {
	case "off", "0":
		return 0, "off", nil
	case "auto":
		limit, err := cgroupMemoryLimit(m.cgroup)
		if err != nil || limit == 0 {
			return 0, "auto: no cgroup memory limit", nil
		}
		return int64(float64(limit) * autoMemoryFraction), fmt.Sprintf("auto: 90%% of the cgroup limit of %d bytes", limit), nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return 0, "", fmt.Errorf("--memory-limit: want auto, off or a positive quantity such as 200Mi, got %q", v)
	}
	b, ok := q.AsInt64()
	if !ok {
		return 0, "", fmt.Errorf("--memory-limit: %q does not fit in 64 bits", v)
	}
	return b, "--memory-limit", nil
}

func (m *memoryLimit) apply() {
	f := &memoryLimitInForce
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		f.bytes, f.source = debug.SetMemoryLimit(-1), "GOMEMLIMIT="+env
		return
	}
	b, source, err := m.resolve(m.value)
	if err != nil { // values are checked in Set
		return
	}
	f.bytes, f.source = b, source
	if b == 0 {
		b = math.MaxInt64 // the runtime's "no limit"
	}
	debug.SetMemoryLimit(b)
}

func logMemoryLimit() {
	klog.InfoS("Go collector target", "GOGC", gcPercentInForce.percent, "source", gcPercentInForce.source)
	f := memoryLimitInForce
	if f.bytes == 0 || f.bytes == math.MaxInt64 {
		klog.InfoS("No Go soft memory limit", "source", f.source)
		return
	}
	klog.InfoS("Go soft memory limit", "MiB", f.bytes>>20, "source", f.source)
}

// cgroupMemoryLimit returns the memory limit of this process's cgroup (v2 memory.max or v1
// memory.limit_in_bytes) under root, 0 if there is none. In a container the cgroup file
// system is usually the container's own, so the file at its top is tried after the path
// /proc/self/cgroup names.
func cgroupMemoryLimit(root string) (int64, error) {
	own := map[string]string{} // controller ("" for v2) -> path
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			for _, ctl := range strings.Split(parts[1], ",") {
				own[ctl] = parts[2]
			}
		}
	}
	candidates := []string{
		filepath.Join(root, own[""], "memory.max"),
		filepath.Join(root, "memory.max"),
		filepath.Join(root, "memory", own["memory"], "memory.limit_in_bytes"),
		filepath.Join(root, "memory", "memory.limit_in_bytes"),
	}
	for _, p := range candidates {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		if n >= 1<<62 { // cgroup v1 writes a huge page-aligned number for "no limit"
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}
