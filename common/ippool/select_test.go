package ippool

import (
	"slices"
	"strings"
	"testing"
)

func names(ps []*Pool) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

func pools(t *testing.T, cfg map[string]*Config) []*Pool {
	t.Helper()
	ps, err := All(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// Which pools a Service may use, in the order they are tried: restricted pools serving it (by
// namespace and service selector), else the unrestricted ones; priorities first, lowest first.
func TestForService(t *testing.T) {
	ps := pools(t, map[string]*Config{
		"a-any":      {CIDR: []string{"192.0.2.0/28"}},
		"b-any-p2":   {CIDR: []string{"192.0.2.16/28"}, Priority: 2},
		"c-team":     {CIDR: []string{"192.0.2.32/28"}, Namespace: []string{"team"}},
		"d-web":      {CIDR: []string{"192.0.2.48/28"}, ServiceSelector: []string{"app=web"}},
		"e-web-p1":   {CIDR: []string{"192.0.2.64/28"}, ServiceSelector: []string{"app in (web,api)", "tier=edge"}, Priority: 1},
		"f-team-api": {CIDR: []string{"192.0.2.80/28"}, Namespace: []string{"team"}, ServiceSelector: []string{"app=api"}},
	})
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		want   []string
	}{
		{"other", nil, []string{"b-any-p2", "a-any"}},
		{"other", map[string]string{"app": "db"}, []string{"b-any-p2", "a-any"}},
		{"other", map[string]string{"app": "web"}, []string{"e-web-p1", "d-web"}},
		{"other", map[string]string{"tier": "edge"}, []string{"e-web-p1"}},
		{"team", nil, []string{"c-team"}},
		{"team", map[string]string{"app": "api"}, []string{"e-web-p1", "c-team", "f-team-api"}},
	} {
		if got := names(ForService(ps, tc.ns, tc.labels)); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.ns, tc.labels, got, tc.want)
		}
	}
}

// Where a Service's labels are not known, every pool that may serve one of the namespace's
// Services counts; a pool naming the namespace without selectors serves all of them.
func TestForWithoutLabels(t *testing.T) {
	ps := pools(t, map[string]*Config{
		"any":  {CIDR: []string{"192.0.2.0/28"}},
		"web":  {CIDR: []string{"192.0.2.48/28"}, ServiceSelector: []string{"app=web"}},
		"team": {CIDR: []string{"192.0.2.32/28"}, Namespace: []string{"team"}},
	})
	if got := names(For(ps, "other")); !slices.Equal(got, []string{"web", "any"}) {
		t.Errorf("other: %v, want web then any", got)
	}
	if got := names(For(ps, "team")); !slices.Equal(got, []string{"team", "web"}) {
		t.Errorf("team: %v, want team and web, not the fallback", got)
	}
}

// A bad selector or priority is refused naming its key.
func TestSelectorAndPriorityErrors(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		key string
	}{
		{Config{CIDR: []string{"192.0.2.0/28"}, ServiceSelector: []string{"app in (web"}}, "service-selector"},
		{Config{CIDR: []string{"192.0.2.0/28"}, ServiceSelector: []string{" "}}, "service-selector"},
		{Config{CIDR: []string{"192.0.2.0/28"}, ServiceSelector: []string{strings.Repeat("a", maxSelectorLen+1)}}, "service-selector"},
		{Config{CIDR: []string{"192.0.2.0/28"}, Priority: -1}, "priority"},
	} {
		if _, err := New("p", &tc.c); err == nil || err.Key != tc.key {
			t.Errorf("%+v: error %v, want one naming %s", tc.c, err, tc.key)
		}
	}
}
