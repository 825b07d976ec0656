package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	cloudprovider "k8s.io/cloud-provider"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/livecfg"
)

// DefaultConfigReloadInterval is how often the cloud config file is read for changes: the
// kubelet takes up to a minute to update a mounted ConfigMap, so seconds more are no delay
// anyone sees, and a read of a small file costs nothing.
const DefaultConfigReloadInterval = 10 * time.Second

func addConfigReloadFlag(fs *pflag.FlagSet) *time.Duration {
	return fs.Duration("cloud-config-reload-interval", DefaultConfigReloadInterval,
		"How often the --cloud-config file is read for changes, which the dummy and vsphere providers apply without a restart "+
			"(their pools; a change that does not pass the start-up checks is refused and the running config stays). 0 turns it off.")
}

// watchConfig starts reading the cloud config every interval and handing changes to the
// provider, if it applies them live (livecfg.Reloader). A refusal is a Warning Event on ccm's
// Pod (POD_NAME, POD_NAMESPACE) besides the log line and ccm_config_reload_total.
func watchConfig(c *ccmconfig.CompletedConfig, base cloudprovider.Interface, interval time.Duration, stop <-chan struct{}) {
	path := c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile
	target, ok := base.(livecfg.Reloader)
	if !ok || path == "" || interval <= 0 {
		return
	}
	w := &livecfg.Watcher{Provider: base.ProviderName(), Path: path, Interval: interval, Target: target}
	if client, err := c.ClientBuilder.Client("ccm-config-reload"); err == nil {
		w.Warn = livecfg.PodWarner(client, "cloud-controller-manager", stop)
	}
	klog.InfoS("Watching the cloud config for changes", "path", path, "interval", interval)
	go w.Run(stop)
}

func validateConfigReloadInterval(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--cloud-config-reload-interval must not be negative, got %v", d)
	}
	return nil
}
