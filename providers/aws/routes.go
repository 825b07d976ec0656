package aws

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/routes"
	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// vpcRoutes implements cloudprovider.Routes on one VPC route table: RouteTableID, or the table
// tagged kubernetes.io/cluster/<id>. The route controller only runs with
// --configure-cloud-routes and --cluster-cidr; without them nothing here is called.
//
// Which routes of the table are this cluster's is common/routes' rule, with a route's instance
// as its hop: a route in the cluster CIDRs is this cluster's when its instance is one of this
// cluster's Nodes, or when it is recorded as this cluster's. EC2 cannot tag a route, so the
// record is the instance's kubernetes.io/cluster/<id> tag, the tag Nodes' instances carry in
// the upstream provider's conventions; and a table found by the cluster tag is the cluster's
// alone, so everything on it is recorded. A table named by RouteTableID may be shared with other
// clusters and with an operator's routes: those are never listed, replaced or deleted.
type vpcRoutes struct{ c *Cloud }

var (
	_ cloudprovider.Routes       = vpcRoutes{}
	_ routes.ClusterCIDRScoped   = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// UseClusterCIDRs implements routes.ClusterCIDRScoped: only routes within these CIDRs can be
// this cluster's.
func (c *Cloud) UseClusterCIDRs(cidrs []netip.Prefix) { c.clusterCIDRs = slices.Clone(cidrs) }

// SetInformers implements cloudprovider.InformerUser. The cluster's Nodes say which instances
// its routes may go through; asking for the lister registers the Node informer, which the
// library's factory then starts.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	c.nodes = f.Core().V1().Nodes().Lister()
}

