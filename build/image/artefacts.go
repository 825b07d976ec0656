package image

import (
	"fmt"
	"regexp"
	"strings"
	"text/tabwriter"
)

// Artefact is one thing a release publishes or writes.
type Artefact struct {
	Kind string // image, chart, sbom, binary
	Name string // a reference by digest, or a path under the release folder
	Size int64  // bytes (an image: its layers, compressed, over every platform)
	Note string
}

// Artefacts is a release's list, printed as a table.
type Artefacts []Artefact

func (as Artefacts) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tSIZE\tNAME\tNOTE")
	for _, a := range as {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.Kind, human(a.Size), a.Name, a.Note)
	}
	w.Flush()
	return b.String()
}

// The semantic version grammar (semver.org), with the leading v ccm's versions carry.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-((0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?$`)

// ChartVersion is the chart version of ccm version v (v0.2.0 gives 0.2.0). Build metadata
// (+...) is refused: an image tag cannot hold it.
func ChartVersion(v string) (string, error) {
	if !semver.MatchString(v) {
		return "", fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH[-PRERELEASE] (semver.org, without +build)", v)
	}
	return strings.TrimPrefix(v, "v"), nil
}

// human is a size in KiB below 1 MiB, in MiB above.
func human(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return Describe(n)
}
