package config

import (
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// offline is set by `ccm check-config --offline`: a config is often checked on a laptop where
// the files it names (a CA bundle, an inventory) exist only on the cluster's nodes.
var (
	offline      atomic.Bool
	notCheckedMu sync.Mutex
	notChecked   []string
)

// SetOffline turns offline checking on or off (check-config's --offline).
func SetOffline(on bool) { offline.Store(on) }

// Offline reports whether referenced files are only noted, not read.
func Offline() bool { return offline.Load() }

// StatReferenced checks that the file a key names exists. Offline, it notes the key and path
// (NotChecked) and reports no error.
func StatReferenced(what, path string) error {
	if offline.Load() {
		notCheckedMu.Lock()
		if s := what + " = " + path; !slices.Contains(notChecked, s) {
			notChecked = append(notChecked, s)
		}
		notCheckedMu.Unlock()
		return nil
	}
	_, err := os.Stat(path)
	return err
}

// NotChecked returns the referenced files noted offline, in the order seen.
func NotChecked() []string {
	notCheckedMu.Lock()
	defer notCheckedMu.Unlock()
	return slices.Clone(notChecked)
}
