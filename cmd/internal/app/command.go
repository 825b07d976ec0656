// Package app builds the ccm command on k8s.io/cloud-provider's controller manager.
package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/version"
	"k8s.io/controller-manager/pkg/leadermigration"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/cmd/internal/leader"
	"github.com/ccm-project/ccm/common/nodeguard"
	"github.com/ccm-project/ccm/common/poollb"
	"github.com/ccm-project/ccm/common/provider"
	ccmversion "github.com/ccm-project/ccm/common/version"
)

// Defaults that differ from the library's, chosen so that a burst of new Nodes or Services is
// not throttled by the CCM itself: the library's 20 QPS and one worker per controller cap node
// initialisation at about 6 Nodes/s. All stay overridable by their flags.
const (
	DefaultKubeAPIQPS             = 200
	DefaultKubeAPIBurst           = 400
	DefaultConcurrentServiceSyncs = 10
	DefaultConcurrentNodeSyncs    = 10
	// DefaultNodeDeletionConfirmation is how long the cloud must keep saying "not found"
	// before a NotReady Node is deleted (0: at once, as upstream).
	DefaultNodeDeletionConfirmation = 2 * time.Minute
	// ProviderStopTimeout bounds the wait for a provider's work after stop (vsphere bounds its
	// logouts at 5 s), well inside a Pod's default 30 s termination grace period.
	ProviderStopTimeout = 10 * time.Second
)

// SignalStop returns a channel closed on SIGTERM or SIGINT.
func SignalStop() <-chan struct{} {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		close(stop)
		<-sig // a second signal exits at once
		os.Exit(1)
	}()
	return stop
}

