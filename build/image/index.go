package image

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index joins one image per architecture into a multi-arch OCI image index, each entry with the
// platform a node's runtime picks it by (linux/<arch>), in the order given.
func Index(images []v1.Image) (v1.ImageIndex, error) {
	if len(images) == 0 {
		return nil, fmt.Errorf("an index needs at least one image")
	}
	adds := make([]mutate.IndexAddendum, 0, len(images))
	seen := map[string]bool{}
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for platform %s", p.String())
		}
		seen[p.String()] = true
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// WriteIndex stores idx as an OCI image layout in dir (replacing what was there), tagged ref.
func WriteIndex(idx v1.ImageIndex, dir, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
}

// IndexSize is the compressed size of every layer of every image in idx.
func IndexSize(idx v1.ImageIndex) (int64, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return 0, err
		}
		n, err := Size(img)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
