package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The binary's own behaviour on bad input: exit code 1 and a message that says what to do.
func TestBinaryCLI(t *testing.T) {
	bin := os.Getenv("CCM_BINARY")
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.conf")
	if err := os.WriteFile(typo, []byte("[Global]\nregion = r\n\n[Pool \"p\"]\ncidr = 192.0.2.0/28\nnamspace = x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.conf")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"version from ldflags", []string{"--version"}, 0, "Kubernetes v0.1.0-"},
		{"providers", []string{"providers"}, 0, "dummy"},
		{"unknown provider", []string{"--cloud-provider=nope"}, 1, "compiled-in providers: dummy"},
		{"missing cloud-config", []string{"--cloud-provider=dummy", "--cloud-config=" + missing}, 1, missing},
		{"check-config typo", []string{"check-config", "--cloud-provider=dummy", "--cloud-config=" + typo}, 1, `line 6: [Pool "p"] namspace: unknown key`},
		{"check-config ok", []string{"check-config", "--cloud-provider=dummy", "--cloud-config=" + filepath.Join("..", "demo", "dummy.conf")}, 0, "OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, tc.args...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("ccm %v: exit %d, output:\n%s\nwant exit %d and %q", tc.args, code, out, tc.code, tc.want)
			}
		})
	}
}
