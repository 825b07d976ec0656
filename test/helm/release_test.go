package helm

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// The version the test release carries: a pre-release, so the chart version keeps its
// pre-release part and the binary's stamp can be told from a development build's.
const releaseVersion = "v0.9.0-rc.1"

// TestQuickStartDummy runs `make release`'s script against a registry served by this test (the
// dummy provider, for this machine's architecture: `make release` builds both), checks what it
// wrote (SHA256SUMS, the SBOM, the image index, the chart's pinned digest), then follows
// docs/quickstart/dummy.md with nothing but the released artefacts: the page's values file and
// helm install line (from the registry), the image the installed DaemonSet names (pulled by
// digest and run as the chart's ServiceAccount with the DaemonSet's args), and the page's
// Service, which must get the address the page shows.
func TestQuickStartDummy(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/ccm"
	out := filepath.Join(t.TempDir(), "release")
	started := time.Now()
	cmd := exec.Command("bash", filepath.Join(root, "build", "release.sh"))
	cmd.Env = append(helmEnv(), "RELEASE_REGISTRY="+reg, "RELEASE_PROVIDERS=dummy", "RELEASE_PLATFORMS=linux/"+runtime.GOARCH,
		"RELEASE_OUT="+out, "VERSION="+releaseVersion, "HELM="+helm)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build/release.sh: %v\n%s", err, b)
	}
	t.Logf("release in %.1fs:\n%s", time.Since(started).Seconds(), b)
	imageRef := checkReleaseFolder(t, out, reg)

	doc := quickStart(t, filepath.Join(root, "docs", "quickstart", "dummy.md"))
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "values.yaml"), []byte(doc.values), 0o644)
	install := regexp.MustCompile(`(?m)^REGISTRY=.*$`).ReplaceAllLiteralString(doc.install, "REGISTRY="+reg)
	install = regexp.MustCompile(`(?m)^VERSION=.*$`).ReplaceAllLiteralString(install, "VERSION="+strings.TrimPrefix(releaseVersion, "v"))
	// The test's registry is plain HTTP on loopback; a real one is HTTPS.
	install = regexp.MustCompile(`(?m)^(helm install .*)$`).ReplaceAllString(install, "$1 --plain-http")
	if _, err := shell(work, install); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := runHelm("uninstall", "ccm", "--namespace", "kube-system"); err != nil {
			t.Errorf("uninstall: %v", err)
		}
	})

	ds, err := env.Client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Spec.Template.Spec.Containers[0].Image; got != imageRef {
		t.Fatalf("the installed DaemonSet runs %s, want the released image by digest %s", got, imageRef)
	}
	bin := pullBinary(t, imageRef)
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(v), "ccm "+releaseVersion) {
		t.Fatalf("the released binary says %q (%v), want ccm %s", v, err, releaseVersion)
	}
	startReleased(t, "ccm-quickstart", bin, "prod-1")
	if err := testenv.RegisterNode(context.Background(), env.Client, "node-1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Client.CoreV1().Nodes().Delete(context.Background(), "node-1", metav1.DeleteOptions{}) })
	testenv.Eventually(t, 30*time.Second, "Node node-1 as the quick start shows it", func() (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.Spec.ProviderID == doc.providerID && n.Labels["topology.kubernetes.io/zone"] == doc.zone, nil
	})
	if _, err := shell(work, doc.service); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.Client.CoreV1().Services("default").Delete(context.Background(), "hello", metav1.DeleteOptions{})
	})
	testenv.Eventually(t, 30*time.Second, "Service hello with the quick start's address "+doc.address, func() (bool, error) {
		s, err := env.Client.CoreV1().Services("default").Get(context.Background(), "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ing := s.Status.LoadBalancer.Ingress
		return len(ing) == 1 && ing[0].IP == doc.address, nil
	})
}

