// Command release assembles a ccm release from binaries already built per provider and platform
// (build/release.sh builds them): per provider one multi-arch image index, its SPDX SBOM and its
// Helm chart pinned to the image by digest; it pushes images and charts (as OCI artefacts) to
// --registry unless --push=false, and writes artefacts.txt and SHA256SUMS into --out.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-project/ccm/build/image"
)

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "ccm's version (vMAJOR.MINOR.PATCH[-pre])")
	flag.StringVar(&o.providers, "providers", "", "comma-separated providers")
	flag.StringVar(&o.platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch")
	flag.StringVar(&o.binDir, "bin-dir", "", "folder with ccm-<provider>-<os>-<arch> binaries")
	flag.StringVar(&o.charts, "charts", "deploy/charts", "folder with one chart per provider")
	flag.StringVar(&o.out, "out", "bin/release", "output folder")
	flag.StringVar(&o.registry, "registry", "", "registry and path the images and charts go to (ghcr.io/ccm-project)")
	flag.BoolVar(&o.push, "push", true, "push images and charts to --registry")
	flag.StringVar(&o.helm, "helm", "helm", "helm binary (packages and pushes the charts)")
	flag.Int64Var(&o.created, "created", 0, "release time, seconds since 1970 (the commit's, for reproducible SBOMs)")
	checkVersion := flag.String("check-version", "", "only check that this is a version a release can carry, and print its chart version")
	flag.Parse()
	if *checkVersion != "" {
		v, err := image.ChartVersion(*checkVersion)
		if err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			os.Exit(1)
		}
		fmt.Printf("release: version %s, chart version %s\n", *checkVersion, v)
		return
	}
	start := time.Now()
	arts, err := o.run(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Print(arts)
	fmt.Printf("release %s: %s in %.1fs\n", o.version, o.out, time.Since(start).Seconds())
}

type options struct {
	version, providers, platforms, binDir, charts, out, registry, helm string
	push                                                               bool
	created                                                            int64
}

func (o *options) check() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"version", o.version}, {"providers", o.providers}, {"bin-dir", o.binDir}, {"registry", o.registry}} {
		if f.v == "" {
			missing = append(missing, "--"+f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s required", strings.Join(missing, ", "))
	}
	if _, err := image.ChartVersion(o.version); err != nil {
		return err
	}
	return nil
}

// run releases every provider and writes the artefact list and checksums.
func (o *options) run(ctx context.Context) (string, error) {
	if err := o.check(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", err
	}
	var list image.Artefacts
	for _, p := range strings.Split(o.providers, ",") {
		a, err := o.provider(ctx, p)
		if err != nil {
			return "", fmt.Errorf("provider %s: %w", p, err)
		}
		list = append(list, a...)
	}
	bins, err := binaries(o.binDir)
	if err != nil {
		return "", err
	}
	list = append(list, bins...)
	sums, err := image.Checksums(o.out, func(rel string) bool {
		return rel != "SHA256SUMS" && !strings.HasPrefix(rel, "images/") && !strings.HasPrefix(rel, "stage/")
	})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(o.out, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		return "", err
	}
	text := list.String()
	return text, os.WriteFile(filepath.Join(o.out, "artefacts.txt"), []byte(text), 0o644)
}

// binaries lists the built binaries, which the release keeps beside the images (their checksums
// are in SHA256SUMS) for operators who run ccm outside a container.
func binaries(dir string) (image.Artefacts, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var list image.Artefacts
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		list = append(list, image.Artefact{Kind: "binary", Name: "bin/" + e.Name(), Size: info.Size()})
	}
	return list, nil
}
