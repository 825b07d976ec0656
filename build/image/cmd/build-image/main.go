// Command build-image writes the per-vendor image of ccm: bin/images/ccm-<provider> (OCI
// layout) and bin/images/ccm-<provider>.tar (`docker load`-able), with no container engine.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ccm-project/ccm/build/image"
)

func main() {
	bin := flag.String("binary", "", "static ccm built with only -tags PROVIDER")
	provider := flag.String("provider", "", "provider name")
	version := flag.String("version", "v0.0.0-dev", "image version label and tag")
	out := flag.String("out", "bin/images", "output folder")
	registry := flag.String("registry", "ccm.local", "registry part of the image reference")
	flag.Parse()
	if *bin == "" || *provider == "" {
		fmt.Fprintln(os.Stderr, "build-image: --binary and --provider are required")
		os.Exit(2)
	}
	img, err := image.Build(image.Spec{Binary: *bin, Provider: *provider, Version: *version})
	if err == nil {
		ref := fmt.Sprintf("%s/ccm-%s:%s", *registry, *provider, *version)
		dir := filepath.Join(*out, "ccm-"+*provider)
		if err = image.Write(img, dir, ref); err == nil {
			size, _ := image.Size(img)
			digest, _ := img.Digest()
			fmt.Printf("image %s: %s (%s compressed), digest %s\n", ref, dir, image.Describe(size), digest)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-image:", err)
		os.Exit(1)
	}
}
