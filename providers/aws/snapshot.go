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

// snapshot is a short-lived listing of this cluster's load balancers of one kind with their
// tags. After a restart the service controller ensures every Service; with the listing, 100
// unchanged load balancers cost one paged Describe and one DescribeTags per 20 instead of
// reads per load balancer. elbSnapshot lists classic ELBs, nlbSnapshot NLBs.
type snapshot[T any] struct {
	mu   sync.Mutex
	at   time.Time
	lbs  map[string]*T
	tags map[string]map[string]string
}

type (
	elbSnapshot = snapshot[elbtypes.LoadBalancerDescription]
	nlbSnapshot = snapshot[v2types.LoadBalancer]
)

// get returns name's load balancer and tags from a listing at most snapshotTTL old (made
// with list when older), or nil when the listing does not have it or cannot be read.
func (s *snapshot[T]) get(ctx context.Context, name string, list func(context.Context) (map[string]*T, map[string]map[string]string, error)) (*T, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.at) > snapshotTTL {
		lbs, tags, err := list(ctx)
		if err != nil {
			klog.V(2).InfoS("Listing load balancers failed; reading each one instead", "err", err)
			s.at = time.Time{}
			return nil, nil
		}
		s.lbs, s.tags, s.at = lbs, tags, time.Now()
	}
	return s.lbs[name], s.tags[name]
}

// forget drops name after a write, so the next look goes to the cloud.
func (s *snapshot[T]) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lbs, name)
	delete(s.tags, name)
}

// listELBs lists the cluster's classic ELBs (by name prefix, and the upstream CCM's names for the
// takeover) and their tags.
func (l *loadBalancers) listELBs(ctx context.Context) (map[string]*elbtypes.LoadBalancerDescription, map[string]map[string]string, error) {
	lbs := map[string]*elbtypes.LoadBalancerDescription{}
	var names []string
	in := &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elb.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for i := range out.LoadBalancerDescriptions {
			d := &out.LoadBalancerDescriptions[i]
			if n := aws.ToString(d.LoadBalancerName); strings.HasPrefix(n, lbname.AWSELB.Prefix) || isUpstreamLBName(n) {
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
	err := inChunks(names, func(chunk []string) error {
		out, err := l.c.api.elb.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			tags[aws.ToString(td.LoadBalancerName)] = tagMap(td.Tags, func(t elbtypes.Tag) (*string, *string) { return t.Key, t.Value })
		}
		return nil
	})
	return lbs, tags, err
}

// listNLBs lists the cluster's NLBs (by type and name prefix) and their tags.
func (l *loadBalancers) listNLBs(ctx context.Context) (map[string]*v2types.LoadBalancer, map[string]map[string]string, error) {
	lbs := map[string]*v2types.LoadBalancer{}
	byARN := map[string]string{}
	var arns []string
	in := &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(400)}
	for {
		out, err := l.c.api.elbv2.DescribeLoadBalancers(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		for i := range out.LoadBalancers {
			lb := &out.LoadBalancers[i]
			if n := aws.ToString(lb.LoadBalancerName); lb.Type == v2types.LoadBalancerTypeEnumNetwork && (strings.HasPrefix(n, lbname.AWSELB.Prefix) || isUpstreamLBName(n)) {
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
	err := inChunks(arns, func(chunk []string) error {
		out, err := l.c.api.elbv2.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return err
		}
		for _, td := range out.TagDescriptions {
			tags[byARN[aws.ToString(td.ResourceArn)]] = tagMap(td.Tags, func(t v2types.Tag) (*string, *string) { return t.Key, t.Value })
		}
		return nil
	})
	return lbs, tags, err
}

// inChunks calls f with ids 20 at a time: both ELB APIs' DescribeTags take at most 20.
func inChunks(ids []string, f func([]string) error) error {
	for len(ids) > 0 {
		chunk := ids[:min(20, len(ids))]
		ids = ids[len(chunk):]
		if err := f(chunk); err != nil {
			return err
		}
	}
	return nil
}

// tagMap turns one of the SDKs' tag lists into a map.
func tagMap[T any](tags []T, kv func(T) (*string, *string)) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v := kv(t)
		m[aws.ToString(k)] = aws.ToString(v)
	}
	return m
}

// forgetAll drops the whole listing: after a write that may touch any entry (a security group
// rule), the next look lists again.
func (s *snapshot[T]) forgetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = time.Time{}
	s.lbs, s.tags = nil, nil
}
