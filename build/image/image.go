// Package image assembles per-vendor OCI images of ccm without a container engine: one layer
// with the static binary and a passwd entry for the non-root user, on an empty base.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the non-root user the image runs as (distroless's "nonroot").
const User = "65532:65532"

// Spec says what to put in an image.
type Spec struct {
	Binary   string // path of a static ccm built with only this provider's tag
	Provider string
	Version  string
	Arch     string // GOARCH of the binary; read from the binary when empty, checked when not
}

// archOf is the GOARCH of an ELF binary (ccm's are linux/amd64 or linux/arm64), so an image
// is labelled with the platform its binary runs on, not the builder's.
func archOf(bin []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return "", fmt.Errorf("not an ELF binary: %w", err)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	}
	return "", fmt.Errorf("ELF machine %s: ccm images are built for amd64 and arm64", f.Machine)
}

// Build returns the image for spec. File times are fixed so the same binary gives the same
// image digest.
func Build(spec Spec) (v1.Image, error) {
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, err
	}
	arch, err := archOf(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Binary, err)
	}
	if spec.Arch != "" && spec.Arch != arch {
		return nil, fmt.Errorf("%s is a linux/%s binary, not linux/%s", spec.Binary, arch, spec.Arch)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")},
		{"ccm", 0o755, bin},
	}
	for _, dir := range []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"tmp/", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Name: dir.name, Typeflag: tar.TypeDir, Mode: dir.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/ccm"}
	cfg.Config.User = User
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "ccm-" + spec.Provider,
		"org.opencontainers.image.version": spec.Version,
		"io.ccm.provider":                  spec.Provider,
	}
	return mutate.ConfigFile(img, cfg)
}

// Write stores img as an OCI image layout in dir (replacing what was there) and as a
// docker-loadable tarball dir.tar tagged ref.
func Write(img v1.Image, dir, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return err
	}
	return writeTarball(img, dir+".tar", ref)
}

// Size is the compressed size of the image's layers, what a node pulls.
func Size(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Describe formats a size in MiB.
func Describe(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
