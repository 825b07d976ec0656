package sourceranges

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(spec []string, ann *string) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: v1.ServiceSpec{LoadBalancerSourceRanges: spec}}
	if ann != nil {
		s.Annotations = map[string]string{Annotation: *ann}
	}
	return s
}

func ptr(s string) *string { return &s }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     []string
		ann      *string
		want     []string
		from     string
		errParts []string
	}{
		{name: "neither: not restricted"},
		{name: "empty annotation: not restricted", ann: ptr("  ")},
		{name: "spec field", spec: []string{"10.0.0.0/8", "192.168.1.0/24"}, want: []string{"10.0.0.0/8", "192.168.1.0/24"}, from: Field},
		{name: "spec field wins over the annotation", spec: []string{"10.0.0.0/8"}, ann: ptr("192.0.2.0/24"), want: []string{"10.0.0.0/8"}, from: Field},
		{name: "annotation alone", ann: ptr("192.0.2.0/24,198.51.100.0/24"), want: []string{"192.0.2.0/24", "198.51.100.0/24"}, from: Annotation},
		{name: "annotation with spaces", ann: ptr(" 192.0.2.0/24 , 2001:db8::/32 "), want: []string{"192.0.2.0/24", "2001:db8::/32"}, from: Annotation},
		{name: "host bits are masked, duplicates dropped", ann: ptr("192.0.2.7/24,192.0.2.0/24"), want: []string{"192.0.2.0/24"}, from: Annotation},
		{name: "leading zeros as upstream parses them", ann: ptr("010.000.000.000/8"), want: []string{"10.0.0.0/8"}, from: Annotation},
		{name: "spec with spaces", spec: []string{" 10.0.0.0/8"}, want: []string{"10.0.0.0/8"}, from: Field},
		{name: "open to all IPv4 stays as written", ann: ptr("0.0.0.0/0"), want: []string{"0.0.0.0/0"}, from: Annotation},
		{name: "bad spec item", spec: []string{"10.0.0.0/8", "ten"}, errParts: []string{"spec.loadBalancerSourceRanges[1]", `"ten"`}},
		{name: "bad annotation item", ann: ptr("192.0.2.0/24,nope"), errParts: []string{Annotation, "item 2", `"nope"`}},
		{name: "empty annotation item", ann: ptr("192.0.2.0/24,"), errParts: []string{Annotation, "item 2"}},
		{name: "an address is not a range", ann: ptr("192.0.2.1"), errParts: []string{Annotation, "item 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(svc(tc.spec, tc.ann))
			if len(tc.errParts) > 0 {
				if err == nil {
					t.Fatalf("Of = %+v, want an error", got)
				}
				for _, p := range tc.errParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q does not name %s", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.CIDRs, tc.want) || got.From != tc.from {
				t.Errorf("Of = %+v, want CIDRs %v from %q", got, tc.want, tc.from)
			}
		})
	}
}

func TestUnenforced(t *testing.T) {
	ann, blank := "10.0.0.0/8, 192.168.0.0/16", " "
	for _, tc := range []struct {
		name string
		svc  *v1.Service
		want bool
	}{
		{"nothing set", svc(nil, nil), false},
		{"spec only: kube-proxy enforces it", svc([]string{"10.0.0.0/8"}, nil), false},
		{"spec and annotation: the spec wins, enforced", svc([]string{"10.0.0.0/8"}, &ann), false},
		{"annotation only: not enforced", svc(nil, &ann), true},
		{"blank annotation: no restriction asked", svc(nil, &blank), false},
	} {
		msg, got := Unenforced(tc.svc)
		if got != tc.want || got != (msg != "") {
			t.Errorf("%s: Unenforced = %q, %v; want advice %v", tc.name, msg, got, tc.want)
		}
		if got && (!strings.Contains(msg, Annotation) || !strings.Contains(msg, Field)) {
			t.Errorf("%s: %q should name the annotation and the field", tc.name, msg)
		}
	}
}

// A mapped range is read as the IPv4 range it is, a zone is refused, and the list is bounded,
// in the spec field and the annotation alike.
func TestRangesNormalisedAndBounded(t *testing.T) {
	svc := &v1.Service{Spec: v1.ServiceSpec{LoadBalancerSourceRanges: []string{"::ffff:0.0.0.0/96", "::ffff:10.0.0.0/104"}}}
	r, err := Of(svc)
	if err != nil || strings.Join(r.CIDRs, ",") != "0.0.0.0/0,10.0.0.0/8" {
		t.Errorf("mapped ranges: %v, %v", r.CIDRs, err)
	}
	svc = &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: "fe80::/64%eth0"}}}
	if _, err := Of(svc); err == nil || !strings.Contains(err.Error(), Annotation) {
		t.Errorf("a zone: %v", err)
	}
	many := strings.Repeat("10.0.0.0/8,", 300)
	svc = &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: many + "10.0.0.0/8"}}}
	if _, err := Of(svc); err == nil || !strings.Contains(err.Error(), "more than the 250") {
		t.Errorf("301 ranges: %v", err)
	}
}