func (r vpcRoutes) table(ctx context.Context) (*types.RouteTable, error) {
	in := &ec2.DescribeRouteTablesInput{}
	if id := r.c.cfg.Global.RouteTableID; id != "" {
		in.RouteTableIds = []string{id}
	} else {
		in.Filters = []types.Filter{filter("tag-key", ownership.ClusterTagPrefix+r.c.cfg.ClusterID())}
		if v := r.c.cfg.Global.VPC; v != "" {
			in.Filters = append(in.Filters, filter("vpc-id", v))
		}
	}
	// EC2 may answer in pages (NextToken) even without MaxResults: a second tagged table on a
	// later page must still be seen.
	var tables []types.RouteTable
	for {
		out, err := r.c.api.ec2.DescribeRouteTables(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("aws: DescribeRouteTables: %w", err)
		}
		tables = append(tables, out.RouteTables...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(tables) != 1 {
		return nil, fmt.Errorf("aws: %d route tables are tagged %s%s; tag exactly one or set [Global] RouteTableID",
			len(tables), ownership.ClusterTagPrefix, r.c.cfg.ClusterID())
	}
	return &tables[0], nil
}

// tableRead is one read of the route table with what decides whose its routes are.
type tableRead struct {
	id      string
	own     bool   // found by the cluster tag: the cluster's alone, every route on it recorded
	cluster string // the cluster ID, whose tag records an instance's routes
	// held are the routes to instances, each with its instance ID as the hop.
	held []routes.Route
	// byDest is every route with an IPv4 destination, gateway routes too: EC2 holds one
	// route per destination, whatever its target.
	byDest map[netip.Prefix]types.Route
	// found are the hops' instances as EC2 describes them, terminated ones too (EC2 keeps
	// describing them, with their tags, for a while); an instance EC2 does not know is absent.
	found map[string]*types.Instance
}

// read reads the table, and the instances its routes go through in one batched look-up.
func (r vpcRoutes) read(ctx context.Context) (*tableRead, error) {
	t, err := r.table(ctx)
	if err != nil {
		return nil, err
	}
	v := &tableRead{id: aws.ToString(t.RouteTableId), own: r.c.cfg.Global.RouteTableID == "", cluster: r.c.cfg.ClusterID(),
		byDest: map[netip.Prefix]types.Route{}}
	var ids []string
	for _, rt := range t.Routes {
		dest, err := netip.ParsePrefix(aws.ToString(rt.DestinationCidrBlock))
		if err != nil {
			continue // an IPv6 or prefix list destination: never one this provider makes
		}
		v.byDest[dest] = rt
		if id := aws.ToString(rt.InstanceId); id != "" {
			v.held = append(v.held, routes.Route{Destination: dest, Hop: id})
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if v.found, err = r.c.inst.Get(ctx, slices.Compact(ids)); err != nil {
		return nil, err
	}
	return v, nil
}

// recorded is common/routes' record check: rt is on the table, and the table is the cluster's
// own or rt's instance carries the cluster tag. The tag marks the instance, not one route, so
// it records nothing about a route the table does not hold.
func (v *tableRead) recorded(rt routes.Route) bool {
	return slices.Contains(v.held, rt) && (v.own || clusterTagged(v.found[rt.Hop], v.cluster))
}

// blackhole reports whether EC2 says the route to dest leads nowhere (its instance is gone).
func (v *tableRead) blackhole(dest netip.Prefix) bool {
	return v.byDest[dest].State == types.RouteStateBlackhole
}

// clusterTagged reports whether in carries kubernetes.io/cluster/<cluster>, with any value
// ("owned" and "shared" both say the instance serves the cluster), or the legacy
// KubernetesCluster=<cluster> tag the upstream provider still reads.
func clusterTagged(in *types.Instance, cluster string) bool {
	if in == nil || cluster == "" {
		return false
	}
	return slices.ContainsFunc(in.Tags, func(t types.Tag) bool {
		k := aws.ToString(t.Key)
		return k == ownership.ClusterTagPrefix+cluster || k == upstream.LegacyClusterTag && aws.ToString(t.Value) == cluster
	})
}

// scope is common/routes' Scope of this cluster now: the cluster CIDRs, and the instance ID
// of each of its Nodes as the hop their routes go through. Before the library hands the Node
// informer over, no Node makes a route this cluster's: only records do.
func (r vpcRoutes) scope(ctx context.Context) (routes.Scope, error) {
	s := routes.Scope{ClusterCIDRs: r.c.clusterCIDRs, Nodes: map[string]k8stypes.NodeName{}}
	if r.c.nodes == nil {
		return s, nil
	}
	nodes, err := r.c.nodes.List(labels.Everything())
	if err != nil {
		return s, fmt.Errorf("aws: listing Nodes: %w", err)
	}
	for _, n := range nodes {
		if id := r.nodeInstanceID(ctx, n); id != "" {
			s.Nodes[id] = k8stypes.NodeName(n.Name)
		}
	}
	return s, nil
}

// nodeInstanceID is the instance of n: from its providerID, or, for a Node not initialised
// yet, found as the Node controller finds it, so that a route made for it meanwhile is not
// taken for a blackhole. "" when it has none (another provider's Node, a failed look-up).
func (r vpcRoutes) nodeInstanceID(ctx context.Context, n *v1.Node) string {
	if n.Spec.ProviderID != "" {
		id, _ := instanceID(n.Spec.ProviderID)
		return id
	}
	in, err := r.c.lookup(ctx, n)
	if err != nil || in == nil {
		return ""
	}
	return aws.ToString(in.InstanceId)
}

// ListRoutes lists this cluster's routes to instances (gateway routes are never listed), each
// named "<cidr> via <instance ID>" so that DeleteRoute deletes only the route it listed. A
// route whose instance is gone, or is none of the cluster's Nodes, is a blackhole, which the
// route controller deletes.
func (r vpcRoutes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	if len(r.c.clusterCIDRs) == 0 {
		return nil, fmt.Errorf("aws: the provider was given no cluster CIDRs (--cluster-cidr), so no route can be this cluster's: not listing routes")
	}
	v, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	scope, err := r.scope(ctx)
	if err != nil {
		return nil, err
	}
	listed := scope.List(v.held, v.recorded)
	for _, route := range listed {
		hop, _ := routes.ParseName(route.Name)
		in := alive(v.found[hop.Hop])
		if r.c.nodes == nil && in != nil {
			// No Node informer was handed over: the Node is named after its instance.
			route.TargetNode, route.Blackhole = k8stypes.NodeName(r.nodeName(in)), false
		}
		if in == nil || v.blackhole(hop.Destination) {
			route.Blackhole = true
		}
	}
	return listed, nil
}

// nodeName maps an instance back to its Node: the NodeNameTag tag, else the private DNS name.
func (r vpcRoutes) nodeName(in *types.Instance) string {
	if t := r.c.cfg.Global.NodeNameTag; t != "" {
		if v := awsread.TagValue(in.Tags, t); v != "" {
			return v
		}
	}
	return aws.ToString(in.PrivateDnsName)
}

// CreateRoute points route.DestinationCIDR at the Node's instance, records the route as this
// cluster's and turns the instance's source/destination check off (it must forward traffic
// for Pod addresses). Every check comes before the first write: a destination outside the
// cluster CIDRs, or one the table already routes through another owner's target, is refused
// with nothing written. A route already in place writes nothing.
func (r vpcRoutes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	dest, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("aws: route to Node %q: %q is not a CIDR: %w", route.TargetNode, route.DestinationCIDR, err)
	}
	in, err := r.targetInstance(ctx, route.TargetNode)
	if err != nil {
		return err
	}
	v, err := r.read(ctx)
	if err != nil {
		return err
	}
	scope, err := r.scope(ctx)
	if err != nil {
		return err
	}
	want := routes.Route{Destination: dest.Masked(), Hop: aws.ToString(in.InstanceId)}
	// A blackhole through the same instance is made again, so it does not count as held.
	active := slices.DeleteFunc(slices.Clone(v.held), func(h routes.Route) bool { return v.blackhole(h.Destination) })
	steps, err := scope.PlanCreate(active, v.recorded, want)
	if err != nil {
		return fmt.Errorf("aws: %w", err)
	}
	replace, err := v.replaces(scope, want)
	if err != nil {
		return err
	}
	if err := r.forward(ctx, in); err != nil {
		return err
	}
	for _, st := range steps {
		switch st.Action {
		case routes.AddRecord:
			err = r.record(ctx, v, in)
		case routes.AddRoute:
			err = r.put(ctx, v, want, replace, route.TargetNode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// targetInstance is the instance of the Node the route controller named: its Node from the
// informer (found by providerID), else, with no informer handed over, by the Node name alone.
func (r vpcRoutes) targetInstance(ctx context.Context, name k8stypes.NodeName) (*types.Instance, error) {
	node := &v1.Node{ObjectMeta: metaName(string(name))}
	if r.c.nodes != nil {
		n, err := r.c.nodes.Get(string(name))
		if err != nil {
			return nil, fmt.Errorf("aws: route to Node %q: %w", name, err)
		}
		node = n
	}
	in, err := r.c.lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	if in == nil {
		return nil, fmt.Errorf("aws: no instance found for Node %q", name)
	}
	return in, nil
}

// replaces reports whether the table's route to want's destination must be deleted before want
// is made: an EC2 route table holds one route per destination. When that route is not this
// cluster's, the answer is an error, before any write: another cluster's or an operator's
// route is never replaced.
func (v *tableRead) replaces(scope routes.Scope, want routes.Route) (bool, error) {
	rt, ok := v.byDest[want.Destination]
	if !ok {
		return false, nil
	}
	hop := aws.ToString(rt.InstanceId)
	if hop == want.Hop {
		return v.blackhole(want.Destination), nil
	}
	there := routes.Route{Destination: want.Destination, Hop: hop}
	if hop != "" && scope.Owned(there, v.recorded(there)) {
		return true, nil
	}
	why := "it goes through " + routeTarget(rt) + ", no instance"
	if hop != "" {
		why = "its instance is none of this cluster's Nodes and carries no " + ownership.ClusterTagPrefix + v.cluster + " tag"
	}
	return false, fmt.Errorf("aws: route table %s already routes %s through %s, which is not this cluster's (%s); "+
		"an EC2 route table holds one route per destination, so route %s is not made and that route is left as it is",
		v.id, want.Destination, routeTarget(rt), why, want)
}

// routeTarget names what rt sends traffic to.
func routeTarget(rt types.Route) string {
	for _, t := range []*string{rt.InstanceId, rt.GatewayId, rt.NatGatewayId, rt.NetworkInterfaceId, rt.TransitGatewayId,
		rt.VpcPeeringConnectionId, rt.LocalGatewayId, rt.CarrierGatewayId, rt.EgressOnlyInternetGatewayId, rt.CoreNetworkArn} {
		if s := aws.ToString(t); s != "" {
			return s
		}
	}
	return "an unnamed target"
}

// forward turns in's source/destination check off: it must forward traffic for Pod addresses.
func (r vpcRoutes) forward(ctx context.Context, in *types.Instance) error {
	if !aws.ToBool(in.SourceDestCheck) {
		return nil
	}
	id := aws.ToString(in.InstanceId)
	if _, err := r.c.api.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
		SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}}); err != nil {
		return fmt.Errorf("aws: ModifyInstanceAttribute %s: %w", id, err)
	}
	r.c.inst.Invalidate(id)
	return nil
}

// record tags in with the cluster tag, so that its routes stay this cluster's to delete once
// its Node is gone, unless the table is the cluster's own or the tag is there already. The
// value is "shared": the cluster routes through the instance but does not decide its
// lifetime. The tag stays when a route goes: it marks the instance, which the Node's other
// routes may go through.
func (r vpcRoutes) record(ctx context.Context, v *tableRead, in *types.Instance) error {
	if v.own || clusterTagged(in, v.cluster) {
		return nil
	}
	id := aws.ToString(in.InstanceId)
	if v.cluster == "" {
		return fmt.Errorf("aws: no cluster ID to tag instance %s with, and without the tag its routes are not recorded as this cluster's; set [Global] KubernetesClusterID", id)
	}
	if _, err := r.c.api.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []types.Tag{{Key: aws.String(ownership.ClusterTagPrefix + v.cluster), Value: aws.String(ownership.Shared)}}}); err != nil {
		return fmt.Errorf("aws: CreateTags %s (recording its routes as this cluster's): %w", id, err)
	}
	r.c.inst.Invalidate(id)
	return nil
}

// put makes want, after deleting the route it replaces (replaces said it may).
func (r vpcRoutes) put(ctx context.Context, v *tableRead, want routes.Route, replace bool, node k8stypes.NodeName) error {
	cidr := aws.String(want.Destination.String())
	if replace {
		if _, err := r.c.api.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(v.id), DestinationCidrBlock: cidr}); err != nil && !isCode(err, "InvalidRoute.NotFound") {
			return fmt.Errorf("aws: DeleteRoute %s (replaced by %s): %w", want.Destination, want, err)
		}
	}
	if _, err := r.c.api.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: aws.String(v.id), DestinationCidrBlock: cidr, InstanceId: aws.String(want.Hop)}); err != nil {
		return fmt.Errorf("aws: CreateRoute %s: %w", want, err)
	}
	klog.InfoS("Created route", "route", want.String(), "node", node, "table", v.id, "replaced", replace)
	return nil
}

