package app

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ccm-project/ccm/common/config"
	"github.com/ccm-project/ccm/common/provider"
)

func newCheckConfigCommand() *cobra.Command {
	var name, path, clusterName string
	var allowDefault, offline bool
	cmd := &cobra.Command{
		Use:   "check-config --cloud-provider=NAME [--cloud-config=FILE]",
		Short: "Validate a cloud-config offline with the provider's own rules",
		Long: `check-config reads the cloud-config the way the provider does at start-up, without
contacting the cloud, and prints OK or every problem with its line. Exit code 0 or 1.
With --cluster-name it also checks the name the way ccm does at start-up: providers that mark
what they own with it (openstack, vsphere, dummy) refuse the default "kubernetes" unless
--allow-default-cluster-name is given, and every provider refuses the manifests' placeholder.
With --offline the files the config names (a CA bundle, an inventory) are listed, not read: for
checking on a machine other than the cluster's nodes.`,
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			config.SetOffline(offline)
			if code := checkConfig(cmd.OutOrStdout(), cmd.ErrOrStderr(), name, path, clusterName, allowDefault); code != 0 {
				os.Exit(code)
			}
		},
	}
	cmd.Flags().StringVar(&name, "cloud-provider", "", "The provider whose rules apply.")
	cmd.Flags().StringVar(&path, "cloud-config", "", "The cloud-config file to check.")
	cmd.Flags().StringVar(&clusterName, "cluster-name", "", "The --cluster-name the ccm will run with (checked when set).")
	cmd.Flags().BoolVar(&allowDefault, "allow-default-cluster-name", false, "As the ccm flag of that name.")
	cmd.Flags().BoolVar(&offline, "offline", false, "List the files the config names instead of reading them.")
	return cmd
}

// checkConfig prints OK or the problems and returns the exit code. clusterName "" skips the
// cluster name check.
func checkConfig(out, errOut io.Writer, name, path, clusterName string, allowDefault bool) int {
	if clusterName == "" {
		if err := provider.CheckConfig(name, path); err != nil {
			fmt.Fprintln(errOut, err)
			return 1
		}
	} else {
		// Factories read config only (no network I/O), so building the cloud is offline too;
		// it is built once, so its start-up report is printed once.
		c, err := provider.CheckConfigAndNew(name, path)
		if err != nil {
			fmt.Fprintln(errOut, err)
			return 1
		}
		note, err := clusterNameReport(c, clusterName, allowDefault)
		if err != nil {
			fmt.Fprintln(errOut, err)
			return 1
		}
		if note != "" {
			fmt.Fprintln(out, note)
		}
	}
	for _, f := range config.NotChecked() {
		fmt.Fprintf(out, "not checked (--offline): %s\n", f)
	}
	fmt.Fprintln(out, "OK")
	return 0
}

// ownHelp makes a subcommand's --help and usage show its own flags. The library installs a help
// function on the root that prints every controller-manager flag section, and subcommands
// inherit it: `ccm gc --help` printed 140 lines of flags gc does not take.
func ownHelp(cmd *cobra.Command) {
	usage := func(c *cobra.Command) string {
		return fmt.Sprintf("Usage:\n  %s\n\nFlags:\n%s", c.UseLine(), c.LocalFlags().FlagUsages())
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		fmt.Fprint(c.OutOrStderr(), usage(c))
		return nil
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		text := c.Long
		if text == "" {
			text = c.Short
		}
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s", strings.TrimSpace(text), usage(c))
	})
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
