package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ccm-project/ccm/common/poolconvert"
)

// newConvertCommand is "ccm convert kube-vip-cloud-provider|metallb -f FILE": the source's
// pools as [Pool] sections, for the dummy and vSphere providers' cloud-config.
func newConvertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert kube-vip-cloud-provider|metallb -f FILE",
		Short: "Print the [Pool] sections equivalent to kube-vip-cloud-provider's or MetalLB's pools",
		Long: `convert reads the address pools of kube-vip-cloud-provider (its kubevip ConfigMap) or of
MetalLB (its IPAddressPool objects) from a YAML or JSON file ("-" for standard input), as kubectl
prints them, and prints the equivalent [Pool] sections: the same addresses, handed out as the
source hands them out (a CIDR's first and last address, the order, .0 and .255, auto-assign), so
that the Services it served keep their addresses. What ccm has no equivalent for is printed as a
NOTE comment. Check the result with ccm check-config.

  kubectl -n kube-system get configmap kubevip -o yaml | ccm convert kube-vip-cloud-provider -f -
  kubectl -n metallb-system get ipaddresspools -o yaml | ccm convert metallb -f -`,
	}
	for _, src := range []struct{ name, title string }{{"kube-vip-cloud-provider", "kube-vip-cloud-provider's kubevip ConfigMap"}, {"metallb", "MetalLB's IPAddressPools"}} {
		var file string
		sub := &cobra.Command{
			Use:   src.name + " -f FILE",
			Short: "Convert " + src.title,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return convert(cmd.OutOrStdout(), cmd.InOrStdin(), src.name, file)
			},
		}
		sub.Flags().StringVarP(&file, "filename", "f", "", `The YAML or JSON file to read ("-": standard input).`)
		_ = sub.MarkFlagRequired("filename")
		ownHelp(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// convert reads file (or stdin for "-") as source's objects and prints the pools.
func convert(out io.Writer, stdin io.Reader, source, file string) error {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	var r poolconvert.Result
	var err error
	switch source {
	case "kube-vip-cloud-provider":
		var data map[string]string
		if data, err = poolconvert.ReadKubeVIP(in); err == nil {
			r, err = poolconvert.FromKubeVIP(data)
		}
	case "metallb":
		var pools []poolconvert.IPAddressPool
		if pools, err = poolconvert.ReadMetalLB(in); err == nil {
			r, err = poolconvert.FromMetalLB(pools)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	_, err = io.WriteString(out, poolconvert.Render(r, source))
	return err
}
