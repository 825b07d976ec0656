package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/testenv"
)

// Every cloud-config block in a provider's page (```ini, and vSphere's YAML form: a ```yaml
// block that starts with global:) passes that provider's check-config as written, offline (the
// files it names live on the cluster's nodes, not here): an operator copies them.
func TestDocConfigBlocksPassCheckConfig(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range []string{"aws", "dummy", "openstack", "vsphere"} {
		src, err := os.ReadFile(filepath.Join(root, "docs", "providers", p+".md"))
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range configBlocks(string(src)) {
			name := filepath.Join(t.TempDir(), "cloud.conf")
			if err := os.WriteFile(name, []byte(block), 0o600); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(os.Getenv("CCM_BIN_DIR"), "ccm-"+p)
			out, err := exec.Command(bin, "check-config", "--offline", "--cloud-provider="+p, "--cloud-config="+name).CombinedOutput()
			if err != nil {
				t.Errorf("docs/providers/%s.md, config block %d fails check-config as written:\n%s\n---\n%s", p, i+1, out, block)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Errorf("%d config blocks found in docs/providers, want at least 5", checked)
	}
}

// configBlocks returns the fenced ```ini blocks of a Markdown text, and the ```yaml blocks that
// start with "global:" (vSphere's YAML config).
func configBlocks(md string) []string {
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && (line == "```ini" || line == "```yaml"):
			in, cur = true, []string{line}
		case in && line == "```":
			in = false
			body := strings.Join(cur[1:], "\n") + "\n"
			if cur[0] == "```ini" || strings.HasPrefix(body, "global:") {
				out = append(out, body)
			}
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

// --offline lists the files a config names instead of failing where they do not exist.
func TestCheckConfigOffline(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(name, []byte("[Global]\ninventory = /nonexistent/inventory.conf\n\n[Pool \"p\"]\ncidr = 192.0.2.0/28\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("CCM_BINARY")
	if out, err := exec.Command(bin, "check-config", "--cloud-provider=dummy", "--cloud-config="+name).CombinedOutput(); err == nil || !strings.Contains(string(out), "inventory") {
		t.Errorf("online, a missing inventory passed: %s", out)
	}
	out, err := exec.Command(bin, "check-config", "--offline", "--cloud-provider=dummy", "--cloud-config="+name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not checked (--offline): [Global] inventory = /nonexistent/inventory.conf") || !strings.Contains(string(out), "OK") {
		t.Errorf("offline: %v\n%s", err, out)
	}
}
