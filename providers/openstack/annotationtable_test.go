package openstack

import (
	"os"
	"testing"
)

// Every annotation the provider reads has a reach (an annotation added without one fails
// here), and docs/security.md holds the table as generated from it.
func TestAnnotationTableDocumented(t *testing.T) {
	if err := annotations.Documented("../../docs/security.md", "openstack", os.Getenv("UPDATE_DOCS") != ""); err != nil {
		t.Fatal(err)
	}
}
