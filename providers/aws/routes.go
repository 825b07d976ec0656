package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

// routes implements cloudprovider.Routes on one VPC route table: RouteTableID, or the table
// tagged kubernetes.io/cluster/<id>. The route controller only runs with
// --configure-cloud-routes and --cluster-cidr; without them nothing here is called.
type routes struct{ c *Cloud }

var _ cloudprovider.Routes = routes{}

func (r routes) table(ctx context.Context) (*types.RouteTable, error) {
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

// ListRoutes lists the table's routes to instances (gateway routes are not the cluster's).
// A route whose instance is gone is a blackhole, which the route controller replaces.
func (r routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	t, err := r.table(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, rt := range t.Routes {
		if id := aws.ToString(rt.InstanceId); id != "" {
			ids = append(ids, id)
		}
	}
	found, err := r.c.inst.get(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []*cloudprovider.Route
	for _, rt := range t.Routes {
		id, cidr := aws.ToString(rt.InstanceId), aws.ToString(rt.DestinationCidrBlock)
		if id == "" || cidr == "" {
			continue
		}
		route := &cloudprovider.Route{Name: id + "-" + cidr, DestinationCIDR: cidr}
		if in := alive(found[id]); in != nil && rt.State != types.RouteStateBlackhole {
			route.TargetNode = k8stypes.NodeName(r.nodeName(in))
		} else {
			route.Blackhole = true
		}
		out = append(out, route)
	}
	return out, nil
}

// nodeName maps an instance back to its Node: the NodeNameTag tag, else the private DNS name.
func (r routes) nodeName(in *types.Instance) string {
	if t := r.c.cfg.Global.NodeNameTag; t != "" {
		if v := tagValue(in.Tags, t); v != "" {
			return v
		}
	}
	return aws.ToString(in.PrivateDnsName)
}

// CreateRoute points route.DestinationCIDR at the Node's instance and turns its
// source/destination check off (it must forward traffic for pod addresses).
func (r routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	in, err := r.c.lookup(ctx, &v1.Node{ObjectMeta: metaName(string(route.TargetNode))})
	if err != nil {
		return err
	}
	if in == nil {
		return fmt.Errorf("aws: no instance found for Node %q", route.TargetNode)
	}
	id := aws.ToString(in.InstanceId)
	if aws.ToBool(in.SourceDestCheck) {
		if _, err := r.c.api.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
			SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}}); err != nil {
			return fmt.Errorf("aws: ModifyInstanceAttribute %s: %w", id, err)
		}
		r.c.inst.invalidate(id)
	}
	t, err := r.table(ctx)
	if err != nil {
		return err
	}
	for _, rt := range t.Routes {
		if aws.ToString(rt.DestinationCidrBlock) != route.DestinationCIDR {
			continue
		}
		if aws.ToString(rt.InstanceId) == id && rt.State != types.RouteStateBlackhole {
			return nil
		}
		// A blackhole or another instance's route for this CIDR: replace it.
		if _, err := r.c.api.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: t.RouteTableId, DestinationCidrBlock: aws.String(route.DestinationCIDR)}); err != nil {
			return fmt.Errorf("aws: DeleteRoute %s: %w", route.DestinationCIDR, err)
		}
	}
	if _, err := r.c.api.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: t.RouteTableId, DestinationCidrBlock: aws.String(route.DestinationCIDR), InstanceId: aws.String(id)}); err != nil {
		return fmt.Errorf("aws: CreateRoute %s -> %s: %w", route.DestinationCIDR, id, err)
	}
	klog.InfoS("Created route", "cidr", route.DestinationCIDR, "node", route.TargetNode, "instance", id)
	return nil
}

// DeleteRoute removes the route for route.DestinationCIDR; a missing route is success.
func (r routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	t, err := r.table(ctx)
	if err != nil {
		return err
	}
	_, err = r.c.api.ec2.DeleteRoute(ctx, &ec2.DeleteRouteInput{RouteTableId: t.RouteTableId, DestinationCidrBlock: aws.String(route.DestinationCIDR)})
	if err != nil && !isCode(err, "InvalidRoute.NotFound") {
		return fmt.Errorf("aws: DeleteRoute %s: %w", route.DestinationCIDR, err)
	}
	return nil
}
