package aws

// The load balancer interface of the provider. ensure reads the Service's annotations once
// (internal/annotations), checks what they reach, and reconciles an NLB (nlb.go,
// nlbobserve.go, nlbapply.go) or a classic ELB (elb.go, elbobserve.go, elbapply.go), each as
// observe → plan → apply with the plan in a pure package (nlbplan, elbplan, sgrules). What is
// upstream's is recognised by package upstream; what the Service owns, by its ownership tags
// (owner.go).
//
// A takeover of an upstream load balancer is planned like any change: ccm's ownership tags on
// the load balancer, its groups and target groups, and new node rules before upstream's are
// revoked, so the next sync writes nothing.
//
// Deletes find what a Service owns by its ownership tags, not by the names or the load balancer
// a reconcile would derive now: a ccm killed between two steps of a creation (a security group
// made, its ELB not yet; target groups made for ports the Service no longer has) or of a delete
// (the load balancer gone, its group not yet) leaves objects only their tags lead back to.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/keylock"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/metrics"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/subnets"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// EnsureLoadBalancer, UpdateLoadBalancer and GetLoadBalancer step aside for a Service whose
// aws-load-balancer-type is "external" or "nlb-ip", as upstream does: the AWS Load Balancer
// Controller serves it. The service controller takes ImplementedElsewhere as "nothing to do".

// fingerprintTag holds fingerprint.Of(the desired configuration) on each ELB, so a restart with
// nothing changed compares instead of writing.
const fingerprintTag = "ccm.k8s.io/fingerprint"

// loadBalancers implements cloudprovider.LoadBalancer with classic ELBs and NLBs.
type loadBalancers struct {
	c *Cloud
	// clusterName is the --cluster-name the service controller passes (the same on every
	// call); upstream's NLB group names are derived from it (upstream.NLBGroupName).
	clusterName atomic.Value
	sn          subnets.Cache
	snap        elbSnapshot
	nsnap       nlbSnapshot
	gsnap       groupSnapshot // security groups tagged for the cluster
	tsnap       tgSnapshot    // target groups by NLB
	keys        keylock.Locks // one operation per Service at a time (see keylock)
	groupKeys   keylock.Locks // one sync at a time decides a node group's shared MTU rules (nlb.go)
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(c *Cloud) *loadBalancers {
	return &loadBalancers{c: c, sn: subnets.Cache{TTL: subnetTTL}}
}

// EnsureLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	l.clusterName.Store(clusterName)
	if annotations.ExternalType(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	st, err := l.ensure(ctx, svc, nodes, false)
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "ensure", start, err)
	return st, publicError(err)
}

// UpdateLoadBalancer implements cloudprovider.LoadBalancer: the same reconcile, which changes
// only members when only the nodes changed, but never creates. The node sync calls it for the
// Services it has cached, also one whose load balancer a worker has just deleted; creating
// would bring that back for good. A Service with no address yet has its creation pending
// (requeued with the current Nodes), so that is no error.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	l.clusterName.Store(clusterName)
	if annotations.ExternalType(svc) {
		return cloudprovider.ImplementedElsewhere
	}
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	_, err := l.ensure(ctx, svc, nodes, true)
	if errors.Is(err, errNotCreatedYet) {
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			err = nil
		} else {
			err = fmt.Errorf("aws: load balancer %s of %s/%s is gone; not recreating it in an update", l.name(svc), svc.Namespace, svc.Name)
		}
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "update", start, err)
	return publicError(err)
}

// errNotCreatedYet is UpdateLoadBalancer finding no load balancer: updates never create one.
var errNotCreatedYet = errors.New("no load balancer to update")

// ensure reconciles svc's load balancer; with mustExist it returns errNotCreatedYet rather
// than create one.
func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node, mustExist bool) (*v1.LoadBalancerStatus, error) {
	if err := l.c.cfg.checker().Values(svc); err != nil {
		return nil, err
	}
	if err := annotations.UnsupportedSpec(svc); err != nil {
		return nil, err
	}
	opts, err := annotations.Parse(svc)
	if err != nil {
		return nil, err
	}
	if err := annotations.CheckUnreadable(l.identity(svc), opts, l.c.cfg.allow()); err != nil {
		return nil, err
	}
	l.adviseUnused(svc, opts)
	var st *v1.LoadBalancerStatus
	if opts.NLB {
		st, err = l.ensureNLB(ctx, svc, opts, nodes, mustExist)
	} else {
		st, err = l.ensureClassic(ctx, svc, opts, nodes, mustExist)
	}
	if err != nil && !errors.Is(err, errNotCreatedYet) {
		// Maybe a listing was out of date (a group deleted by hand): the next try lists afresh.
		for _, name := range []string{l.name(svc), upstream.LBName(svc)} {
			l.snap.Forget(name)
			l.nsnap.Forget(name)
		}
		l.gsnap.ForgetAll()
		l.tsnap.ForgetAll()
	}
	return st, err
}

// adviseUnused records o's advice as one Warning on svc (once an hour while it holds).
func (l *loadBalancers) adviseUnused(svc *v1.Service, o *annotations.Options) {
	if len(o.Advice) > 0 {
		l.c.events.Advise(svc, reasonUnusedAnnotation, strings.Join(o.Advice, "; "))
	}
}

