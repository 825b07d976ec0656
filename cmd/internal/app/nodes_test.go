package app

import (
	"strings"
	"testing"
	"time"
)

func TestNodeSettings(t *testing.T) {
	env := func(set bool) func(string) (string, bool) {
		return func(k string) (string, bool) { return "", set && k == skipNodeDeletionEnv }
	}
	s, err := nodeSettings(time.Minute, map[string]string{"node.example/pool": "blue", "plain": ""}, env(true))
	if err != nil || !s.NeverDelete || s.Window != time.Minute || s.Labels["node.example/pool"] != "blue" {
		t.Errorf("settings %+v, %v", s, err)
	}
	if s, _ := nodeSettings(0, nil, env(false)); s.NeverDelete {
		t.Error("SKIP_NODE_DELETION unset, yet Nodes are never deleted")
	}
	for labels, want := range map[string]string{
		"Bad Key": `--node-labels: key "Bad Key"`,
		"ok/key":  `--node-labels: value of "ok/key"`,
	} {
		value := "v"
		if labels == "ok/key" {
			value = "bad value!"
		}
		if _, err := nodeSettings(0, map[string]string{labels: value}, env(false)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q=%q: %v, want an error with %q", labels, value, err, want)
		}
	}
}
