// Command openstack-sim serves the fake OpenStack (Keystone, Nova, Neutron, Octavia) on
// loopback with one server per node name, writes a cloud.conf for ccm pointing at it, and
// runs until SIGTERM or SIGINT. The demo and manual experiments use it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func main() {
	nodes := flag.String("nodes", "", "comma-separated node names; one server each")
	cloudConfig := flag.String("cloud-config", "", "where to write the cloud.conf for ccm")
	provision := flag.Duration("provision-delay", 2*time.Second, "how long a new load balancer stays PENDING_CREATE")
	update := flag.Duration("update-delay", 200*time.Millisecond, "how long a load balancer stays PENDING_UPDATE after a change")
	control := flag.String("control-file", "", "when set, serve the fault harness's control protocol (common/simcontrol) and write its URL here")
	flag.Parse()
	if err := run(*nodes, *cloudConfig, *control, *provision, *update); err != nil {
		fmt.Fprintln(os.Stderr, "openstack-sim:", err)
		os.Exit(1)
	}
}

func run(nodes, path, controlFile string, provision, update time.Duration) error {
	if path == "" {
		return fmt.Errorf("--cloud-config is required")
	}
	f := fake.New(fake.Options{ProvisionDelay: provision, UpdateDelay: update})
	for i, n := range strings.Split(nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			id := f.AddServer(fake.ServerSpec{Name: n, AZ: fmt.Sprintf("az-%d", i%2+1), Flavor: "m1.medium", IPs: []string{fmt.Sprintf("10.0.0.%d", 11+i)}})
			fmt.Printf("server %s: %s\n", n, id)
		}
	}
	if _, err := f.Start(); err != nil {
		return err
	}
	defer f.Close()
	if controlFile != "" {
		// Written before the cloud-config, so a harness that waits for the cloud-config finds both.
		url, stop, err := simcontrol.Serve(fake.Control(f), controlFile)
		if err != nil {
			return fmt.Errorf("--control-file: %w", err)
		}
		defer stop()
		fmt.Printf("control at %s\n", url)
	}
	if err := simcontrol.WriteFileAtomic(path, f.CloudConfig("floating-network-id = "+fake.PublicNetworkID, "create-monitor = true", "pending-retry = 1s")); err != nil {
		return err
	}
	fmt.Printf("serving Keystone at %s; cloud-config written to %s\n", f.AuthURL(), path)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("calls: %s\n", f.CallSummary())
	return nil
}
