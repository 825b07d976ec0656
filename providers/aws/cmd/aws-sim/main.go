// Command aws-sim serves the EC2/ELB fake on loopback for the demo: one running instance per
// --nodes name (private DNS name = node name), subnets tagged for load balancers, and writes a
// cloud-config for ccm-aws to --cloud-config once it serves. With --control-file it also serves
// the fault harness's control protocol (common/simcontrol) and writes that endpoint's URL to
// the file. It runs until SIGTERM or SIGINT.
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

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const (
	region  = "us-east-1"
	cluster = "demo"
)

func main() {
	nodes := flag.String("nodes", "", "comma-separated node names; one instance each")
	out := flag.String("cloud-config", "", "where to write the ccm's cloud-config")
	control := flag.String("control-file", "", "when set, serve the fault-control endpoint and write its URL to this file")
	nlbDelay := flag.Duration("nlb-provisioning", 0, "how long a new NLB stays provisioning before it is active")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "--cloud-config is required")
		os.Exit(2)
	}
	if *nlbDelay < 0 {
		fmt.Fprintln(os.Stderr, "--nlb-provisioning must not be negative")
		os.Exit(2)
	}
	if err := run(strings.Split(*nodes, ","), *out, *control, *nlbDelay); err != nil {
		fmt.Fprintln(os.Stderr, "aws-sim:", err)
		os.Exit(1)
	}
}

// secretKey is the test secret access key written for the ccm; the harness checks it never
// shows in a log. (The access key ID is not a secret.)
const secretKey = "simulator-secret"

func run(nodes []string, out, controlFile string, nlbDelay time.Duration) error {
	f := fakeaws.New(region, cluster)
	f.AddCredentials("AKIDSIMULATOR", secretKey)
	f.SetNLBProvisioning(nlbDelay)
	for i, n := range nodes {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		id := f.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: region + string(rune('a'+i%3)), PrivateDNS: n,
			PublicIP: fmt.Sprintf("203.0.113.%d", i+10),
			ENIs:     []fakeaws.ENI{{Device: 0, PrivateIPs: []string{fmt.Sprintf("10.0.%d.%d", i%3, i+10)}}}})
		fmt.Printf("instance %s for node %s\n", id, n)
	}
	url, err := f.Start()
	if err != nil {
		return err
	}
	defer f.Close()
	creds := out + ".credentials"
	// Test credentials for the fake; a real cluster uses the SDK's default chain instead.
	if err := simcontrol.WriteFileAtomic(creds, "[default]\naws_access_key_id = AKIDSIMULATOR\naws_secret_access_key = "+secretKey+"\n"); err != nil {
		return err
	}
	if controlFile != "" {
		curl, stop, err := simcontrol.Serve(f.Control(secretKey), controlFile)
		if err != nil {
			return fmt.Errorf("serving the control endpoint: %w", err)
		}
		defer stop()
		fmt.Printf("control endpoint at %s\n", curl)
	}
	cfg := fmt.Sprintf("[Global]\nRegion = %s\nKubernetesClusterID = %s\nCredentialsFile = %s\n\n"+
		"[ServiceOverride \"ec2\"]\nService = ec2\nRegion = %s\nURL = %s\nSigningRegion = %s\n\n"+
		"[ServiceOverride \"elb\"]\nService = elasticloadbalancing\nRegion = %s\nURL = %s\nSigningRegion = %s\n",
		region, cluster, creds, region, url, region, region, url, region)
	if err := simcontrol.WriteFileAtomic(out, cfg); err != nil {
		return err
	}
	fmt.Printf("EC2/ELB fake serving at %s; cloud-config in %s\n", url, out)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Printf("calls per operation: %v\n", f.Calls())
	return nil
}
