package main

import (
	"fmt"
	"strings"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// options are the controller's, as ccm's flags set them.
func options(s settings) servicecontroller.Options {
	return servicecontroller.Options{ClusterName: "scale", Classes: servicecontroller.DefaultClasses(), Recorder: discard(),
		NodeSyncDelay: s.nodeDelay}
}

func report(s settings, f *figures, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Service controller at %d load balancers\n\n", s.services)
	fmt.Fprintf(&b, "`%s`: dummy provider in process, store latency %v per call, %d workers, drift resync every %v, Node sync delay %v.\n\n",
		command, s.latency, s.workers, s.resync, s.nodeDelay)
	fmt.Fprintf(&b, "| figure | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| %d Services served (setup, no latency) | %.1f s |\n", s.services, f.setupS)
	fmt.Fprintf(&b, "| new Service created during the resync → address, p50 | %.2f s |\n", benchreport.Percentile(f.newTimes, 0.5))
	fmt.Fprintf(&b, "| new Service → address, p99 (of %d) | %.2f s |\n", len(f.newTimes), benchreport.Percentile(f.newTimes, 0.99))
	fmt.Fprintf(&b, "| resync reads made meanwhile | %d |\n", f.resyncChecks)
	total, most := 0, 0
	for _, w := range f.burstWrites {
		total += w
		most = max(most, w)
	}
	per := 0.0
	if len(f.burstWrites) > 0 {
		per = float64(total) / float64(len(f.burstWrites))
	}
	fmt.Fprintf(&b, "| %d Nodes at once: updates per load balancer, mean / max (%d LBs) | %.2f / %d |\n", s.burst, f.burstLBs, per, most)
	fmt.Fprintf(&b, "| %d Nodes at once: until the last update | %.1f s |\n", s.burst, f.burstS)
	return b.String()
}