// DeleteRoute deletes the route ListRoutes listed as route, if it is still there and is this
// cluster's; a missing route is success. EC2 deletes a route by its destination alone, so the
// table is read first: a route to that destination that now goes through another instance is
// not the one listed and stays.
func (r vpcRoutes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	want, ok := routes.ParseName(route.Name)
	if !ok {
		return fmt.Errorf("aws: route %q (to %s) was not listed by this provider: its name does not say which instance it goes through; left as it is",
			route.Name, route.DestinationCIDR)
	}
	v, err := r.read(ctx)
	if err != nil {
		return err
	}
	scope, err := r.scope(ctx)
	if err != nil {
		return err
	}
	steps, err := scope.PlanDelete(v.held, v.recorded, want)
	if err != nil {
		return fmt.Errorf("aws: %w", err)
	}
	for _, st := range steps {
		if st.Action != routes.RemoveRoute {
			continue // the record is the instance's tag, which stays (see record)
		}
		_, err := r.c.api.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: aws.String(v.id), DestinationCidrBlock: aws.String(want.Destination.String())})
		if err != nil && !isCode(err, "InvalidRoute.NotFound") {
			return fmt.Errorf("aws: DeleteRoute %s: %w", want, err)
		}
		klog.InfoS("Deleted route", "route", want.String(), "table", v.id)
	}
	return nil
}
