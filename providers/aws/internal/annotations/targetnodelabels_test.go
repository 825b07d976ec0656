package annotations

import (
	"maps"
	"strings"
	"testing"
)

// The expected maps follow upstream's getKeyValuePropertiesFromAnnotation
// (aws_loadbalancer.go:122-146): trim the list, split on ",", trim the item, split on "=",
// keep parts[0] -> parts[1] ("" when there is no "="), skip an empty key.
func TestUpstreamKeyValues(t *testing.T) {
	for v, want := range map[string]map[string]string{
		"":                               {},
		"   ":                            {},
		"role=web":                       {"role": "web"},
		"role=":                          {"role": ""},
		"role":                           {"role": ""},
		"k1=v1,k2":                       {"k1": "v1", "k2": ""},
		" k1=v1 , k2=v2 ":                {"k1": "v1", "k2": "v2"},
		"k = v":                          {"k ": " v"}, // inside an item nothing is trimmed
		"k=v=x":                          {"k": "v"},   // after a second "=" the text is dropped
		"=v,k":                           {"k": ""},    // no key: skipped
		",,k=v,":                         {"k": "v"},
		"k=a,k=b":                        {"k": "b"}, // a later key wins
		"a in (b)":                       {"a in (b)": ""},
		"node-role.kubernetes.io/worker": {"node-role.kubernetes.io/worker": ""},
	} {
		if got := upstreamKeyValues(v); !maps.Equal(got, want) {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

// Upstream's filterTargetNodes (aws_loadbalancer.go:1829-1855): every key present, its value
// equal unless the wanted value is "".
func TestNodeLabelFilterSelects(t *testing.T) {
	web, db, bare := map[string]string{"role": "web", "zone": "a"}, map[string]string{"role": "db"}, map[string]string{}
	for _, c := range []struct {
		annotation      string
		web, db, noneOf bool
	}{
		{"", true, true, true},
		{"role=", true, true, false},
		{"role", true, true, false},
		{"role=web", true, false, false},
		{"role=web,zone", true, false, false},
		{"role=,zone=a", true, false, false},
		{"role=web=x", true, false, false},
		{"k = v", false, false, false},
		{"a in (b)", false, false, false},
	} {
		f := NodeLabelFilter(upstreamKeyValues(c.annotation))
		if f.Selects(web) != c.web || f.Selects(db) != c.db || f.Selects(bare) != c.noneOf || f.Selects(nil) != c.noneOf {
			t.Errorf("%q: web %v db %v unlabelled %v; want %v %v %v", c.annotation, f.Selects(web), f.Selects(db), f.Selects(bare), c.web, c.db, c.noneOf)
		}
	}
}

// Items written for a label selector are refused (naming the item); upstream's own forms are not.
func TestParseNodeLabelsRefusesSelectorForms(t *testing.T) {
	for v, refused := range map[string]bool{
		"role!=spot":                     true, // key "role!"
		"role in (web,api)":              true,
		"role notin (spot)":              true,
		"!spot":                          true,
		"role = web":                     true, // key "role " (with a space)
		"role==web":                      true, // would match any value of role
		"zone=a,role!=spot":              true,
		"role=(web)":                     true,
		"k.io/x y=1":                     true, // not a label key
		"":                               false,
		"role":                           false,
		"role=":                          false,
		"role=web,zone":                  false,
		"role=web=x":                     false, // upstream: role=web
		"=v,k":                           false, // no key: skipped, as upstream
		" k1=v1 , k2=v2 ":                false,
		"node-role.kubernetes.io/worker": false,
		"state=notinuse":                 false, // "notin" inside a value is upstream's plain value
		"app=cannotinstall,notin":        false,
	} {
		f, err := parseNodeLabels(v)
		if refused != (err != nil) {
			t.Errorf("%q: err %v, want refused %v", v, err, refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), Prefix+NodeLabels) {
			t.Errorf("%q: error %v does not name the annotation", v, err)
		}
		if err == nil && !maps.Equal(f, NodeLabelFilter(upstreamKeyValues(v))) {
			t.Errorf("%q: %v, want upstream's reading %v", v, f, upstreamKeyValues(v))
		}
	}
}
