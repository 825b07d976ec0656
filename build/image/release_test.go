package image

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestChartVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v0.2.0": "0.2.0", "v1.10.3-rc.1": "1.10.3-rc.1", "v0.1.1-dev.3.g1a2b3c4": "0.1.1-dev.3.g1a2b3c4",
		"v0.1.0-dev.g0123abc": "0.1.0-dev.g0123abc",
		"0.2.0":               "", "v0.2": "", "v0.2.0+build.1": "", "v01.2.0": "", "v0.2.0-01": "", "latest": "",
	} {
		got, err := ChartVersion(v)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("ChartVersion(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
}

// Every chart under deploy/charts can be pinned, and the pinned files say what was asked.
func TestPinChartEveryChart(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "charts", "*"))
	if len(dirs) < 4 {
		t.Fatalf("charts: %v", dirs)
	}
	r := ChartRelease{Version: "0.2.0", AppVersion: "v0.2.0", Repository: "ghcr.io/ccm-project/ccm-x", Tag: "v0.2.0",
		Digest: "sha256:" + strings.Repeat("ab", 32)}
	for _, d := range dirs {
		dst := filepath.Join(t.TempDir(), filepath.Base(d))
		if err := StageChart(d, dst, r); err != nil {
			t.Fatal(err)
		}
		c, _ := os.ReadFile(filepath.Join(dst, "Chart.yaml"))
		v, _ := os.ReadFile(filepath.Join(dst, "values.yaml"))
		for _, want := range []string{"\nversion: 0.2.0\n", "\nappVersion: \"v0.2.0\"\n"} {
			if !strings.Contains(string(c), want) {
				t.Errorf("%s Chart.yaml lacks %q:\n%s", d, want, c)
			}
		}
		want := "ccm:\n  image:\n    repository: ghcr.io/ccm-project/ccm-x\n    tag: \"v0.2.0\"\n    digest: \"" + r.Digest + "\"\n"
		if !strings.Contains(string(v), want) || strings.Contains(string(v), "ccm.local/") {
			t.Errorf("%s values.yaml does not pin the image:\n%s", d, v)
		}
		if _, err := os.Stat(filepath.Join(dst, "templates")); err != nil {
			t.Errorf("%s: templates not copied: %v", d, err)
		}
	}
}

