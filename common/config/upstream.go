package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// "Strict for typos, not for upstream": a provider lists every section and key the upstream
// CCM of its cloud reads, with what the provider does with it. Keys it implements are plain
// fields of its config struct; the others are fields too (so gcfg accepts them and a typo
// next to them still fails), and UpstreamReport turns their presence into one start-up
// notice each, or a Problem for those the provider refuses.

// KeyStatus is what a provider does with one upstream key.
type KeyStatus int

const (
	Implemented KeyStatus = iota // read and acted on
	Unused                       // accepted, reported once at start-up and by check-config
	Unsupported                  // refused with its line, unless Harmless(value)
)

func (s KeyStatus) String() string {
	return [...]string{"implemented", "accepted, not used", "error: not supported yet"}[s]
}

// UpstreamKey is one row of a provider's table.
type UpstreamKey struct {
	Section, Key string
	Status       KeyStatus
	// Example is a value the provider's tests set: it must parse, and for an implemented key
	// take effect.
	Example string
	// Why the provider does not use or support the key, and what to do instead.
	Why, Instead string
	// Harmless, for Unsupported keys, accepts values that mean what the provider does anyway.
	Harmless func(value string) bool
}

// UpstreamNotice is the text of a start-up report for an unused key.
const UpstreamNotice = "read by the upstream CCM, not used by ccm: "

// UpstreamRefusal is the text of the problem for an unsupported key.
const UpstreamRefusal = "read by the upstream CCM, not supported by ccm yet: "

// UpstreamReport walks keys over cfg (a pointer to the config struct gcfg filled). Each
// Unused key present gives one notice, each Unsupported key present with a value that is not
// harmless one Problem (ReadINI adds its line). Values are never repeated: some are secrets.
// A field is "present" when a pointer is non-nil (an empty string counts as absent: charts
// render `key = ""` for unset values) or a slice has a non-empty element.
func UpstreamReport(cfg any, keys []UpstreamKey) (notices []string, ps Problems) {
	v := reflect.ValueOf(cfg).Elem()
	for _, k := range keys {
		if k.Status == Implemented {
			continue
		}
		for _, s := range SectionValues(v, k.Section) {
			f, ok := FieldByKey(s.Value, k.Key)
			if !ok {
				continue // the provider's table test catches a row without a field
			}
			value, set := presentValue(f)
			if !set {
				continue
			}
			switch {
			case k.Status == Unused:
				notices = append(notices, Problem{Section: k.Section, Subsection: s.Sub, Key: k.Key,
					Msg: UpstreamNotice + k.Why + "; " + k.Instead}.String())
			case k.Harmless == nil || !k.Harmless(value):
				ps.AddSub(k.Section, s.Sub, k.Key, "%s%s; %s", UpstreamRefusal, k.Why, k.Instead)
			}
		}
	}
	return notices, ps
}

// SectionValue is the struct of one section, or of one named subsection of a map section.
type SectionValue struct {
	Sub   string
	Value reflect.Value
}

// SectionValues returns the struct of section in cfg (a struct value), or one per named
// subsection when the section is a map of pointers, sorted by name.
func SectionValues(cfg reflect.Value, section string) []SectionValue {
	f := cfg.FieldByName(section)
	if !f.IsValid() {
		return nil
	}
	if f.Kind() != reflect.Map {
		return []SectionValue{{Value: f}}
	}
	var out []SectionValue
	for _, key := range f.MapKeys() {
		if e := f.MapIndex(key); !e.IsNil() {
			out = append(out, SectionValue{Sub: key.String(), Value: e.Elem()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sub < out[j].Sub })
	return out
}

// FieldByKey finds the field gcfg stores key in: by its gcfg tag, else by its name as gcfg
// matches names (case-insensitive, '-' read as '_'); promoted fields of embedded structs
// included.
func FieldByKey(s reflect.Value, key string) (reflect.Value, bool) {
	for _, sf := range reflect.VisibleFields(s.Type()) {
		if sf.Anonymous || !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("gcfg"), ",")
		if (name != "" && strings.EqualFold(name, key)) ||
			(name == "" && strings.EqualFold(sf.Name, strings.ReplaceAll(key, "-", "_"))) {
			return s.FieldByIndex(sf.Index), true
		}
	}
	return reflect.Value{}, false
}

func presentValue(f reflect.Value) (string, bool) {
	switch f.Kind() {
	case reflect.Ptr:
		if f.IsNil() {
			return "", false
		}
		if e := f.Elem(); e.Kind() == reflect.String {
			return e.String(), e.String() != ""
		}
		return fmt.Sprint(f.Elem().Interface()), true
	case reflect.Slice:
		var vs []string
		for i := 0; i < f.Len(); i++ {
			if s := fmt.Sprint(f.Index(i).Interface()); s != "" {
				vs = append(vs, s)
			}
		}
		return strings.Join(vs, ","), len(vs) > 0
	}
	return "", false
}

// UpstreamMarkdown is a provider's table as Markdown for its docs; title names a section as
// the docs show it (e.g. `[ServiceOverride "n"]`).
func UpstreamMarkdown(keys []UpstreamKey, title func(section string) string) string {
	var b strings.Builder
	b.WriteString("| Section | Key | ccm | Why, and what to do instead |\n|---|---|---|---|\n")
	for _, k := range keys {
		note := k.Why // for an implemented key, how ccm reads it, if that needs saying
		if k.Instead != "" {
			note += "; " + k.Instead
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", title(k.Section), k.Key, k.Status, strings.ReplaceAll(note, "|", `\|`))
	}
	return b.String()
}
