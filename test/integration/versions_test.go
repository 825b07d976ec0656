package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Kubernetes versions the README says ccm supports are the ones tested: the oldest stated
// minor is the minor of the kube-apiserver these tests run against and of the Kubernetes
// libraries the binary is built with (a cloud-controller-manager must not be newer than its
// kube-apiserver, so the oldest supported version is the libraries' own).
func TestSupportedKubernetesVersions(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<!-- supported-kubernetes -->\n\*\*Supported Kubernetes versions: v1\.(\d+)\*\*`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md states no supported Kubernetes versions after <!-- supported-kubernetes -->")
	}
	stated := string(m[1])
	sv, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSuffix(sv.Minor, "+") != stated {
		t.Errorf("README.md supports v1.%s, the tests' kube-apiserver is %s", stated, sv.GitVersion)
	}
	out, err := exec.Command(os.Getenv("CCM_BINARY"), "--version=raw").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Kubernetes string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("--version=raw: %v\n%s", err, out)
	}
	if !strings.HasPrefix(v.Kubernetes, "v1."+stated+".") {
		t.Errorf("README.md supports v1.%s, the binary is built with the Kubernetes libraries %s", stated, v.Kubernetes)
	}
	t.Logf("supported v1.%s: kube-apiserver %s, libraries %s", stated, sv.GitVersion, v.Kubernetes)
}
