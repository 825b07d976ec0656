package app

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	ccmversion "github.com/ccm-project/ccm/common/version"
)

// versionRequested answers --version (the library's flag: true or raw) with ccm's own
// version, not the Kubernetes libraries' alone, and reports whether it did (the caller exits).
func versionRequested(cmd *cobra.Command, out io.Writer) bool {
	f := cmd.Flags().Lookup("version")
	if f == nil {
		return false
	}
	switch f.Value.String() {
	case "true":
		fmt.Fprintln(out, ccmversion.Get())
		return true
	case "raw":
		b, _ := json.MarshalIndent(ccmversion.Get(), "", "  ")
		fmt.Fprintln(out, string(b))
		return true
	}
	return false
}
