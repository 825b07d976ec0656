package livecfg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/ccm-project/ccm/common/metrics"
)

// fake applies what it is handed, refusing content that starts with "bad".
type fake struct{ applied, handed []string }

func (f *fake) Reload(data []byte) (bool, error) {
	f.handed = append(f.handed, string(data))
	if strings.HasPrefix(string(data), "bad") {
		return false, errors.New("line 2: [Pool \"p\"] cidr: \"x\" is not a CIDR")
	}
	changed := len(f.applied) == 0 || f.applied[len(f.applied)-1] != string(data)
	f.applied = append(f.applied, string(data))
	return changed, nil
}

// swap writes content as the kubelet updates a mounted ConfigMap: a new timestamped directory,
// then the ..data symlink renamed over, which the file's path goes through.
func swap(t *testing.T, dir, content string) {
	t.Helper()
	ts := filepath.Join(dir, "..ts-"+time.Now().Format("150405.000000000"))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "cloud.conf"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherFollowsTheKubeletsSwap(t *testing.T) {
	metrics.Register()
	dir := t.TempDir()
	swap(t, dir, "one")
	if err := os.Symlink("..data/cloud.conf", filepath.Join(dir, "cloud.conf")); err != nil {
		t.Fatal(err)
	}
	f := &fake{applied: []string{"one"}} // the provider was built from it
	var warned []string
	w := &Watcher{Provider: "livecfgtest", Path: filepath.Join(dir, "cloud.conf"), Target: f,
		Warn: func(reason, msg string) { warned = append(warned, reason+": "+msg) }}
	counter := func(result string) float64 {
		v, _ := testutil.GetCounterMetricValue(metrics.ConfigReloads.WithLabelValues("livecfgtest", result))
		return v
	}
	steps := []struct {
		content, want string // "" content: the file is not touched
	}{
		{"", ""},             // the first check: the content ccm started with, nothing changes
		{"", ""},             // unchanged
		{"two", Applied},     // swapped
		{"two", ""},          // swapped again to the same content
		{"bad\nx", Rejected}, // refused
		{"bad\nx", ""},       // refused once, not at every check
		{"three", Applied},   // a good change after a bad one
		{"three\n", Applied}, // any byte counts
	}
	for i, s := range steps {
		if s.content != "" {
			swap(t, dir, s.content)
		}
		if got := w.Check(); got != s.want {
			t.Errorf("step %d (%q): %q, want %q", i, s.content, got, s.want)
		}
	}
	if strings.Join(f.applied, ",") != "one,one,two,three,three\n" || len(f.handed) != 5 {
		t.Errorf("applied %q, handed %q", f.applied, f.handed)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], ReasonRejected) || !strings.Contains(warned[0], "line 2") {
		t.Errorf("Warnings %q, want one naming the line", warned)
	}
	if counter(Applied) != 3 || counter(Rejected) != 1 {
		t.Errorf("ccm_config_reload_total applied %v rejected %v, want 3 and 1", counter(Applied), counter(Rejected))
	}
}

// A file that is briefly unreadable keeps the running config and is read again later.
func TestWatcherUnreadableFile(t *testing.T) {
	f := &fake{}
	w := &Watcher{Provider: "livecfgtest2", Path: filepath.Join(t.TempDir(), "missing"), Target: f}
	if got := w.Check(); got != "" || len(f.handed) != 0 {
		t.Errorf("a missing file: %q, handed %q", got, f.handed)
	}
	if err := os.WriteFile(w.Path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Check()
	if len(f.handed) != 1 {
		t.Errorf("the file, once there, was not handed over: %q", f.handed)
	}
}
