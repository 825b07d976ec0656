package dummy

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/config"
)

// providerIDPrefix makes providerIDs of the form dummy:///<node-name>.
const providerIDPrefix = "dummy:///"

// inventory is the set of machines the dummy cloud knows: the [Instance] sections of the
// cloud-config plus those of the optional inventory file, which is re-read when it changes.
type inventory struct {
	defaults  Config
	static    map[string]*InstanceConfig
	path      string
	mu        sync.RWMutex
	fromFile  map[string]*InstanceConfig
	fileStamp string // mtime+size of the file last read
}

// inventoryFile is the format of the inventory file: only [Instance] sections.
type inventoryFile struct {
	Instance map[string]*InstanceConfig
}

func (f *inventoryFile) Validate() config.Problems {
	var ps config.Problems
	validateInstances(f.Instance, &ps)
	return ps
}

func newInventory(cfg *Config) (*inventory, error) {
	inv := &inventory{defaults: *cfg, static: cfg.Instance, path: cfg.Global.Inventory}
	if inv.path != "" && !config.Offline() { // offline (check-config --offline) the file is only noted
		if err := inv.reload(); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// reload re-reads the inventory file if it changed. Invalid new content keeps the old
// inventory: a half-written file must never make every node look gone.
func (inv *inventory) reload() error {
	st, err := os.Stat(inv.path)
	if err != nil {
		return fmt.Errorf("inventory %s: %w", inv.path, err)
	}
	stamp := fmt.Sprintf("%d/%d", st.ModTime().UnixNano(), st.Size())
	inv.mu.RLock()
	same := stamp == inv.fileStamp
	inv.mu.RUnlock()
	if same {
		return nil
	}
	data, err := os.ReadFile(inv.path)
	if err != nil {
		return fmt.Errorf("inventory %s: %w", inv.path, err)
	}
	// A file being rewritten in place may be read half-way: read it only when it held still.
	if st2, err := os.Stat(inv.path); err != nil || st2.ModTime() != st.ModTime() || st2.Size() != int64(len(data)) {
		return fmt.Errorf("inventory %s changed while being read; trying again at the next refresh (replace it atomically: write a new file, then rename)", inv.path)
	}
	var f inventoryFile
	if err := config.ReadINI(bytes.NewReader(data), &f); err != nil {
		return fmt.Errorf("inventory %s: %w", inv.path, err)
	}
	inv.mu.RLock()
	had := len(inv.fromFile)
	inv.mu.RUnlock()
	if len(f.Instance) == 0 && had > 0 {
		return fmt.Errorf("inventory %s now lists no instances (it listed %d): keeping the previous inventory; mark machines state = gone to remove them", inv.path, had)
	}
	inv.mu.Lock()
	inv.fromFile, inv.fileStamp = f.Instance, stamp
	inv.mu.Unlock()
	return nil
}

// watch re-reads the inventory file every refresh period until stop closes.
func (inv *inventory) watch(refresh time.Duration, stop <-chan struct{}) {
	if inv.path == "" {
		return
	}
	t := time.NewTicker(refresh)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := inv.reload(); err != nil {
				inventoryReloadErrors.Inc()
				klog.ErrorS(err, "Keeping the previous inventory")
			}
		}
	}
}

// find returns the instance for node, by providerID first and node name second; nil if the
// cloud does not know it (or knows it as gone).
func (inv *inventory) find(node *v1.Node) (name string, in *InstanceConfig) {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	lookup := func(key string) *InstanceConfig {
		if in, ok := inv.fromFile[key]; ok {
			return in
		}
		return inv.static[key]
	}
	name = node.Name
	if id, ok := strings.CutPrefix(node.Spec.ProviderID, providerIDPrefix); ok && id != "" {
		name = id
	}
	in = lookup(name)
	if in == nil {
		// A providerID set by hand (provider-id key) rather than our default form.
		for _, set := range []map[string]*InstanceConfig{inv.fromFile, inv.static} {
			for n, c := range set {
				if c.ProviderID != "" && c.ProviderID == node.Spec.ProviderID {
					name, in = n, c
				}
			}
		}
	}
	if in == nil || strings.EqualFold(in.State, StateGone) {
		return name, nil
	}
	return name, in
}

func (inv *inventory) providerID(name string, in *InstanceConfig) string {
	if in.ProviderID != "" {
		return in.ProviderID
	}
	return providerIDPrefix + name
}
