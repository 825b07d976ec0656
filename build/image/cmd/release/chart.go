package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ccm-project/ccm/build/image"
)

var pushedDigest = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`)

// chart stages the provider's chart pinned to the image, lints and packages it with helm, and
// pushes it as an OCI artefact to <registry>/charts/ccm-<provider>.
func (o *options) chart(ctx context.Context, p, repo, digest string) (image.Artefacts, error) {
	version, _ := image.ChartVersion(o.version)
	stage := filepath.Join(o.out, "stage", p)
	err := image.StageChart(filepath.Join(o.charts, p), stage, image.ChartRelease{
		Version: version, AppVersion: o.version, Repository: repo, Tag: o.version, Digest: digest})
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Join(o.out, "stage"))
	dest := filepath.Join(o.out, "charts")
	if _, err := o.runHelm(ctx, "lint", stage); err != nil {
		return nil, err
	}
	if _, err := o.runHelm(ctx, "package", stage, "--destination", dest); err != nil {
		return nil, err
	}
	tgz := filepath.Join(dest, fmt.Sprintf("ccm-%s-%s.tgz", p, version))
	st, err := os.Stat(tgz)
	if err != nil {
		return nil, fmt.Errorf("helm package wrote no %s: %w", tgz, err)
	}
	a := image.Artefact{Kind: "chart", Name: "charts/" + filepath.Base(tgz), Size: st.Size(), Note: "image pinned to " + digest}
	if !o.push {
		return image.Artefacts{a}, nil
	}
	args := []string{"push", tgz, "oci://" + o.registry + "/charts"}
	if loopback(o.registry) {
		args = append(args, "--plain-http")
	}
	out, err := o.runHelm(ctx, args...)
	if err != nil {
		return nil, err
	}
	m := pushedDigest.FindStringSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("helm push printed no digest:\n%s", out)
	}
	a.Name = fmt.Sprintf("oci://%s/charts/ccm-%s:%s@%s", o.registry, p, version, m[1])
	return image.Artefacts{a}, nil
}

func (o *options) runHelm(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, o.helm, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// loopback reports whether the registry is on this machine, where it is served over plain
// HTTP (a test's, or a local one); every other registry is spoken to over HTTPS.
func loopback(registry string) bool {
	host := strings.SplitN(registry, "/", 2)[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
