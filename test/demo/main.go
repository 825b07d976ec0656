// Command demo is `make demo`: a local control plane (etcd + kube-apiserver), the ccm running
// as its own ServiceAccount, sample Nodes registered as a kubelet would and LoadBalancer
// Services, then a table of what the ccm did. No cloud, no Docker.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

func main() {
	provider := flag.String("provider", "dummy", "provider to run (its simulator is started too)")
	flag.Parse()
	if err := run(*provider, os.Getenv("DEMO_ONCE") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(provider string, once bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}

	step("starting etcd and kube-apiserver on loopback")
	t0 := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	fmt.Printf("   ready in %v at %s\n", time.Since(t0).Round(time.Millisecond), env.Host)

	step(fmt.Sprintf("applying deploy/%s (the ccm's ServiceAccount and RBAC)", provider))
	if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", provider)); err != nil {
		return err
	}

	nodes := []string{"demo-node-1", "demo-node-2", "demo-node-3"}
	cloudConfig := filepath.Join(root, "test", "demo", "dummy.conf")
	if provider != "dummy" {
		step(fmt.Sprintf("starting the %s simulator on loopback with one machine per Node", provider))
		if cloudConfig, _, err = env.StartSimulator(ctx, root, provider, nodes); err != nil {
			return err
		}
		fmt.Printf("   cloud-config: %s\n", cloudConfig)
	}

	step(fmt.Sprintf("starting ccm --cloud-provider=%s as system:serviceaccount:kube-system:cloud-controller-manager", provider))
	ccm, err := env.StartCCM(ctx, testenv.CCMOptions{Provider: provider, CloudConfig: cloudConfig})
	if err != nil {
		return err
	}
	fmt.Printf("   log: %s\n", ccm.LogPath)

	step("registering 3 Nodes (with the uninitialized taint, as kubelet --cloud-provider=external does)")
	for _, n := range nodes {
		if err := testenv.RegisterNode(ctx, env.Client, n); err != nil {
			return err
		}
	}
	step("creating 3 Services of type LoadBalancer")
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	services := []*v1.Service{
		service("default", "web", 80, ""),
		service("default", "api", 443, requestedIP(provider)),
		service("team-a", "shop", 8080, ""),
	}
	for _, s := range services {
		if _, err := env.Client.CoreV1().Services(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	step("waiting for the ccm")
	if err := waitDone(ctx, env, nodes, services, ccm); err != nil {
		return err
	}
	if err := printTables(ctx, env); err != nil {
		return err
	}
	fmt.Printf("\nExplore:\n  %s --kubeconfig=%s get nodes,services -A -o wide\n", filepath.Join(env.Bin, "kubectl"), env.KubeconfigPath)
	fmt.Printf("  ccm log: %s\n", ccm.LogPath)
	if once {
		fmt.Println("\nDEMO_ONCE is set: stopping.")
		return nil
	}
	fmt.Println("\nThe control plane and ccm keep running. Press Ctrl-C to stop and clean up.")
	select {
	case <-ctx.Done():
	case <-ccm.Done():
		return fmt.Errorf("ccm exited; log: %s", ccm.LogPath)
	}
	fmt.Println("\nstopping")
	return nil
}

// requestedIP is the spec.loadBalancerIP of the demo's "api" Service: an address of the
// dummy's pool; other clouds choose their own.
func requestedIP(provider string) string {
	if provider == "dummy" {
		return "192.0.2.9"
	}
	return ""
}

func step(s string) { fmt.Printf("==> %s\n", s) }

func service(ns, name string, port int32, ip string) *v1.Service {
	s := testenv.LoadBalancerService(ns, name, port)
	s.Spec.LoadBalancerIP = ip
	return s
}

func waitDone(ctx context.Context, env *testenv.Env, nodes []string, services []*v1.Service, ccm *testenv.CCM) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		pending := 0
		for _, n := range nodes {
			node, err := env.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || node.Spec.ProviderID == "" {
				pending++
			}
		}
		for _, s := range services {
			svc, err := env.Client.CoreV1().Services(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if ccm.Exited() {
			return fmt.Errorf("ccm exited; last lines of %s:\n%s", ccm.LogPath, ccm.Tail(20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Nodes/Services still not done after 60s; ccm log: %s", pending, ccm.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func printTables(ctx context.Context, env *testenv.Env) error {
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tPROVIDER-ID\tREGION\tZONE\tTYPE\tADDRESSES")
	for _, n := range nodes.Items {
		var addrs []string
		for _, a := range n.Status.Addresses {
			addrs = append(addrs, fmt.Sprintf("%s=%s", a.Type, a.Address))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Spec.ProviderID, n.Labels[v1.LabelTopologyRegion],
			n.Labels[v1.LabelTopologyZone], n.Labels[v1.LabelInstanceTypeStable], strings.Join(addrs, " "))
	}
	w.Flush()
	svcs, err := env.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Println()
	fmt.Fprintln(w, "NAMESPACE\tSERVICE\tPORTS\tEXTERNAL-IP")
	for _, s := range svcs.Items {
		if s.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		var ips, ports []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else {
				ips = append(ips, in.Hostname)
			}
		}
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.Namespace, s.Name, strings.Join(ports, ","), strings.Join(ips, ","))
	}
	return w.Flush()
}
