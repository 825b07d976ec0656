// Package awsread holds the provider's read side that knows nothing of Services: short-lived
// listings with their tags (Snapshot), batched look-ups (Batcher), the instance cache and the
// look-up by private DNS name, and the paged Describe calls. Package aws decides what to list
// and when a listing is stale.
package awsread

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"
)

// SnapshotTTL bounds how old the listing may be when it says "nothing to do". It is used only
// to skip work: any write re-reads the ELB first, so a stale snapshot never causes a wrong write.
const SnapshotTTL = 30 * time.Second

// Snapshot is a short-lived listing of this cluster's load balancers of one kind with their
// tags. After a restart the service controller ensures every Service; with the listing, 100
// unchanged load balancers cost one paged Describe and one DescribeTags per 20 instead of
// reads per load balancer.
type Snapshot[T any] struct {
	mu   sync.Mutex
	at   time.Time
	lbs  map[string]*T
	tags map[string]map[string]string
}

// Get returns name's load balancer and tags from a listing at most SnapshotTTL old (made
// with list when older), or nil when the listing does not have it or cannot be read.
func (s *Snapshot[T]) Get(ctx context.Context, name string, list func(context.Context) (map[string]*T, map[string]map[string]string, error)) (*T, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.at) > SnapshotTTL {
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

// Forget drops name after a write, so the next look goes to the cloud.
func (s *Snapshot[T]) Forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lbs, name)
	delete(s.tags, name)
}

// InChunks calls f with ids 20 at a time: both ELB APIs' DescribeTags take at most 20.
func InChunks(ids []string, f func([]string) error) error {
	for len(ids) > 0 {
		chunk := ids[:min(20, len(ids))]
		ids = ids[len(chunk):]
		if err := f(chunk); err != nil {
			return err
		}
	}
	return nil
}

// TagMap turns one of the SDKs' tag lists into a map.
func TagMap[T any](tags []T, kv func(T) (*string, *string)) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		k, v := kv(t)
		m[aws.ToString(k)] = aws.ToString(v)
	}
	return m
}

// ForgetAll drops the whole listing: after a write that may touch any entry (a security group
// rule), the next look lists again.
func (s *Snapshot[T]) ForgetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = time.Time{}
	s.lbs, s.tags = nil, nil
}

// TagValue is the value of the EC2 tag key among tags, "" when absent.
func TagValue(tags []types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}
