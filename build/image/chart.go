package image

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ChartRelease says what a released chart pins: its version (semantic, without the v), the
// app version (ccm's, with it) and the image by repository, tag and digest.
type ChartRelease struct {
	Version    string
	AppVersion string
	Repository string
	Tag        string
	Digest     string
}

var (
	chartVersionLine = regexp.MustCompile(`(?m)^version: .*$`)
	chartAppLine     = regexp.MustCompile(`(?m)^appVersion: .*$`)
	// The ccm image block every chart's values.yaml starts with: ccm.image.{repository,tag,digest}.
	valuesImage = regexp.MustCompile(`(?m)^(ccm:\n(?:  #.*\n)*  image:\n)    repository: .*\n    tag: .*\n    digest: .*\n`)
)

// PinChart rewrites a chart's Chart.yaml and values.yaml text for a release. It fails, rather
// than ship a chart that still points at a placeholder, when either file is not in the shape
// the charts under deploy/charts have.
func PinChart(chartYAML, valuesYAML string, r ChartRelease) (string, string, error) {
	if len(chartVersionLine.FindAllString(chartYAML, -1)) != 1 || len(chartAppLine.FindAllString(chartYAML, -1)) != 1 {
		return "", "", fmt.Errorf("Chart.yaml: want exactly one top-level version: and appVersion: line")
	}
	if !valuesImage.MatchString(valuesYAML) {
		return "", "", fmt.Errorf("values.yaml: no ccm.image block with repository, tag and digest at its start")
	}
	if !strings.HasPrefix(r.Digest, "sha256:") || r.Repository == "" || r.Tag == "" || r.Version == "" {
		return "", "", fmt.Errorf("release %+v: repository, tag, version and a sha256 digest are required", r)
	}
	chartYAML = chartVersionLine.ReplaceAllLiteralString(chartYAML, "version: "+r.Version)
	chartYAML = chartAppLine.ReplaceAllLiteralString(chartYAML, "appVersion: "+quote(r.AppVersion))
	valuesYAML = valuesImage.ReplaceAllString(valuesYAML, "${1}"+
		"    repository: "+r.Repository+"\n    tag: "+quote(r.Tag)+"\n    digest: "+quote(r.Digest)+"\n")
	return chartYAML, valuesYAML, nil
}

func quote(s string) string { return `"` + s + `"` }

// StageChart copies the chart in src to dst with Chart.yaml and values.yaml pinned to r.
func StageChart(src, dst string, r ChartRelease) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return err
	}
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(os.DirFS(dst), name)
		return string(b), err
	}
	c, err := read("Chart.yaml")
	if err != nil {
		return err
	}
	v, err := read("values.yaml")
	if err != nil {
		return err
	}
	if c, v, err = PinChart(c, v, r); err != nil {
		return fmt.Errorf("chart %s: %w", src, err)
	}
	if err := os.WriteFile(filepath.Join(dst, "Chart.yaml"), []byte(c), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "values.yaml"), []byte(v), 0o644)
}
