package app

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/servicecontroller"
)

// Which service controller runs under the library's name in the controller table: ccm's own
// (common/servicecontroller) or the library's. The hidden --service-controller flag keeps the
// library's within reach for the integration test that compares the two.
const (
	serviceControllerOwn     = "ccm"
	serviceControllerLibrary = "library"
	defaultServiceController = serviceControllerOwn
)

type serviceControllerOptions struct {
	classes   []string
	unclassed bool
	impl      string
	orphans   servicecontroller.OrphanOptions
	resync    time.Duration // drift resync period (servicecontroller.RunDriftResync)
	nodeDelay time.Duration // quiet period of Node changes (servicecontroller.Options.NodeSyncDelay)
	// lister is the provider's orphan listing, taken from the cloud before ccm wraps it (the
	// wrappers hide every method beyond cloudprovider.Interface); nil when it has none.
	lister servicecontroller.OwnedLister
}

// useCloud remembers the provider's OwnedLister, if it implements one.
func (o *serviceControllerOptions) useCloud(c cloudprovider.Interface) {
	o.lister, _ = c.(servicecontroller.OwnedLister)
}

// addServiceControllerOptions registers the service controller's flags on fs and puts the
// controller they select in the table, under the library's name and with its client name
// (the RBAC is granted to it).
func addServiceControllerOptions(fs *pflag.FlagSet, controllers map[string]ccmapp.ControllerInitFuncConstructor) *serviceControllerOptions {
	o := &serviceControllerOptions{unclassed: true, impl: defaultServiceController, resync: servicecontroller.DefaultResyncPeriod,
		nodeDelay: servicecontroller.DefaultNodeSyncDelay,
		orphans:   servicecontroller.OrphanOptions{Period: servicecontroller.DefaultOrphanPeriod, Grace: servicecontroller.DefaultOrphanGrace}}
	fs.StringArrayVar(&o.classes, "load-balancer-class", nil,
		"A spec.loadBalancerClass whose Services this ccm serves; repeat for several. Services of other classes are left to "+
			"their own implementation (another ccm, MetalLB, kube-vip).")
	fs.BoolVar(&o.unclassed, "serve-unclassed-services", true,
		"Serve Services of type LoadBalancer without spec.loadBalancerClass (the upstream behaviour). "+
			"Set false, with --load-balancer-class, when another implementation serves those.")
	fs.StringVar(&o.impl, "service-controller", defaultServiceController,
		"Service controller: 'ccm' (common/servicecontroller) or 'library' (k8s.io/cloud-provider's).")
	_ = fs.MarkHidden("service-controller") // for the comparison test; not an operator's choice
	fs.DurationVar(&o.resync, "load-balancer-resync-period", o.resync,
		"How often every load balancer this ccm serves is compared with the cloud, so that a change or deletion made by hand "+
			"is repaired without waiting for its Service to change (the provider writes only the difference and records "+
			"LoadBalancerDriftRepaired). 0 turns it off: drift is then repaired only when a Service changes or ccm restarts.")
	fs.DurationVar(&o.nodeDelay, "node-sync-delay", o.nodeDelay,
		"How long Node changes must be quiet before load balancer members are updated (at the latest 10 times this after "+
			"the first change), so that a burst of Nodes costs one update per load balancer. 0 updates at each change.")
	fs.DurationVar(&o.orphans.Period, "orphan-collection-period", o.orphans.Period,
		"How often the leader lists the load balancers this cluster owns and compares them with the Services, to find orphans "+
			"(a load balancer whose Service is gone, was replaced, or no longer wants one). 0 turns orphan collection off.")
	fs.DurationVar(&o.orphans.Grace, "orphan-grace-period", o.orphans.Grace,
		"How long a load balancer must stay an orphan before it is deleted. Orphans are reported (Warning Event OrphanedLoadBalancer, "+
			"log, ccm_orphaned_load_balancers) at once. 0 reports and never deletes.")
	if sc, ok := controllers[names.ServiceLBController]; ok {
		sc.Constructor = o.constructor
		controllers[names.ServiceLBController] = sc
	}
	return o
}

func (o *serviceControllerOptions) classesValue() servicecontroller.Classes {
	return servicecontroller.Classes{Names: o.classes, Unclassed: o.unclassed}
}

// validate runs before anything starts, so a bad class is an exit code and a message.
func (o *serviceControllerOptions) validate() error {
	if o.resync < 0 {
		return fmt.Errorf("--load-balancer-resync-period must not be negative, got %v", o.resync)
	}
	if o.nodeDelay < 0 || o.nodeDelay > time.Minute {
		return fmt.Errorf("--node-sync-delay must be between 0 and 1m, got %v", o.nodeDelay)
	}
	if o.orphans.Period < 0 || o.orphans.Grace < 0 {
		return fmt.Errorf("--orphan-collection-period and --orphan-grace-period must not be negative, got %v and %v", o.orphans.Period, o.orphans.Grace)
	}
	switch o.impl {
	case serviceControllerOwn:
		return o.classesValue().Validate()
	case serviceControllerLibrary:
		if len(o.classes) > 0 || !o.unclassed {
			return fmt.Errorf("--load-balancer-class and --serve-unclassed-services=false need --service-controller=%s "+
				"(the library's controller serves only Services without a class)", serviceControllerOwn)
		}
		return nil
	}
	return fmt.Errorf("--service-controller: want %q or %q, got %q", serviceControllerOwn, serviceControllerLibrary, o.impl)
}

func (o *serviceControllerOptions) constructor(initContext ccmapp.ControllerInitContext, c *ccmconfig.CompletedConfig, cloud cloudprovider.Interface) ccmapp.InitFunc {
	if o.impl == serviceControllerLibrary {
		return NewServiceController(initContext, c, cloud)
	}
	return func(ctx context.Context, cc genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
		sc, err := servicecontroller.New(cloud, c.ClientBuilder.ClientOrDie(initContext.ClientName),
			c.SharedInformers.Core().V1().Services(), c.SharedInformers.Core().V1().Nodes(),
			servicecontroller.Options{ClusterName: c.ComponentConfig.KubeCloudShared.ClusterName, Classes: o.classesValue(), NodeSyncDelay: o.nodeDelay})
		if err != nil { // as the library does: the ccm runs on without the controller
			klog.ErrorS(err, "Failed to start the service controller")
			return nil, false, nil
		}
		go sc.Run(ctx, int(c.ComponentConfig.ServiceController.ConcurrentServiceSyncs), cc.ControllerManagerMetrics)
		go sc.RunDriftResync(ctx, o.resync)
		// Controllers start only while this ccm leads, so the collector does too.
		if o.lister == nil {
			klog.InfoS("The provider cannot list the load balancers it owns: no orphan collection", "provider", cloud.ProviderName())
		} else {
			go sc.RunOrphanCollector(ctx, o.lister, o.orphans)
		}
		return nil, true, nil
	}
}
