// Command ccm is one cloud-controller-manager for several clouds. Which providers it contains
// is decided by build tags (see the provider_*.go files); which one runs, by --cloud-provider.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // build info on /metrics

	// Trusted roots compiled in, for cloud API TLS in images that carry no CA bundle.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/ccm-project/ccm/cmd/internal/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand(app.SignalStop())))
}
