package version

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestInfoAndBuildInfoMetric(t *testing.T) {
	i := Get()
	if i.Version != "v0.0.0-dev" || i.Go == "" || i.Platform == "" || i.Kubernetes == "" {
		t.Errorf("unstamped Info: %+v", i)
	}
	if s := i.String(); !strings.HasPrefix(s, "ccm v0.0.0-dev\nKubernetes libraries ") {
		t.Errorf("String() = %q", s)
	}
	stamped := Info{Version: "v1.2.3", Commit: "abc", TreeState: "clean", BuildDate: "2026-01-01T00:00:00Z", Kubernetes: "v1.37.2", Go: "go1.26", Platform: "linux/arm64"}
	if want := "ccm v1.2.3 (commit abc, clean tree, built 2026-01-01T00:00:00Z)\nKubernetes libraries v1.37.2, go1.26, linux/arm64"; stamped.String() != want {
		t.Errorf("String() = %q, want %q", stamped.String(), want)
	}
	RegisterMetric()
	RegisterMetric() // once
	want := `
# HELP ccm_build_info [ALPHA] Always 1; its labels say which ccm runs: its version and commit, and the Kubernetes libraries and Go it was built with.
# TYPE ccm_build_info gauge
ccm_build_info{commit="",go_version="` + i.Go + `",kubernetes="` + i.Kubernetes + `",version="v0.0.0-dev"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "ccm_build_info"); err != nil {
		t.Error(err)
	}
}
