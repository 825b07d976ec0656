package image

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestImages builds the image of every binary in $CCM_BIN_DIR (ccm-<provider>, and ccm with all
// providers), writes it, opens it again from the OCI layout and checks what an operator relies
// on: entrypoint, non-root user, labels, and that the binary inside has exactly its providers.
func TestImages(t *testing.T) {
	binDir := os.Getenv("CCM_BIN_DIR")
	providers := strings.Fields(os.Getenv("CCM_PROVIDERS"))
	if binDir == "" || len(providers) == 0 {
		t.Fatal("CCM_BIN_DIR and CCM_PROVIDERS are not set: run `make image-test`")
	}
	cases := map[string][]string{"all": providers} // image name -> providers it must contain
	for _, p := range providers {
		cases[p] = []string{p}
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(binDir, "ccm-"+name)
			if name == "all" {
				bin = filepath.Join(binDir, "ccm")
			}
			img, err := Build(Spec{Binary: bin, Provider: name, Version: "v0.0.0-test"})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "ccm-"+name)
			if err := Write(img, dir, "ccm.local/ccm-"+name+":v0.0.0-test"); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(dir + ".tar"); err != nil || st.Size() == 0 {
				t.Errorf("tarball: %v", err)
			}
			// Open what was written, not what is in memory.
			idx, err := layout.ImageIndexFromPath(dir)
			if err != nil {
				t.Fatal(err)
			}
			m, err := idx.IndexManifest()
			if err != nil || len(m.Manifests) != 1 {
				t.Fatalf("index: %v %v", m, err)
			}
			img, err = idx.Image(m.Manifests[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/ccm" {
				t.Errorf("entrypoint %q", got)
			}
			if u := cfg.Config.User; u == "" || strings.HasPrefix(u, "0") || strings.HasPrefix(u, "root") {
				t.Errorf("user %q is root", u)
			}
			if cfg.Config.Labels["io.ccm.provider"] != name || cfg.Config.Labels["org.opencontainers.image.version"] != "v0.0.0-test" {
				t.Errorf("labels %v", cfg.Config.Labels)
			}
			// Extract /ccm from the image and ask it what it contains.
			out := filepath.Join(t.TempDir(), "ccm")
			rc := mutate.Extract(img)
			defer rc.Close()
			tr := tar.NewReader(rc)
			found := false
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Name == "ccm" {
					f, _ := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
					io.Copy(f, tr)
					f.Close()
					found = true
				}
			}
			if !found {
				t.Fatal("no /ccm in the image")
			}
			list, err := exec.Command(out, "providers").Output()
			if err != nil {
				t.Fatalf("ccm providers: %v", err)
			}
			got := strings.Fields(string(list))
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("image %s contains providers %v, want %v", name, got, want)
			}
			size, _ := Size(img)
			t.Logf("image ccm-%s: %s compressed", name, Describe(size))
		})
	}
}