// checkReleaseFolder checks what the release wrote and returns the image reference by digest
// that the chart must pin.
func checkReleaseFolder(t *testing.T, out, reg string) string {
	t.Helper()
	sums := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	sums.Dir = out
	if b, err := sums.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, b)
	} else if n := strings.Count(string(b), ": OK"); n < 3 {
		t.Errorf("SHA256SUMS covers %d files, want the binary, the SBOM and the chart at least:\n%s", n, b)
	}
	var sbom struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name, VersionInfo string
		} `json:"packages"`
	}
	b, err := os.ReadFile(filepath.Join(out, "sbom", "ccm-dummy.spdx.json"))
	if err == nil {
		err = json.Unmarshal(b, &sbom)
	}
	if err != nil || sbom.SPDXVersion != "SPDX-2.3" || !strings.Contains(string(b), `"name": "k8s.io/client-go"`) {
		t.Errorf("SBOM: %v, version %q, %d packages", err, sbom.SPDXVersion, len(sbom.Packages))
	}
	ref := reg + "/ccm-dummy:" + releaseVersion
	idx, err := remote.Index(mustRef(t, ref))
	if err != nil {
		t.Fatalf("the released image index %s: %v", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Platform == nil || m.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("index of %s: %+v %v", ref, m, err)
	}
	d, _ := idx.Digest()
	arts, _ := os.ReadFile(filepath.Join(out, "artefacts.txt"))
	chart := fmt.Sprintf("oci://%s/charts/ccm-dummy:%s@sha256:", reg, strings.TrimPrefix(releaseVersion, "v"))
	if !strings.Contains(string(arts), ref+"@"+d.String()) || !strings.Contains(string(arts), chart) {
		t.Errorf("artefacts.txt names neither %s@%s nor %s...:\n%s", ref, d, chart, arts)
	}
	return reg + "/ccm-dummy@" + d.String()
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pullBinary pulls ref (an index) for this machine's platform and extracts /ccm.
func pullBinary(t *testing.T, ref string) string {
	t.Helper()
	idx, err := remote.Index(mustRef(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var img v1.Image
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			img, err = idx.Image(d.Digest)
		}
	}
	if img == nil || err != nil {
		t.Fatalf("no linux/%s image in %s: %v", runtime.GOARCH, ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	path := filepath.Join(t.TempDir(), "ccm")
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no /ccm in %s: %v", ref, err)
		}
		if h.Name != "ccm" {
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err == nil {
			_, err = io.Copy(f, tr)
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// quickStartPage is what the test takes from a quick start: the blocks marked
// <!-- quickstart: NAME --> and the results the page shows.
type quickStartPage struct {
	values, install, service  string
	providerID, zone, address string
}

var (
	marked     = regexp.MustCompile("(?s)<!-- quickstart: ([a-z.]+) -->\n```[a-z]*\n(.*?)```")
	shownNode  = regexp.MustCompile(`(?m)^node-1\s+(\S+)\s+(\S+)\s*$`)
	shownHello = regexp.MustCompile(`(?m)^hello\s+LoadBalancer\s+\S+\s+(\S+)\s`)
)

func quickStart(t *testing.T, path string) quickStartPage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range marked.FindAllStringSubmatch(string(b), -1) {
		blocks[m[1]] = m[2]
	}
	node, hello := shownNode.FindStringSubmatch(string(b)), shownHello.FindStringSubmatch(string(b))
	p := quickStartPage{values: blocks["values.yaml"], install: blocks["install"], service: blocks["service"]}
	if p.values == "" || p.install == "" || p.service == "" || node == nil || hello == nil {
		t.Fatalf("%s: want blocks values.yaml, install and service, and the node-1 and hello output lines; have %v", path, blocks)
	}
	p.providerID, p.zone, p.address = node[1], node[2], hello[1]
	return p
}

// shell runs a block of the page with bash -e in dir, with helm and kubectl on the PATH and
// the test control plane as the cluster.
func shell(dir, script string) (string, error) {
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(helmEnv(), "PATH="+filepath.Dir(helm)+string(os.PathListSeparator)+os.Getenv("PATH"))
	b, err := cmd.CombinedOutput()
	if err != nil {
		return string(b), fmt.Errorf("%s: %w\n%s", script, err, b)
	}
	return string(b), nil
}
