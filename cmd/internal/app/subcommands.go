package app

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-project/ccm/common/provider"
)

func newCheckConfigCommand() *cobra.Command {
	var name, path string
	cmd := &cobra.Command{
		Use:   "check-config --cloud-provider=NAME [--cloud-config=FILE]",
		Short: "Validate a cloud-config offline with the provider's own rules",
		Long: `check-config reads the cloud-config the way the provider does at start-up, without
contacting the cloud, and prints OK or every problem with its line. Exit code 0 or 1.`,
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			if code := checkConfig(cmd.OutOrStdout(), cmd.ErrOrStderr(), name, path); code != 0 {
				os.Exit(code)
			}
		},
	}
	cmd.Flags().StringVar(&name, "cloud-provider", "", "The provider whose rules apply.")
	cmd.Flags().StringVar(&path, "cloud-config", "", "The cloud-config file to check.")
	return cmd
}

// checkConfig prints OK or the problems and returns the exit code.
func checkConfig(out, errOut io.Writer, name, path string) int {
	if err := provider.CheckConfig(name, path); err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	fmt.Fprintln(out, "OK")
	return 0
}

func newProvidersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "providers",
		Short: "List the providers compiled into this binary, one a line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := provider.Names()
			if len(names) == 0 {
				return fmt.Errorf("%s", provider.Describe())
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.Join(names, "\n"))
			return nil
		},
	}
}