func TestPinChartRefusesOtherShapes(t *testing.T) {
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\nappVersion: latest\n"
	values := "ccm:\n  image:\n    repository: r\n    tag: latest\n    digest: \"\"\n"
	r := ChartRelease{Version: "1.0.0", AppVersion: "v1.0.0", Repository: "x/y", Tag: "v1.0.0", Digest: "sha256:00"}
	if _, _, err := PinChart(chart, values, r); err != nil {
		t.Fatalf("the expected shape: %v", err)
	}
	for name, c := range map[string][3]string{
		"no version":        {"apiVersion: v2\nappVersion: x\n", values, ""},
		"two versions":      {chart + "version: 0.2.0\n", values, ""},
		"image not first":   {chart, "ccm:\n  other: 1\n  image:\n    repository: r\n    tag: t\n    digest: d\n", ""},
		"no digest line":    {chart, "ccm:\n  image:\n    repository: r\n    tag: t\n", ""},
		"digest not sha256": {chart, values, "md5:00"},
	} {
		rr := r
		if c[2] != "" {
			rr.Digest = c[2]
		}
		if _, _, err := PinChart(c[0], c[1], rr); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Two images of different architectures make an index with both platforms; two of one
// architecture are refused.
func TestIndexPlatforms(t *testing.T) {
	amd, err := Build(Spec{Binary: elfFile(t, elf.EM_X86_64), Provider: "p", Version: "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	arm, err := Build(Spec{Binary: elfFile(t, elf.EM_AARCH64), Provider: "p", Version: "v1.0.0", Arch: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Index([]v1.Image{amd, arm})
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		got = append(got, d.Platform.String())
	}
	if strings.Join(got, ",") != "linux/amd64,linux/arm64" || string(m.MediaType) != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index %s of platforms %v", m.MediaType, got)
	}
	dir := filepath.Join(t.TempDir(), "idx")
	if err := WriteIndex(idx, dir, "r/p:v1.0.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := Index([]v1.Image{amd, amd}); err == nil {
		t.Error("two linux/amd64 images: accepted")
	}
}

// An image says the platform of the binary in it: a mismatch with the asked one, an
// architecture ccm does not ship and a file that is no ELF binary are refused.
func TestBuildReadsTheBinarysArchitecture(t *testing.T) {
	for name, c := range map[string]struct {
		bin      string
		arch     string
		want     string
		accepted bool
	}{
		"amd64 read":        {elfFile(t, elf.EM_X86_64), "", "amd64", true},
		"arm64 read":        {elfFile(t, elf.EM_AARCH64), "", "arm64", true},
		"arm64 asked":       {elfFile(t, elf.EM_AARCH64), "arm64", "arm64", true},
		"amd64 asked arm64": {elfFile(t, elf.EM_X86_64), "arm64", "", false},
		"riscv":             {elfFile(t, elf.EM_RISCV), "", "", false},
		"not ELF":           {writeFile(t, []byte("#!/bin/sh\n")), "", "", false},
	} {
		img, err := Build(Spec{Binary: c.bin, Provider: "p", Version: "v1.0.0", Arch: c.arch})
		if (err == nil) != c.accepted {
			t.Errorf("%s: err %v", name, err)
			continue
		}
		if err != nil {
			continue
		}
		cfg, _ := img.ConfigFile()
		if cfg.Architecture != c.want || cfg.OS != "linux" {
			t.Errorf("%s: image for %s/%s, want linux/%s", name, cfg.OS, cfg.Architecture, c.want)
		}
	}
}

// elfFile writes the smallest ELF64 file debug/elf reads: a header for machine m, no sections.
func elfFile(t *testing.T, m elf.Machine) string {
	t.Helper()
	h := make([]byte, 64)
	copy(h, []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(h[18:], uint16(m))
	binary.LittleEndian.PutUint32(h[20:], uint32(elf.EV_CURRENT))
	binary.LittleEndian.PutUint16(h[52:], 64) // header size
	return writeFile(t, h)
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The SBOM of a ccm binary lists the Go toolchain and the modules linked in, with purls.
func TestSBOMOfABinary(t *testing.T) {
	if os.Getenv("CCM_BIN_DIR") == "" {
		t.Fatal("CCM_BIN_DIR is not set: run `make image-test`")
	}
	doc, err := SBOMOf(filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-dummy"), "ccm-test", "v1.0.0", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := doc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"spdxVersion": "SPDX-2.3"`, `"name": "go"`, `"name": "k8s.io/client-go"`,
		`"referenceLocator": "pkg:golang/k8s.io/client-go@v0.37.2"`, `"name": "github.com/ccm-project/ccm/cmd"`, `"created": "1970-01-01T00:00:00Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("SBOM lacks %s", want)
		}
	}
	if len(doc.Relationships) != len(doc.Packages)-1 {
		t.Errorf("%d relationships for %d packages", len(doc.Relationships), len(doc.Packages))
	}
	if _, err := SBOMOf(filepath.Join(t.TempDir(), "none"), "x", "v1.0.0", time.Now()); err == nil {
		t.Error("a missing binary: no error")
	}
}

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "b", "x"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "a"), []byte(""), 0o644)
	os.WriteFile(filepath.Join(dir, "skip"), []byte("s"), 0o644)
	got, err := Checksums(dir, func(rel string) bool { return rel != "skip" })
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a\n" +
		"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881  b/x\n"
	if err != nil || got != want {
		t.Errorf("Checksums = %q, %v; want %q", got, err, want)
	}
}
