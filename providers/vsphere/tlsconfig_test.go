package vsphere

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ca-file or thumbprint with insecure-flag = true: govmomi would skip verification and ignore
// both (before: accepted silently). Every combination, in both forms; the error names both keys
// and their lines.
// ca-file or thumbprint under insecure-flag = true: upstream (govmomi) verifies nothing then, so
// the file is accepted as upstream accepts it, with a notice per ignored key naming both lines.
func TestInsecureFlagWithVerificationIsReported(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const tp = "AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB:AB"
	ini := func(global, vc string) string {
		s := "[Global]\nuser = u\npassword = p\n" + global
		if vc == "" {
			return s + "server = vc.example.com\n"
		}
		return s + "\n[VirtualCenter \"vc.example.com\"]\n" + vc
	}
	yml := func(global, vc string) string {
		s := "global:\n  user: u\n  password: p\n" + global
		if vc == "" {
			return s + "  server: vc.example.com\n"
		}
		return s + "vcenter:\n  one:\n    server: vc.example.com\n" + vc
	}
	cases := []struct {
		name string
		src  string
		want []string // substrings of the notices; none = no notice
	}{
		{"INI insecure alone", ini("insecure-flag = true\n", ""), nil},
		{"INI ca-file alone", ini("ca-file = "+ca+"\n", ""), nil},
		{"INI thumbprint alone", ini("thumbprint = "+tp+"\n", ""), nil},
		{"INI ca-file and thumbprint", ini("ca-file = "+ca+"\nthumbprint = "+tp+"\n", ""), nil},
		{"INI insecure and ca-file", ini("insecure-flag = 1\nca-file = "+ca+"\n", ""),
			[]string{"line 5: [Global] ca-file: is ignored: [Global] insecure-flag (line 4) = true", "verification off"}},
		{"INI insecure and thumbprint", ini("thumbprint = "+tp+"\ninsecure-flag = true\n", ""),
			[]string{"line 4: [Global] thumbprint: is ignored: [Global] insecure-flag (line 5) = true"}},
		{"INI insecure, ca-file and thumbprint", ini("insecure-flag = true\nca-file = "+ca+"\nthumbprint = "+tp+"\n", ""),
			[]string{"[Global] ca-file: is ignored", "[Global] thumbprint: is ignored"}},
		{"INI global insecure, vCenter ca-file", ini("insecure-flag = true\n", "ca-file = "+ca+"\n"),
			[]string{`line 7: [VirtualCenter "vc.example.com"] ca-file: is ignored: [Global] insecure-flag (line 4) = true`}},
		{"INI vCenter insecure, global ca-file", ini("ca-file = "+ca+"\n", "insecure-flag = true\n"),
			[]string{`line 4: [Global] ca-file: is ignored: [VirtualCenter "vc.example.com"] insecure-flag (line 7) = true`}},
		// upstream ORs the two flags: a section's false does not turn verification back on.
		{"INI vCenter cannot turn insecure off", ini("insecure-flag = true\n", "insecure-flag = false\nthumbprint = "+tp+"\n"),
			[]string{`line 8: [VirtualCenter "vc.example.com"] thumbprint: is ignored: [Global] insecure-flag (line 4) = true`}},
		{"INI global thumbprint inherited under vCenter insecure", ini("thumbprint = "+tp+"\n", "insecure-flag = true\n"),
			[]string{`line 4: [Global] thumbprint: is ignored: [VirtualCenter "vc.example.com"] insecure-flag (line 7) = true`}},
		{"INI vCenter insecure and thumbprint", ini("", "insecure-flag = true\nthumbprint = "+tp+"\n"),
			[]string{`line 7: [VirtualCenter "vc.example.com"] thumbprint: is ignored: [VirtualCenter "vc.example.com"] insecure-flag (line 6)`}},
		{"YAML insecure alone", yml("  insecureFlag: true\n", ""), nil},
		{"YAML ca-file alone", yml("  caFile: "+ca+"\n", ""), nil},
		{"YAML insecure and ca-file", yml("  insecureFlag: true\n  caFile: "+ca+"\n", ""),
			[]string{"line 5: [Global] ca-file: is ignored: [Global] insecure-flag (line 4) = true"}},
		{"YAML insecure and thumbprint", yml("  insecureFlag: true\n  thumbprint: "+tp+"\n", ""),
			[]string{"line 5: [Global] thumbprint: is ignored: [Global] insecure-flag (line 4)"}},
		{"YAML vCenter insecure and thumbprint", yml("", "    insecureFlag: true\n    thumbprint: "+tp+"\n"),
			[]string{`line 8: [VirtualCenter "one"] thumbprint: is ignored: [VirtualCenter "one"] insecure-flag (line 7)`}},
		{"YAML vCenter cannot turn insecure off", yml("  insecureFlag: true\n", "    insecureFlag: false\n    caFile: "+ca+"\n"),
			[]string{`line 9: [VirtualCenter "one"] ca-file: is ignored: [Global] insecure-flag (line 4) = true`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := readConfig(strings.NewReader(c.src))
			if err != nil {
				t.Fatalf("%s\nerror: %v", c.src, err)
			}
			notices := strings.Join(cfg.notices, "\n")
			if len(c.want) == 0 && strings.Contains(notices, "is ignored") {
				t.Errorf("%s\nnotices %q", c.src, notices)
			}
			for _, w := range c.want {
				if !strings.Contains(notices, w) {
					t.Errorf("%s\nnotices %q\ndo not contain %q", c.src, notices, w)
				}
			}
			if len(c.want) > 0 && !cfg.vcenters()[0].Insecure {
				t.Errorf("%s\nnot insecure: upstream skips verification here", c.src)
			}
		})
	}
}

// The hint for an untrusted certificate names ca-file and thumbprint, never insecure-flag
// (before: "set ca-file or thumbprint, or insecure-flag = true").
func TestUntrustedCertificateHint(t *testing.T) {
	s := startSim(t)
	cfg := strings.Replace(testConfig(s, ""), "insecure-flag = 1", "insecure-flag = 0", 1)
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.conns[0].get(t.Context())
	if err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "certificate not trusted") || !strings.Contains(msg, "ca-file") || !strings.Contains(msg, "thumbprint") || strings.Contains(msg, "insecure") {
		t.Errorf("hint: %s", msg)
	}
}
