package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/controller-manager/pkg/clientbuilder"

	"github.com/ccm-project/ccm/common/provider"
	"github.com/ccm-project/ccm/common/servicecontroller"
)

// gcOptions are ccm gc's flags.
type gcOptions struct {
	provider, cloudConfig, clusterName, kubeconfig string
	allowDefault, dryRun, del, unclassed           bool
	classes                                        []string
}

// newGCCommand is `ccm gc`: one orphan collection run by hand, with the rule the service
// controller's collector applies (servicecontroller.FindOrphans) and no grace period.
func newGCCommand() *cobra.Command { return newGCCommandWith(&gcOptions{unclassed: true}) }

// newGCCommandWith is newGCCommand with its flags bound to o.
func newGCCommandWith(o *gcOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gc --cloud-provider=NAME --cluster-name=NAME [--delete]",
		Short: "List the load balancers this cluster owns and delete those no Service accounts for",
		Long: `gc lists the load balancers carrying this cluster's ownership marks, compares them with the
Services in the API server and prints each one with its verdict. An orphan is a load balancer
whose Service is gone, is another Service of that name (its UID differs), or wants no load
balancer from this ccm and carries no cleanup finalizer. Nothing is deleted unless --delete is
given: then the orphans (only they) are deleted, each after its ownership marks are checked again.
Give it the flags the ccm runs with: --cloud-provider, --cloud-config, --cluster-name and the
class flags. Exit code 1 when the listing or a delete fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGCCommand(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.provider, "cloud-provider", "", "The provider that made the load balancers.")
	fs.StringVar(&o.cloudConfig, "cloud-config", "", "The provider's cloud-config, as the ccm's.")
	fs.StringVar(&o.clusterName, "cluster-name", "", "The --cluster-name the ccm runs with: whose ownership marks count.")
	fs.BoolVar(&o.allowDefault, "allow-default-cluster-name", false, "As the ccm flag of that name.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig (default: in-cluster, then $KUBECONFIG and ~/.kube/config).")
	fs.StringArrayVar(&o.classes, "load-balancer-class", nil, "As the ccm flag: a class whose Services this ccm serves.")
	fs.BoolVar(&o.unclassed, "serve-unclassed-services", true, "As the ccm flag.")
	fs.BoolVar(&o.del, "delete", false, "Delete the orphans (after checking their ownership marks again). Without it gc only lists.")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print what would be deleted; delete nothing (the default; overrides --delete).")
	return cmd
}

// listOnly: gc deletes nothing unless --delete is given, and never with --dry-run.
func (o *gcOptions) listOnly() bool { return o.dryRun || !o.del }

func runGCCommand(ctx context.Context, out io.Writer, o *gcOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.clusterName == "" {
		return errors.New("--cluster-name is required: it says which load balancers are this cluster's")
	}
	classes := servicecontroller.Classes{Names: o.classes, Unclassed: o.unclassed}
	if err := classes.Validate(); err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := provider.New(o.provider, o.cloudConfig)
	if err != nil {
		return err
	}
	if err := provider.Prepare(ctx, o.provider, c); err != nil {
		return err
	}
	if err := applyClusterName(c, o.clusterName, o.allowDefault); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	c.Initialize(clientbuilder.SimpleControllerClientBuilder{ClientConfig: cfg}, stop)
	return gc(ctx, out, c, client, o.clusterName, classes, o.listOnly())
}

// gc runs one collection: list, compare, print, and (unless dryRun) delete the orphans.
func gc(ctx context.Context, out io.Writer, c cloudprovider.Interface, client kubernetes.Interface, cluster string,
	classes servicecontroller.Classes, dryRun bool) error {
	lister, ok := c.(servicecontroller.OwnedLister)
	if !ok {
		return fmt.Errorf("provider %q cannot list the load balancers it owns", c.ProviderName())
	}
	lbs, err := lister.OwnedLoadBalancers(ctx, cluster)
	if err != nil {
		return fmt.Errorf("listing the load balancers of cluster %q (nothing deleted): %w", cluster, err)
	}
	// Services are listed after the load balancers: a Service made meanwhile is seen, so its
	// new load balancer is never taken for an orphan.
	list, err := client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Services (nothing deleted): %w", err)
	}
	svcs := make(map[string]*v1.Service, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		svcs[s.Namespace+"/"+s.Name] = s
	}
	orphans := servicecontroller.FindOrphans(lbs, func(ns, name string) *v1.Service { return svcs[ns+"/"+name] }, classes)
	isOrphan := map[servicecontroller.OwnedLoadBalancer]bool{}
	for _, lb := range orphans {
		isOrphan[lb] = true
	}
	sort.Slice(lbs, func(i, j int) bool { return lbs[i].ID < lbs[j].ID })
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOAD BALANCER\tSERVICE\tUID\tVERDICT")
	var failed []string
	deleted, underway := 0, 0
	for _, lb := range lbs {
		verdict := "kept (its Service wants it)"
		switch {
		case isOrphan[lb] && dryRun:
			verdict = "orphan: would be deleted"
		case isOrphan[lb]:
			err := lister.DeleteOwnedLoadBalancer(ctx, cluster, lb)
			var retry *api.RetryError
			switch {
			case errors.As(err, &retry):
				// Accepted; the cloud finishes it (Octavia's cascade delete, say).
				verdict = "orphan: deleted (the cloud is finishing: " + err.Error() + ")"
				deleted++
				underway++
			case err != nil:
				verdict = "orphan: delete failed: " + err.Error()
				failed = append(failed, lb.ID)
			default:
				verdict = "orphan: deleted"
				deleted++
			}
		}
		uid := lb.Owner.UID
		if uid == "" {
			uid = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", lb.ID, lb.Owner.Service(), uid, verdict)
	}
	tw.Flush()
	if dryRun {
		fmt.Fprintf(out, "%d load balancers of cluster %s, %d orphaned; dry run: nothing deleted\n", len(lbs), cluster, len(orphans))
	} else {
		fmt.Fprintf(out, "%d load balancers of cluster %s, %d orphaned, %d deleted", len(lbs), cluster, len(orphans), deleted)
		if underway > 0 {
			fmt.Fprintf(out, " (%d still being deleted by the cloud)", underway)
		}
		fmt.Fprintln(out)
	}
	if len(failed) > 0 {
		return fmt.Errorf("deleting %d orphaned load balancer(s) failed: %v", len(failed), failed)
	}
	return nil
}
