// Package version is ccm's own version: what --version prints, the start-up log line and the
// ccm_build_info metric say. The Makefile (build/ldflags.sh) stamps it at link time.
//
// It is kept apart from k8s.io/component-base/version on purpose: component-base derives the
// Kubernetes version it emulates from its own stamp, and with ccm's v0.x there it believed it
// ran Kubernetes 0.x, refused --logging-format=json and every Beta feature gate. That stamp
// carries the version of the Kubernetes libraries ccm is built with instead.
package version

import (
	"fmt"
	"runtime"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	kubeversion "k8s.io/component-base/version"
)

// Set by the linker (-X); the defaults are what a plain `go build` or `go test` gets.
var (
	gitVersion   = "v0.0.0-dev"
	gitCommit    = ""
	gitTreeState = ""
	buildDate    = ""
)

// Info is ccm's version and what it was built with.
type Info struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	TreeState  string `json:"treeState,omitempty"`
	BuildDate  string `json:"buildDate,omitempty"`
	Kubernetes string `json:"kubernetes"` // the Kubernetes libraries (k8s.io/component-base's stamp)
	Go         string `json:"go"`
	Platform   string `json:"platform"`
}

// Get returns the running binary's Info.
func Get() Info {
	return Info{
		Version: gitVersion, Commit: gitCommit, TreeState: gitTreeState, BuildDate: buildDate,
		Kubernetes: kubeversion.Get().GitVersion, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String is the line --version prints.
func (i Info) String() string {
	s := "ccm " + i.Version
	if i.Commit != "" {
		s += fmt.Sprintf(" (commit %s, %s tree, built %s)", i.Commit, i.TreeState, i.BuildDate)
	}
	return s + fmt.Sprintf("\nKubernetes libraries %s, %s, %s", i.Kubernetes, i.Go, i.Platform)
}

var buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Namespace:      "ccm",
	Name:           "build_info",
	Help:           "Always 1; its labels say which ccm runs: its version and commit, and the Kubernetes libraries and Go it was built with.",
	StabilityLevel: metrics.ALPHA,
}, []string{"version", "commit", "kubernetes", "go_version"})

var registerOnce sync.Once

// RegisterMetric registers ccm_build_info in the legacy registry (the one /metrics serves).
func RegisterMetric() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(buildInfo)
		i := Get()
		buildInfo.WithLabelValues(i.Version, i.Commit, i.Kubernetes, i.Go).Set(1)
	})
}