// NewCommand returns the ccm root command with its subcommands.
func NewCommand(stop <-chan struct{}) *cobra.Command {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil { // only fails if the library's own defaults do not convert
		panic(err)
	}
	opts.Generic.ClientConnection.QPS = DefaultKubeAPIQPS
	opts.Generic.ClientConnection.Burst = DefaultKubeAPIBurst
	opts.ServiceController.ConcurrentServiceSyncs = DefaultConcurrentServiceSyncs
	opts.NodeController.ConcurrentNodeSyncs = DefaultConcurrentNodeSyncs

	// Copy the library's controller table: never change its package-level map.
	controllers := make(map[string]ccmapp.ControllerInitFuncConstructor, len(ccmapp.DefaultInitFuncConstructors))
	for name, c := range ccmapp.DefaultInitFuncConstructors {
		controllers[name] = c
	}

	var cloud cloudprovider.Interface
	var base cloudprovider.Interface // the provider itself, under ccm's wrappers
	var election *leader.Election    // ours, when leader election is on (see package leader)
	var flags *ccmFlagValues         // ccm's own flags, added below
	// The library's /healthz check of its election, for ours (a controller is its only hook).
	controllers[leader.HealthzController] = leader.HealthzInit(func() *leader.Election { return election })
	// The library calls initCloud with the completed config just before it runs: the one
	// place to adjust what it built (informers, leader election) without forking it.
	initCloud := func(c *ccmconfig.CompletedConfig) cloudprovider.Interface {
		// Logged here, not before the library runs: by now --logging-format is applied.
		klog.InfoS("Starting ccm", "version", ccmversion.Get().Version, "kubernetes", version.Get().GitVersion,
			"provider", cloud.ProviderName(), "cloudConfig", c.ComponentConfig.KubeCloudShared.CloudProvider.CloudConfigFile,
			"compiledIn", provider.Names())
		if !cloud.HasClusterID() && !c.ComponentConfig.KubeCloudShared.AllowUntaggedCloud {
			fmt.Fprintln(os.Stderr, "error: the cloud provider has no cluster ID and --allow-untagged-cloud is false")
			os.Exit(1)
		}
		slimInformers(c)
		watchConfig(c, base, *flags.reloadInterval, stop)
		if !c.ComponentConfig.Generic.LeaderElection.LeaderElect || leadermigration.Enabled(&c.ComponentConfig.Generic) {
			return cloud
		}
		tracked := leader.Track(cloud, c.ComponentConfig.Generic.LeaderElection.RenewDeadline.Duration)
		el, err := leader.Start(c, stop, tracked.Drain)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		election = el
		leader.EnableHealthz(c)
		return leader.Gate(tracked, el.Leading())
	}

	var extra cliflag.NamedFlagSets
	flags = addCCMFlags(extra.FlagSet("ccm"), controllers)

	// The library's aliases (cloud-node, cloud-node-lifecycle, service, route): the upstream CCMs'
	// charts and manifests name controllers by them in --controllers.
	cmd := ccmapp.NewCloudControllerManagerCommand(opts, initCloud, controllers, names.CCMControllerAliases(), extra, stop)
	cmd.Use = "ccm"
	cmd.Long = fmt.Sprintf(`ccm is a Kubernetes cloud-controller-manager for several clouds in one binary.
It initialises Nodes (providerID, addresses, zone, region, instance type), removes Nodes whose
machines are gone and provides Services of type LoadBalancer.

This binary: %s.
Pick one with --cloud-provider=NAME. Providers are compiled in with Go build tags:
  go build -tags dummy,aws,vsphere,openstack ./cmd/ccm
Subcommands: "ccm check-config" validates a cloud-config offline; "ccm providers" lists providers;
"ccm gc" lists the cluster's orphaned load balancers ("ccm gc --delete" deletes them);
"ccm convert" turns kube-vip-cloud-provider's or MetalLB's pools into [Pool] sections.`,
		provider.Describe())
	cmd.SilenceUsage = true // a bad flag value prints its error, not two screens of flags
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if versionRequested(cmd, os.Stdout) {
			os.Exit(0)
		}
		if err := validateConfigReloadInterval(*flags.reloadInterval); err != nil {
			return err
		}
		var err error
		base, cloud, err = prepareCloud(flags.start(opts))
		return err
	}
	// A graceful stop ends with the Lease released, so the standby takes over at once.
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if election != nil {
			election.WaitReleased(opts.Generic.LeaderElection.RenewDeadline.Duration + 5*time.Second)
		}
		// The provider's own work after stop (vsphere: logging out of every vCenter, as the
		// upstream CCM does once its Run returns); bounded, so a dead cloud cannot hold the exit.
		if base != nil && !provider.WaitStopped(base, ProviderStopTimeout) {
			klog.InfoS("The provider's shutdown did not finish in time; exiting anyway", "timeout", ProviderStopTimeout)
		}
		return err
	}
	for _, sub := range []*cobra.Command{newCheckConfigCommand(), newProvidersCommand(), newGCCommand(), newConvertCommand()} {
		ownHelp(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// ccmFlagValues are ccm's own flags (the "ccm" flag set), to be read once parsed.
type ccmFlagValues struct {
	deletionWindow   *time.Duration
	nodeLabels       *map[string]string
	userAgent        *[]string
	allowDefaultName *bool
	kubeVIP          *bool
	reloadInterval   *time.Duration // --cloud-config-reload-interval (livecfg.go)
	service          *serviceControllerOptions
}

// addCCMFlags adds ccm's own flags to fs.
func addCCMFlags(fs *pflag.FlagSet, controllers map[string]ccmapp.ControllerInitFuncConstructor) *ccmFlagValues {
	v := &ccmFlagValues{}
	v.deletionWindow = fs.Duration("node-deletion-confirmation", DefaultNodeDeletionConfirmation,
		"How long the cloud must keep reporting a NotReady Node's instance as not found before the Node is deleted. "+
			"Cloud errors never delete a Node. 0 deletes at the first not-found, as the upstream providers do.")
	v.nodeLabels = fs.StringToString("node-labels", nil,
		"Labels added to every Node when ccm initialises it, where the provider sets no label of that key "+
			"(key=value,key2=value2; as the upstream vSphere CCM's flag, for every provider). The environment variable "+
			"SKIP_NODE_DELETION, set to anything, keeps Nodes whose instance is not found (as upstream vSphere).")
	v.userAgent = fs.StringArray("user-agent", nil,
		"Extra text for the User-Agent header of cloud API calls, after ccm's own name; repeat for more (the upstream OpenStack "+
			"CCM's flag). Used by the openstack provider; the others accept it and ignore it.")
	v.allowDefaultName = fs.Bool("allow-default-cluster-name", false,
		"Allow --cluster-name to keep the default \"kubernetes\" for providers that mark what they own with it (openstack, vsphere, dummy). "+
			"Only for a cloud account, project or vCenter that no other cluster uses.")
	v.kubeVIP = fs.Bool("write-kube-vip-annotation", false,
		"Write the addresses a pool provider (dummy, vsphere) hands out into the Service's kube-vip.io/loadbalancerIPs annotation, "+
			"which kube-vip's services mode announces (it does not read the status), as kube-vip-cloud-provider does.")
	addMemoryOptions(fs)
	v.reloadInterval = addConfigReloadFlag(fs)
	v.service = addServiceControllerOptions(fs, controllers)
	return v
}

// start is what prepareCloud reads.
func (v *ccmFlagValues) start(opts *options.CloudControllerManagerOptions) startFlags {
	return startFlags{opts: opts, userAgent: *v.userAgent, allowDefaultName: *v.allowDefaultName, kubeVIP: *v.kubeVIP,
		service: v.service, deletionWindow: *v.deletionWindow, nodeLabels: *v.nodeLabels}
}

// startFlags are the flags prepareCloud reads, as parsed.
type startFlags struct {
	opts             *options.CloudControllerManagerOptions
	userAgent        []string
	allowDefaultName bool
	kubeVIP          bool
	service          *serviceControllerOptions
	deletionWindow   time.Duration
	nodeLabels       map[string]string
}

// prepareCloud builds the provider's cloud before the library runs, so that a bad
// --cloud-provider, --cloud-config or flag is a clear error and exit code 1, not a klog.Fatal
// in the library; it returns the provider's cloud and the one the library runs (guarded).
func prepareCloud(f startFlags) (base, wrapped cloudprovider.Interface, _ error) {
	ccmversion.RegisterMetric()
	shared := f.opts.KubeCloudShared
	name, path := shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile
	provider.SetUserAgent(f.userAgent)
	poollb.SetWriteKubeVIPAnnotation(f.kubeVIP)
	c, err := provider.New(name, path)
	if err != nil {
		return nil, nil, err
	}
	if err := provider.Prepare(context.Background(), name, c); err != nil {
		return nil, nil, err
	}
	if err := applyClusterName(c, shared.ClusterName, f.allowDefaultName); err != nil {
		return nil, nil, err
	}
	if err := applyClusterCIDRs(c, shared.ClusterCIDR); err != nil {
		return nil, nil, err
	}
	if err := f.service.validate(); err != nil {
		return nil, nil, err
	}
	f.service.useCloud(c)
	if f.deletionWindow < 0 {
		return nil, nil, fmt.Errorf("--node-deletion-confirmation must not be negative, got %v", f.deletionWindow)
	}
	// The library would fail on this only after winning the leader election, with a
	// message about CIDR parsing; say what to change before anything starts.
	if _, ok := c.Routes(); ok && shared.ConfigureCloudRoutes && routeControllerOn(f.opts.Generic.Controllers) && shared.ClusterCIDR == "" {
		return nil, nil, fmt.Errorf("provider %q manages routes and --configure-cloud-routes is on (the default), but --cluster-cidr is empty: "+
			"set --cluster-cidr to the Pods' CIDR, or --configure-cloud-routes=false if the network (e.g. a CNI) routes Pods itself", name)
	}
	settings, err := nodeSettings(f.deletionWindow, f.nodeLabels, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	return c, nodeguard.WrapWith(c, settings), nil
}
