// Package livecfg applies a changed cloud config while ccm runs. A ConfigMap or Secret mounted
// as the cloud config is updated in place by the kubelet (a new directory, then an atomic swap
// of the ..data symlink the file's path goes through); the Watcher reads the file at an
// interval, and when its content differs from the last it handed over, the provider checks the
// new content as at start-up and applies what can change live (the [Pool] sections). A change
// the provider refuses leaves everything as it was: the error (which names the line) is logged,
// recorded as a Warning Event and counted.
package livecfg

import (
	"crypto/sha256"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// Reloader is a provider that applies a changed cloud config without a restart.
type Reloader interface {
	// Reload checks data as the provider's cloud config, as at start-up, and applies what can
	// change while ccm runs. changed reports whether anything applied differs from before; an
	// error (naming the line) leaves everything as it was.
	Reload(data []byte) (changed bool, err error)
}

// Results of a change, the values of ccm_config_reload_total's result label.
const (
	Applied  = "applied"
	Rejected = "rejected"
)

// ReasonRejected is the Warning Event's reason for a refused change.
const ReasonRejected = "CloudConfigRejected"

// Watcher hands the cloud config at Path to Target whenever its content changes.
type Watcher struct {
	Provider string // for the metric
	Path     string
	Interval time.Duration
	Target   Reloader
	// Warn records a Warning Event (nil: the log line only).
	Warn func(reason, msg string)

	last [sha256.Size]byte // the content last handed over (or refused)
	seen bool
}

// Check reads the file once and hands it over if its content changed since the last Check
// (the first Check hands over what is there: the provider was built from it, so nothing
// changes unless the file changed meanwhile). It returns the result ("" when the content is
// the same, or the file cannot be read now: the kubelet swaps it atomically, so a failed read
// is retried at the next interval).
func (w *Watcher) Check() string {
	data, err := os.ReadFile(w.Path)
	if err != nil {
		klog.ErrorS(err, "Cannot read the cloud config; the running config stays", "path", w.Path)
		return ""
	}
	sum := sha256.Sum256(data)
	if w.seen && sum == w.last {
		return ""
	}
	first := !w.seen
	w.last, w.seen = sum, true
	changed, err := w.Target.Reload(data)
	switch {
	case err != nil:
		klog.ErrorS(err, "The changed cloud config is refused; the running config stays", "path", w.Path)
		metrics.ConfigReloads.WithLabelValues(w.Provider, Rejected).Inc()
		if w.Warn != nil {
			w.Warn(ReasonRejected, "the changed cloud config "+w.Path+" is refused and the running config stays: "+err.Error())
		}
		return Rejected
	case changed || !first:
		klog.InfoS("Applied the changed cloud config", "path", w.Path, "changed", changed)
		metrics.ConfigReloads.WithLabelValues(w.Provider, Applied).Inc()
		return Applied
	}
	return ""
}

// Run checks the file every Interval until stop closes.
func (w *Watcher) Run(stop <-chan struct{}) {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		w.Check()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
