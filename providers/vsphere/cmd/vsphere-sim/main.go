// Command vsphere-sim serves a simulated vCenter (govmomi's vcsim) on 127.0.0.1 for the demo:
// one powered-on VM per node name (VM name and guest hostname = node name), zone and region
// tags, and a cloud-config for the ccm with an address pool for LoadBalancer Services. It
// writes the cloud-config once it serves and runs until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

func main() {
	nodes := flag.String("nodes", "", "comma-separated node names; one VM each")
	cfgPath := flag.String("cloud-config", "", "where to write the ccm's vsphere.conf")
	control := flag.String("control-file", "", "when set, serve the fault harness's control protocol (common/simcontrol) and write its URL here")
	flag.Parse()
	if err := run(strings.Split(*nodes, ","), *cfgPath, *control); err != nil {
		fmt.Fprintln(os.Stderr, "vsphere-sim:", err)
		os.Exit(1)
	}
}

func run(nodes []string, cfgPath, controlFile string) error {
	if cfgPath == "" {
		return fmt.Errorf("--cloud-config is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	const user, password = "demo@vsphere.local", "demo-password"
	s, err := sim.Start(ctx, sim.Options{User: user, Password: password, ZoneCategory: "k8s-zone", RegionCategory: "k8s-region"})
	if err != nil {
		return err
	}
	defer s.Close()
	for i, n := range nodes {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		vm, err := s.AddVM(ctx, n, 0, 0, []sim.NIC{{Network: "VM Network", IPs: []string{fmt.Sprintf("10.0.0.%d", i+11)}}})
		if err != nil {
			return err
		}
		fmt.Printf("VM %s uuid %s ip 10.0.0.%d\n", n, vm.UUID, i+11)
	}
	if controlFile != "" {
		// Written before the cloud-config, so a harness that waits for the cloud-config finds both.
		url, stopControl, err := simcontrol.Serve(s, controlFile)
		if err != nil {
			return fmt.Errorf("--control-file: %w", err)
		}
		defer stopControl()
		fmt.Printf("control at %s\n", url)
	}
	cfg := fmt.Sprintf(`# Written by vsphere-sim for the demo.
[Global]
server = %s
port = %s
user = %q
password = %q
insecure-flag = 1
datacenters = DC0

[Labels]
zone = k8s-zone
region = k8s-region

[Pool "sim"]
cidr = 10.200.0.0/20
`, s.Host(), s.Port(), user, password)
	if err := simcontrol.WriteFileAtomic(cfgPath, cfg); err != nil {
		return err
	}
	fmt.Printf("vcsim serving at %s; cloud-config in %s\n", s.Server.URL.Host, cfgPath)
	<-ctx.Done()
	return nil
}