// reasonUnusedAnnotation is the Warning's reason for annotations accepted but not used; the
// OpenStack provider's word for the same.
const reasonUnusedAnnotation = "UnsupportedAnnotation"

// reasonListenerKeptTLS is the Warning's reason when a TLS listener is kept against ssl-ports.
const reasonListenerKeptTLS = "LoadBalancerListenerKeptEncrypted"

// EnsureLoadBalancerDeleted implements cloudprovider.LoadBalancer. It deletes only an ELB
// tagged as owned by this cluster for this Service, then its security group and the rules
// that point at it. A missing ELB is success (its group is still cleaned up).
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	l.clusterName.Store(clusterName)
	start := time.Now()
	defer l.keys.Lock(svc.Namespace + "/" + svc.Name)()
	_, err := l.deleteNLB(ctx, svc)
	if err == nil {
		_, err = l.deleteClassic(ctx, svc)
	}
	metrics.ObserveReconcile(ProviderName, "loadbalancer", "delete", start, err)
	return publicError(err)
}

func (l *loadBalancers) name(svc *v1.Service) string {
	return lbname.AWSELB.Name(l.c.cfg.ClusterID(), svc.Namespace, svc.Name)
}

// GetLoadBalancerName implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return l.name(svc)
}

// GetLoadBalancer implements cloudprovider.LoadBalancer.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if annotations.ExternalType(svc) {
		return nil, false, nil // another controller's (upstream answers the same)
	}
	st, err := l.loadBalancerStatus(ctx, svc)
	if err != nil || st != nil {
		return st, st != nil, publicError(err)
	}
	// The library calls EnsureLoadBalancerDeleted only for a Service whose load balancer
	// exists. A create killed before the load balancer was made leaves this Service's security
	// group or target groups behind: they count as existing, so that the delete removes them.
	left, err := l.leftovers(ctx, svc)
	if err != nil || !left {
		return nil, false, publicError(err)
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// loadBalancerStatus is the status of svc's load balancer of the type it asks for, or nil.
func (l *loadBalancers) loadBalancerStatus(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, error) {
	if svc.Annotations[annotations.Prefix+annotations.Type] == "nlb" {
		_, lb, _, _, err := l.findNLB(ctx, svc)
		if err != nil || lb == nil {
			return nil, err
		}
		return nlbStatus(lb), nil
	}
	_, d, _, _, err := l.findClassic(ctx, svc)
	if err != nil || d == nil {
		return nil, err
	}
	return status(d), nil
}

// leftovers says whether objects svc owns remain while its load balancer does not: an ELB
// security group or a target group carrying its ownership tags. Read only when the load
// balancer is missing, so unchanged Services never pay for it.
func (l *loadBalancers) leftovers(ctx context.Context, svc *v1.Service) (bool, error) {
	id := l.identity(svc)
	groups, err := l.ownedELBGroups(ctx, id)
	if err != nil || len(groups) > 0 {
		return len(groups) > 0, err
	}
	tgs, err := l.ownedTargetGroups(ctx, id)
	return len(tgs) > 0, err
}

// elbOwnerCheck reads the ELB's tags and checks that svc owns it (upstream.CheckLB): run before
// the first write of a reconcile that decided on the listing's tags (which may be the
// listing's lifetime old: someone may have retagged it since).
func (l *loadBalancers) elbOwnerCheck(svc *v1.Service, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		tags, err := l.tags(ctx, name)
		if err != nil {
			return err
		}
		return upstream.CheckLB(l.identity(svc), svc, name, tags)
	}
}

// nlbOwnerCheck is elbOwnerCheck for an NLB.
func (l *loadBalancers) nlbOwnerCheck(svc *v1.Service, name, arn string) func(context.Context) error {
	return func(ctx context.Context) error {
		tags, err := l.tagsV2(ctx, arn)
		if err != nil {
			return err
		}
		return upstream.CheckLB(l.identity(svc), svc, name, tags)
	}
}

// isCode and filter are awsread's, used throughout the package.
var (
	isCode = awsread.IsCode
	filter = awsread.Filter
)

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// subnetTTL: subnets change rarely; caching them keeps a resync from costing a read per Service.
const subnetTTL = time.Minute

// subnets are the load balancer's subnets (package subnets). A subnet the annotation names is
// used only if it is tagged for this cluster (owned or shared) or the operator allowed it by the
// Service's namespace or its ID: a tenant must not put a load balancer into another cluster's
// (or anyone's) subnet.
func (l *loadBalancers) subnets(ctx context.Context, svc *v1.Service, opts *annotations.Options) (subnets.Choice, error) {
	sn, err := l.sn.Get(ctx, l.c.api.ec2, subnets.Want{Internal: opts.Internal, Named: opts.Subnets, VPC: l.c.cfg.Global.VPC, ClusterID: l.c.cfg.ClusterID()})
	if err != nil {
		return subnets.Choice{}, err
	}
	ann, _ := annotations.Table.Lookup(annotations.Prefix + annotations.Subnets)
	for _, id := range sn.Untagged {
		if err := reach.Named(l.identity(svc), l.c.cfg.allow(), ann, id, reach.Evidence{}); err != nil {
			return subnets.Choice{}, err
		}
	}
	return sn, nil
}
