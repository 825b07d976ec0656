package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/ccm-project/ccm/build/image"
)

// provider releases one provider: its image index (pushed), SBOM and chart (pushed).
func (o *options) provider(ctx context.Context, p string) (image.Artefacts, error) {
	var imgs []v1.Image
	var first string
	for _, plat := range strings.Split(o.platforms, ",") {
		os_, arch, ok := strings.Cut(plat, "/")
		if !ok || os_ != "linux" {
			return nil, fmt.Errorf("platform %q: want linux/<arch>", plat)
		}
		bin := filepath.Join(o.binDir, fmt.Sprintf("ccm-%s-%s-%s", p, os_, arch))
		if first == "" {
			first = bin
		}
		img, err := image.Build(image.Spec{Binary: bin, Provider: p, Version: o.version, Arch: arch})
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	idx, err := image.Index(imgs)
	if err != nil {
		return nil, err
	}
	repo := o.registry + "/ccm-" + p
	ref := repo + ":" + o.version
	if err := image.WriteIndex(idx, filepath.Join(o.out, "images", "ccm-"+p), ref); err != nil {
		return nil, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	if o.push {
		if _, err := image.PushIndex(ctx, idx, ref); err != nil {
			return nil, err
		}
	}
	size, err := image.IndexSize(idx)
	if err != nil {
		return nil, err
	}
	arts := image.Artefacts{{Kind: "image", Name: ref + "@" + digest.String(), Size: size,
		Note: "platforms " + o.platforms}}
	sbom, err := o.sbom(p, first)
	if err != nil {
		return nil, err
	}
	chart, err := o.chart(ctx, p, repo, digest.String())
	if err != nil {
		return nil, err
	}
	return append(append(arts, sbom), chart...), nil
}

func (o *options) sbom(p, bin string) (image.Artefact, error) {
	name := "ccm-" + p + "-" + o.version
	doc, err := image.SBOMOf(bin, name, o.version, time.Unix(o.created, 0))
	if err != nil {
		return image.Artefact{}, err
	}
	b, err := doc.JSON()
	if err != nil {
		return image.Artefact{}, err
	}
	path := filepath.Join(o.out, "sbom", "ccm-"+p+".spdx.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return image.Artefact{}, err
	}
	return image.Artefact{Kind: "sbom", Name: "sbom/ccm-" + p + ".spdx.json", Size: int64(len(b)),
		Note: fmt.Sprintf("SPDX 2.3, %d packages", len(doc.Packages))}, os.WriteFile(path, b, 0o644)
}
