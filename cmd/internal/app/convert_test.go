package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ccm convert reads a file or standard input and prints [Pool] sections, with the notes.
func TestConvertCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pools.yaml")
	os.WriteFile(file, []byte("kind: IPAddressPool\nmetadata: {name: prod}\nspec: {addresses: [192.168.10.0/24], serviceAllocation: {priority: 5, namespaceSelectors: [{matchLabels: {team: a}}]}}\n"), 0o600)
	run := func(stdin string, args ...string) (string, error) {
		cmd := NewCommand(make(chan struct{}))
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetIn(strings.NewReader(stdin))
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("", "convert", "metallb", "-f", file)
	if err != nil || !strings.Contains(out, "[Pool \"prod\"]\n; IPAddressPool prod\ncidr = 192.168.10.0/24\npriority = 5\nskip-end-addresses = false\n") ||
		!strings.Contains(out, "; NOTE: IPAddressPool prod: serviceAllocation.namespaceSelectors") {
		t.Errorf("convert metallb: %v\n%s", err, out)
	}
	out, err = run("kind: ConfigMap\nmetadata: {name: kubevip}\ndata: {range-global: 10.0.0.5-10.0.0.9}\n", "convert", "kube-vip-cloud-provider", "-f", "-")
	if err != nil || !strings.Contains(out, "[Pool \"global\"]") || !strings.Contains(out, "range = 10.0.0.5-10.0.0.9") {
		t.Errorf("convert kube-vip-cloud-provider from stdin: %v\n%s", err, out)
	}
	if _, err := run("", "convert", "metallb", "-f", file+".missing"); err == nil {
		t.Error("a missing file converted")
	}
	if _, err := run("kind: ConfigMap\nmetadata: {name: x}\n---\nkind: ConfigMap\nmetadata: {name: y}\n", "convert", "kube-vip-cloud-provider", "-f", "-"); err == nil || !strings.Contains(err.Error(), "kubevip") {
		t.Errorf("two ConfigMaps, none named kubevip: %v", err)
	}
}
