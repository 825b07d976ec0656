package config

import (
	"strings"
	"testing"
)

type upTestCfg struct {
	Global struct {
		Name string
		upTestOnly
	}
	Override map[string]*struct {
		URL   string
		Gone  *bool `gcfg:"gone-key"`
		Multi []string
	}
}

type upTestOnly struct {
	Old    *string
	Secret *string
}

// Unused keys present give one notice each (with section, subsection and key); unsupported
// ones a Problem unless harmless; values are never repeated; absent and empty keys are silent.
func TestUpstreamReport(t *testing.T) {
	keys := []UpstreamKey{
		{Section: "Global", Key: "Name", Status: Implemented},
		{Section: "Global", Key: "Old", Status: Unused, Why: "why", Instead: "instead"},
		{Section: "Global", Key: "Secret", Status: Unsupported, Why: "w2", Instead: "i2", Harmless: func(v string) bool { return v == "ok" }},
		{Section: "Override", Key: "gone-key", Status: Unused, Why: "w3", Instead: "i3"},
		{Section: "Override", Key: "Multi", Status: Unused, Why: "w4", Instead: "i4"},
	}
	var c upTestCfg
	err := ReadINI(strings.NewReader("[Global]\nName = n\nOld = x\nSecret = hunter2\n[Override \"b\"]\ngone-key = true\n[Override \"a\"]\nMulti = \"\"\nURL = u\n"), &c)
	if err != nil {
		t.Fatal(err)
	}
	notices, ps := UpstreamReport(&c, keys)
	want := []string{"[Global] Old: " + UpstreamNotice + "why; instead", `[Override "b"] gone-key: ` + UpstreamNotice + "w3; i3"}
	if strings.Join(notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices %q\nwant %q", notices, want)
	}
	if len(ps) != 1 || ps[0].Key != "Secret" || strings.Contains(ps[0].String(), "hunter2") || !strings.Contains(ps[0].String(), UpstreamRefusal+"w2; i2") {
		t.Errorf("problems %v", ps)
	}
	ok := "ok"
	c.Global.Secret = &ok
	if _, ps := UpstreamReport(&c, keys); len(ps) != 0 {
		t.Errorf("a harmless value refused: %v", ps)
	}
	md := UpstreamMarkdown(keys, func(s string) string { return "[" + s + "]" })
	if !strings.Contains(md, "| `[Global]` | `Old` | accepted, not used | why; instead |") || strings.Count(md, "\n") != len(keys)+2 {
		t.Errorf("markdown:\n%s", md)
	}
}
