package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"version from ldflags", []string{"--version"}, 0, "ccm " + ccmVersion(t)},
		{"libraries' version", []string{"--version"}, 0, "Kubernetes libraries v1."},
		{"raw version", []string{"--version=raw"}, 0, `"kubernetes": "v1.`},
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

// The shipped binary (linked by the Makefile) accepts --logging-format=json and a Beta feature
// gate, and logs JSON once the library applies the format. Stamping ccm's version into
// component-base had made it emulate Kubernetes 0.1 and refuse both.
func TestShippedBinaryLogsJSONWithABetaGate(t *testing.T) {
	c := startCCM(t, "ccm-json", "[Global]\nregion = json\n\n[Pool \"p\"]\ncidr = 192.0.2.0/28\n",
		"--logging-format=json", "--feature-gates=LoggingBetaOptions=true")
	eventually(t, 30*time.Second, "ccm logs that it started", func() (bool, error) {
		return strings.Contains(c.Tail(200), "Starting ccm"), nil
	})
	var started map[string]any
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(c.Tail(200)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
			continue
		}
		lines++
		if entry["msg"] == "Starting ccm" {
			started = entry
		}
	}
	if started == nil {
		t.Fatalf("no JSON line \"Starting ccm\" among %d", lines)
	}
	if v, _ := started["version"].(string); v != ccmVersion(t) {
		t.Errorf("Starting ccm: version %q, want ccm's own (%s)", v, ccmVersion(t))
	}
	if k, _ := started["kubernetes"].(string); !strings.HasPrefix(k, "v1.") {
		t.Errorf("Starting ccm: kubernetes %q, want the Kubernetes libraries' version (v1.x)", k)
	}
}

// ccmVersion is the version the Makefile stamped into the binaries under test (build/version.sh,
// or VERSION when given), passed down as CCM_VERSION.
func ccmVersion(t *testing.T) string {
	t.Helper()
	v := os.Getenv("CCM_VERSION")
	if v == "" {
		t.Fatal("CCM_VERSION is not set: run the integration tests with `make integration`")
	}
	return v
}
