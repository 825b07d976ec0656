package ownership

import (
	"errors"
	"strings"
	"testing"
)

var me = Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "1111-2222"}

func TestCheck(t *testing.T) {
	legacy := me
	legacy.UID = ""
	cases := []struct {
		name   string
		tags   map[string]string
		reason string // "" for owned
	}{
		{"own tags", me.Tags(), ""},
		{"written before UIDs", legacy.Tags(), ""},
		{"no tags", nil, "no ownership mark"},
		{"other cluster", Identity{Cluster: "dev", Namespace: "shop", Name: "web", UID: me.UID}.Tags(), "no ownership mark"},
		{"shared with this cluster", map[string]string{ClusterTagPrefix + "prod": Shared, ServiceTag: "shop/web"}, "shared"},
		{"other Service", Identity{Cluster: "prod", Namespace: "shop", Name: "api"}.Tags(), "another Service"},
		{"other namespace", Identity{Cluster: "prod", Namespace: "evil", Name: "web"}.Tags(), "another Service"},
		{"earlier Service of the name", Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "9999"}.Tags(), "UID differs"},
		{"owned but no Service", map[string]string{ClusterTagPrefix + "prod": Owned}, "no ownership mark"},
		{"Service without namespace", map[string]string{ClusterTagPrefix + "prod": Owned, ServiceTag: "/web"}, "no ownership mark"},
	}
	for _, c := range cases {
		err := Check(me, "load balancer", "lb-1", c.tags)
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: %v, want owned", c.name, err)
		case c.reason != "" && (err == nil || !strings.Contains(err.Error(), c.reason) || !errors.Is(err, ErrNotOwned)):
			t.Errorf("%s: %v, want a NotOwnedError saying %q", c.name, err, c.reason)
		}
		if c.reason != "" && err != nil && (strings.Contains(err.Error(), "dev") || strings.Contains(err.Error(), "api")) {
			t.Errorf("%s: the refusal names the real owner: %v", c.name, err)
		}
	}
}

func TestNeedsUID(t *testing.T) {
	legacy := me
	legacy.UID = ""
	if !NeedsUID(me, legacy.Tags()) || NeedsUID(me, me.Tags()) || NeedsUID(me, nil) {
		t.Errorf("NeedsUID: want true only for an owned object without a UID")
	}
}

func TestDescriptionRoundTrip(t *testing.T) {
	long := Identity{Cluster: "prod", Namespace: strings.Repeat("n", 63), Name: strings.Repeat("m", 63), UID: "1111-2222"}
	cases := []struct {
		id      Identity
		role    string
		max     int
		wantSvc bool
	}{
		{me, "", 0, true},
		{me, "health", 255, true},
		{long, "client", 100, false},
		{long, "", 255, true},
	}
	for _, c := range cases {
		d := Description(c.id, c.role, c.max)
		if c.max > 0 && len(d) > c.max {
			t.Errorf("%q: %d bytes, over %d", d, len(d), c.max)
		}
		got, role, ok := ParseDescription(d)
		if !ok || role != c.role || got.Cluster != c.id.Cluster || got.UID != c.id.UID {
			t.Errorf("ParseDescription(%q) = %+v %q %v", d, got, role, ok)
		}
		if c.wantSvc != (got.Namespace == c.id.Namespace && got.Name == c.id.Name) {
			t.Errorf("%q: namespace/name kept = %v, want %v", d, !c.wantSvc, c.wantSvc)
		}
		if err := CheckDescription(c.id, "listener", "l-1", d); err != nil {
			t.Errorf("CheckDescription(own %q): %v", d, err)
		}
	}
}

