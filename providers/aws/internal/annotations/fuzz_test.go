package annotations

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

// Fuzz targets for every parser of tenant input (Service annotations and spec fields).

// Any single annotation of this provider: no panic; an error names that annotation (or, for
// the ports a classic ELB cannot serve, the port); what is accepted is within AWS's limits.
func FuzzParseOptions(f *testing.F) {
	for _, seed := range [][2]string{
		{Type, "nlb"}, {Internal, "true"}, {Subnets, "subnet-1, name"}, {SecurityGroup, "sg-1,sg-2"},
		{SSLCert, "arn:aws:acm:us-east-1:1:certificate/x"}, {SSLPorts, "443,https"}, {Backend, "HTTP"},
		{CrossZone, "false"}, {ExtraTags, "a=b,kubernetes.io/cluster/x=owned"}, {NodeLabels, "a in (b)"},
		{HCHealthy, "3"}, {HCUnhealthy, "11"}, {HCTimeout, "4"}, {HCInterval, "5"}, {ProxyProtocol, "*"},
		{"connection-idle-timeout", "60"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, suffix, value string) {
		svc := svcWith(map[string]string{Prefix + suffix: value})
		o, err := Parse(svc)
		if err != nil {
			if !strings.Contains(err.Error(), Prefix+suffix) && !strings.Contains(err.Error(), "port ") {
				t.Fatalf("%s=%q: the error does not name the annotation: %v", suffix, value, err)
			}
			return
		}
		if !slices.Contains(Supported, suffix) && !slices.ContainsFunc(o.Advice, func(a string) bool { return strings.Contains(a, Prefix+suffix) }) {
			t.Fatalf("unknown annotation %q accepted without a Warning naming it", suffix)
		}
		for k := range o.ExtraTags {
			if ReservedTag(k) || k == "" {
				t.Fatalf("%q: reserved or empty tag key %q accepted", value, k)
			}
		}
		for _, g := range o.SecurityGroups {
			if !SecurityGroupIDRE.MatchString(g) {
				t.Fatalf("%q: security group %q accepted", value, g)
			}
		}
		if suffix == Subnets && len(o.Subnets) == 0 {
			t.Fatalf("%q: no subnet, accepted", value)
		}
		if h := o.HC; h.Timeout >= h.Interval || h.Healthy < 2 || h.Unhealthy < 2 || h.Healthy > 10 || h.Interval > 300 {
			t.Fatalf("%q: health check %+v accepted", value, h)
		}
	})
}

// additional-resource-tags: accepted tags round-trip through their text form, never hold a
// reserved key, and fit AWS's lengths; a refusal names the annotation.
func FuzzExtraTags(f *testing.F) {
	for _, s := range []string{"a=b", "team=a, cost=b", "k", "=v", "kubernetes.io/cluster/x=owned", "Aws:x=1", " ccm.k8s.io/fingerprint = 0", "a=b=c,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tags, err := parseExtraTags(v)
		if err != nil {
			if !strings.Contains(err.Error(), Prefix+ExtraTags) {
				t.Fatalf("%q: the error does not name the annotation: %v", v, err)
			}
			return
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			if ReservedTag(k) || k == "" || len(k) > 128 || len(tags[k]) > 256 {
				t.Fatalf("%q: tag %q=%q accepted", v, k, tags[k])
			}
			if strings.ContainsAny(k, ",=") || strings.Contains(tags[k], ",") {
				t.Fatalf("%q: tag %q=%q cannot have come from the list", v, k, tags[k])
			}
			parts = append(parts, k+"="+tags[k])
		}
		// As upstream, each item is trimmed: a value's trailing white space cannot be written
		// in the list (k=v  reads as v), so the round trip keeps the rest of it.
		want := map[string]string{}
		for k, val := range tags {
			want[k] = strings.TrimRightFunc(val, unicode.IsSpace)
		}
		again, err := parseExtraTags(strings.Join(parts, ","))
		if err != nil || !maps.Equal(again, want) {
			t.Fatalf("%q: round trip %v -> %v, %v", v, tags, again, err)
		}
	})
}

// Source ranges (spec field or the core annotation): accepted ranges are canonical prefixes
// (parsing them again gives the same), sorted and unique; a refusal names the field.
func FuzzSourceRanges(f *testing.F) {
	for _, s := range []string{"192.0.2.0/24", "2001:db8::/32, 10.0.0.1/8", "", "1.2.3.4", "::/0", "10.0.0.0/33", "0.0.0.0/0,0.0.0.0/0"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, v string, spec bool) {
		svc := &v1.Service{}
		field := SourceRanges
		if spec {
			svc.Spec.LoadBalancerSourceRanges = strings.Split(v, ",")
			field = "spec.loadBalancerSourceRanges"
		} else {
			svc.Annotations = map[string]string{SourceRanges: v}
		}
		got, err := parseSourceRanges(svc)
		if err != nil {
			if !strings.Contains(err.Error(), field) {
				t.Fatalf("%q: the error does not name %s: %v", v, field, err)
			}
			return
		}
		if len(got) == 0 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%q: %v is empty, unsorted or has duplicates", v, got)
		}
		for _, r := range got {
			p, err := netip.ParsePrefix(r)
			if err != nil || p.Masked().String() != r {
				t.Fatalf("%q: %q is not a canonical prefix", v, r)
			}
			if sgrules.IsIPv6(r) == p.Addr().Is4() {
				t.Fatalf("%q: %q would go to the wrong rule family", v, r)
			}
		}
	})
}

// The list annotations a tenant writes (security-groups, subnets, ssl-ports): whatever parses
// is a list of non-empty, trimmed items (ssl-ports: upstream's items as written, which join
// back to the value); a refusal names the annotation.
func FuzzLists(f *testing.F) {
	for _, s := range []string{"sg-1", "sg-1, sg-2", ",", "sg-", "subnet-1,public-a", " a , b ", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, suffix := range []string{SecurityGroup, Subnets, SSLPorts} {
			ann := map[string]string{Prefix + suffix: v}
			if suffix == SSLPorts {
				ann[Prefix+SSLCert] = "arn:aws:acm:us-east-1:1:certificate/x"
			}
			o, err := Parse(svcWith(ann))
			if err != nil {
				if !strings.Contains(err.Error(), Prefix+suffix) {
					t.Fatalf("%s=%q: the error does not name the annotation: %v", suffix, v, err)
				}
				continue
			}
			if suffix == SSLPorts && v != "" && strings.Join(o.SSLPorts, ",") != v {
				t.Fatalf("%s=%q: items %q are not the value's", suffix, v, o.SSLPorts)
			}
			for _, item := range append(slices.Clone(o.SecurityGroups), o.Subnets...) {
				if item == "" || item != strings.TrimSpace(item) || strings.Contains(item, ",") {
					t.Fatalf("%s=%q: item %q", suffix, v, item)
				}
			}
		}
	})
}
