package aws

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/lbname"
)

// snapshotTTL bounds how old the listing may be when it says "nothing to do". It is used only
// to skip work: any write re-reads the ELB first, so a stale snapshot never causes a wrong write.
const snapshotTTL = 30 * time.Second

// elbSnapshot is a listing of this cluster's classic ELBs with their tags. After a restart the
// service controller ensures every Service; with the listing, 100 unchanged ELBs cost one
// paged DescribeLoadBalancers and one DescribeTags per 20 ELBs instead of two reads each.
type elbSnapshot struct {
	mu   sync.Mutex
	at   time.Time
	lbs  map[string]*elbtypes.LoadBalancerDescription
	tags map[string]map[string]string
}

// get returns name's ELB and tags from a listing at most snapshotTTL old (refreshed if
// needed), or nil when the listing does not have it or cannot be read.
func (s *elbSnapshot) get(ctx context.Context, api *elb.Client, name string) (*elbtypes.LoadBalancerDescription, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.at) > snapshotTTL {
		if err := s.refresh(ctx, api); err != nil {
			klog.V(2).InfoS("Listing ELBs failed; reading each one instead", "err", err)
			s.at = time.Time{}
			return nil, nil
		}
	}
	return s.lbs[name], s.tags[name]
}

func (s *elbSnapshot) refresh(ctx context.Context, api *elb.Client) error {
	lbs := map[string]*elbtypes.LoadBalancerDescription{}
	var names []string
	in := &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := api.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return err
		}
		for i := range out.LoadBalancerDescriptions {
			d := &out.LoadBalancerDescriptions[i]
			if n := aws.ToString(d.LoadBalancerName); strings.HasPrefix(n, lbname.AWSELB.Prefix) {
				lbs[n] = d
				names = append(names, n)
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	tags := map[string]map[string]string{}
	for len(names) > 0 {
		chunk := names[:min(20, len(names))] // DescribeTags takes at most 20 names
		names = names[len(chunk):]
		out, err := api.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			m := map[string]string{}
			for _, t := range td.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			tags[aws.ToString(td.LoadBalancerName)] = m
		}
	}
	s.lbs, s.tags, s.at = lbs, tags, time.Now()
	return nil
}

// forget drops name after a write, so the next look goes to the cloud.
func (s *elbSnapshot) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lbs, name)
	delete(s.tags, name)
}

// nlbSnapshot is elbSnapshot for NLBs: one paged DescribeLoadBalancers (v2) and one
// DescribeTags per 20 ARNs list this cluster's NLBs with their tags. With the fingerprint and
// members tags an NLB carries, a restart with nothing changed reads nothing per NLB.
type nlbSnapshot struct {
	mu   sync.Mutex
	at   time.Time
	lbs  map[string]*v2types.LoadBalancer
	tags map[string]map[string]string
}

// get returns name's NLB and tags from a listing at most snapshotTTL old (refreshed if
// needed), or nil when the listing does not have it or cannot be read.
func (s *nlbSnapshot) get(ctx context.Context, api *elbv2.Client, name string) (*v2types.LoadBalancer, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.at) > snapshotTTL {
		if err := s.refresh(ctx, api); err != nil {
			klog.V(2).InfoS("Listing NLBs failed; reading each one instead", "err", err)
			s.at = time.Time{}
			return nil, nil
		}
	}
	return s.lbs[name], s.tags[name]
}

func (s *nlbSnapshot) refresh(ctx context.Context, api *elbv2.Client) error {
	lbs := map[string]*v2types.LoadBalancer{}
	byARN := map[string]string{}
	var arns []string
	in := &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := api.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return err
		}
		for i := range out.LoadBalancers {
			lb := &out.LoadBalancers[i]
			if n := aws.ToString(lb.LoadBalancerName); lb.Type == v2types.LoadBalancerTypeEnumNetwork && strings.HasPrefix(n, lbname.AWSELB.Prefix) {
				lbs[n] = lb
				byARN[aws.ToString(lb.LoadBalancerArn)] = n
				arns = append(arns, aws.ToString(lb.LoadBalancerArn))
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	tags := map[string]map[string]string{}
	for len(arns) > 0 {
		chunk := arns[:min(20, len(arns))] // DescribeTags takes at most 20 ARNs
		arns = arns[len(chunk):]
		out, err := api.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			m := map[string]string{}
			for _, t := range td.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			tags[byARN[aws.ToString(td.ResourceArn)]] = m
		}
	}
	s.lbs, s.tags, s.at = lbs, tags, time.Now()
	return nil
}

// forget drops name after a write, so the next look goes to the cloud.
func (s *nlbSnapshot) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lbs, name)
	delete(s.tags, name)
}
