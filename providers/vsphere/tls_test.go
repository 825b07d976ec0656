package vsphere

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmware/govmomi/vim25/soap"
)

// With insecure-flag off, vCenter's certificate must be trusted through ca-file or pinned
// with thumbprint; an untrusted one is an error (never "instance gone").
func TestServerCertificateVerification(t *testing.T) {
	s := startSim(t)
	caFile, err := s.Server.CertificateFile()
	if err != nil {
		t.Fatal(err)
	}
	secure := func(extra string) string {
		return strings.Replace(testConfig(s, ""), "insecure-flag = 1", "insecure-flag = 0\n"+extra, 1)
	}
	for _, tt := range []struct {
		name, extra string
		trusted     bool
	}{
		{"no ca-file, no thumbprint", "", false},
		{"ca-file", "ca-file = " + caFile, true},
		{"thumbprint", "thumbprint = " + soap.ThumbprintSHA1(s.Server.Certificate()), true},
		{"wrong thumbprint", "thumbprint = " + strings.Repeat("AB:", 19) + "AB", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(strings.NewReader(secure(tt.extra)))
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := c.InstancesV2()
			exists, err := inst.InstanceExists(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-a-vm"}})
			if tt.trusted && (err != nil || exists) {
				t.Fatalf("trusted server: exists=%v err=%v, want false, nil", exists, err)
			}
			if !tt.trusted && err == nil {
				t.Fatalf("untrusted server answered (exists=%v): the certificate was not verified", exists)
			}
		})
	}
}