func TestCheckDescription(t *testing.T) {
	cases := []struct {
		desc   string
		reason string
	}{
		{Description(me, "", 0), ""},
		{"ccm:", "no ownership mark"}, // the old shared prefix proves nothing
		{"ccm:prod shop/web", "no ownership mark"},
		{"listener made by hand", "no ownership mark"},
		{Description(Identity{Cluster: "dev", Namespace: "shop", Name: "web", UID: me.UID}, "", 0), "no ownership mark"},
		{Description(Identity{Cluster: "prod", Namespace: "shop", Name: "api", UID: "x"}, "", 0), "another Service"},
		{Description(Identity{Cluster: "prod", Namespace: "shop", Name: "web", UID: "x"}, "", 0), "UID differs"},
		{"ccm:prod - 9999", "another Service"},
		{"ccm:prod - -", "another Service"},
		{ClusterDescription("prod", "nlb-mtu"), "another Service"},
		{"ccm:prod shop/web 1111-2222 a b", "no ownership mark"},
	}
	for _, c := range cases {
		err := CheckDescription(me, "listener", "l-1", c.desc)
		if (c.reason == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.reason)) {
			t.Errorf("CheckDescription(%q) = %v, want reason %q", c.desc, err, c.reason)
		}
	}
}

func TestWithUserTags(t *testing.T) {
	got, err := WithUserTags(me, map[string]string{"team": "a", "cost": "b"}, "ann")
	if err != nil || got["team"] != "a" || !Is(me, got) {
		t.Fatalf("WithUserTags(plain) = %v, %v", got, err)
	}
	for _, forged := range []string{ServiceTag, ClusterTagPrefix + "prod", ServiceUIDTag, "Kubernetes.io/Cluster/prod", " kubernetes.io/x", "aws:cloudformation:stack", "AWS:x", "k8s.io/role", "ccm.k8s.io/fingerprint", "CCM.k8s.io/node-groups"} {
		_, err := WithUserTags(me, map[string]string{forged: "owned"}, "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags")
		if err == nil || !strings.Contains(err.Error(), "reserved") || !strings.Contains(err.Error(), "additional-resource-tags") {
			t.Errorf("user tag %q: %v, want a refusal naming the annotation", forged, err)
		}
	}
}

func TestAllow(t *testing.T) {
	a, err := ParseAllow(" infra, ops ,", "sg-1,lb-2")
	if err != nil {
		t.Fatal(err)
	}
	// Whether a Service may then use an object it names is common/reach.Named's decision.
	for _, c := range []struct {
		ns, obj string
		ok      bool
	}{{"infra", "sg-9", true}, {"shop", "sg-1", true}, {"shop", "sg-9", false}} {
		if got := a.Permits(c.ns, c.obj); got != c.ok {
			t.Errorf("Permits(%s, %s) = %v, want %v", c.ns, c.obj, got, c.ok)
		}
	}
	if _, err := ParseAllow("*", ""); err == nil {
		t.Errorf("ParseAllow(\"*\") accepted")
	}
}

func TestCheckClusterName(t *testing.T) {
	cases := []struct {
		name  string
		allow bool
		ok    bool
	}{
		{"prod-eu-1", false, true},
		{"kubernetes", false, false},
		{"kubernetes", true, true},
		{"CHANGE-ME", true, false},
		{"", true, false},
		{"a b", false, false},
		{"-x", false, false},
		{strings.Repeat("a", 64), false, false},
		{"naïve", false, false},
	}
	for _, c := range cases {
		if err := CheckClusterName(c.name, c.allow); (err == nil) != c.ok {
			t.Errorf("CheckClusterName(%q, %v) = %v, want ok=%v", c.name, c.allow, err, c.ok)
		}
	}
}

// A description of the cluster's shared object reads back as the cluster and the role only.
func TestClusterDescription(t *testing.T) {
	d := ClusterDescription("prod", "nlb-mtu")
	id, role, ok := ParseDescription(d)
	if d != "ccm:prod - - nlb-mtu" || !ok || id != (Identity{Cluster: "prod"}) || role != "nlb-mtu" {
		t.Errorf("ClusterDescription = %q, parsed %+v %q %v", d, id, role, ok)
	}
}
