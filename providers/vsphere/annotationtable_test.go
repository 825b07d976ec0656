package vsphere

import (
	"os"
	"testing"

	"github.com/ccm-project/ccm/common/reach"
)

// Every annotation the provider reads has a reach (an annotation added without one fails
// here), and docs/security.md holds the table as generated from it.
func TestAnnotationTableDocumented(t *testing.T) {
	if err := annotations.Validate(); err != nil {
		t.Fatal(err)
	}
	const path = "../../docs/security.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, same, err := reach.Embed(string(data), "vsphere", annotations.Markdown())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !same {
		if os.Getenv("UPDATE_DOCS") != "" {
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the annotation table of %s is out of date; run UPDATE_DOCS=1 go test -run TestAnnotationTableDocumented .", path)
	}
}
