package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/testenv"
)

// Every cloud-config block in a provider's page, its quick start and the migration pages (```ini,
// and vSphere's YAML form: a ```yaml block that starts with global:) passes that provider's
// check-config as written, offline (the files it names live on the cluster's nodes, not here):
// an operator copies them. docs/providers/<p>.md and docs/quickstart/<p>.md are checked with
// provider p; docs/migrate/*.md, whose pools the dummy provider's load-balancers-only setup
// serves, with the dummy.
func TestDocConfigBlocksPassCheckConfig(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	providers := []string{"aws", "dummy", "openstack", "vsphere"}
	pages := map[string]string{} // page (relative to docs/) -> provider
	for _, p := range providers {
		pages[filepath.Join("providers", p+".md")] = p
		if _, err := os.Stat(filepath.Join(root, "docs", "quickstart", p+".md")); err == nil {
			pages[filepath.Join("quickstart", p+".md")] = p
		}
	}
	migrate, err := filepath.Glob(filepath.Join(root, "docs", "migrate", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrate {
		pages[filepath.Join("migrate", filepath.Base(m))] = "dummy"
	}
	checked, perDir := 0, map[string]int{}
	for page, p := range pages {
		src, err := os.ReadFile(filepath.Join(root, "docs", page))
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
				t.Errorf("docs/%s, config block %d fails check-config as written:\n%s\n---\n%s", page, i+1, out, block)
			}
			checked++
			perDir[filepath.Dir(page)]++
		}
	}
	if perDir["providers"] < 5 {
		t.Errorf("%d config blocks found in docs/providers, want at least 5", perDir["providers"])
	}
	if len(migrate) > 0 && perDir["migrate"] == 0 {
		t.Errorf("no config block found in docs/migrate (%d pages)", len(migrate))
	}
	t.Logf("%d config blocks checked: %v", checked, perDir)
}

// configBlocks returns the fenced ```ini blocks of a Markdown text, and the ```yaml blocks that
// start with "global:" (vSphere's YAML config). A fence may be indented (a block inside a list
// item): the block's lines lose the fence's indentation.
func configBlocks(md string) []string {
	var out []string
	var cur []string
	in, indent := false, ""
	for _, line := range strings.Split(md, "\n") {
		fence := strings.TrimLeft(line, " ")
		switch {
		case !in && (fence == "```ini" || fence == "```yaml"):
			in, cur, indent = true, []string{fence}, line[:len(line)-len(fence)]
		case in && fence == "```" && strings.HasPrefix(line, indent):
			in = false
			body := strings.Join(cur[1:], "\n") + "\n"
			if cur[0] == "```ini" || strings.HasPrefix(body, "global:") {
				out = append(out, body)
			}
		case in:
			cur = append(cur, strings.TrimPrefix(line, indent))
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
