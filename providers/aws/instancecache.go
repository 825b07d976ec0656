package aws

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Batching: callers asking for instances within batchWindow share one DescribeInstances of up
// to maxBatch IDs (EC2 accepts 200 values per filter), so a node-controller resync of 200 Nodes
// or a load balancer update is one call, not one per Node.
const (
	batchWindow = 20 * time.Millisecond
	maxBatch    = 200
)

// ec2API is the part of the EC2 client the provider uses (a seam for unit tests of errors).
type ec2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// instanceCache answers instance look-ups by ID from a short, bounded cache, batching misses.
// A cached "not found" is kept as well: the node deletion guard confirms it over time anyway.
type instanceCache struct {
	api ec2API
	ttl time.Duration

	mu   sync.Mutex
	byID map[string]cached
	cur  *batch
}

type cached struct {
	in *types.Instance // nil: EC2 said it does not exist
	at time.Time
}

type batch struct {
	ids     []string
	flushed bool // a full batch is flushed at once and again by its timer: only once counts
	done    chan struct{}
	res     map[string]*types.Instance
	err     error
}

func newInstanceCache(api ec2API, ttl time.Duration) *instanceCache {
	return &instanceCache{api: api, ttl: ttl, byID: map[string]cached{}}
}

// get returns the instances with these IDs; a missing key means EC2 does not know the ID.
func (c *instanceCache) get(ctx context.Context, ids []string) (map[string]*types.Instance, error) {
	out := map[string]*types.Instance{}
	var wait []*batch
	c.mu.Lock()
	now := time.Now()
	for _, id := range ids {
		if e, ok := c.byID[id]; ok && now.Sub(e.at) < c.ttl {
			if e.in != nil {
				out[id] = e.in
			}
			continue
		}
		if c.cur == nil {
			b := &batch{done: make(chan struct{})}
			c.cur = b
			time.AfterFunc(batchWindow, func() { c.flush(b) })
		}
		b := c.cur
		if !slices.Contains(b.ids, id) {
			b.ids = append(b.ids, id)
		}
		if !slices.Contains(wait, b) {
			wait = append(wait, b)
		}
		if len(b.ids) >= maxBatch {
			c.cur = nil
			go c.flush(b)
		}
	}
	c.mu.Unlock()
	for _, b := range wait {
		select {
		case <-b.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if b.err != nil {
			return nil, b.err
		}
		for _, id := range ids {
			if in, ok := b.res[id]; ok {
				out[id] = in
			}
		}
	}
	return out, nil
}

func (c *instanceCache) flush(b *batch) {
	c.mu.Lock()
	if c.cur == b {
		c.cur = nil
	}
	if b.flushed {
		c.mu.Unlock()
		return
	}
	b.flushed = true
	ids := slices.Clone(b.ids)
	c.mu.Unlock()
	if len(ids) == 0 {
		close(b.done)
		return
	}
	// A filter, unlike InstanceId, does not fail the whole call for one unknown ID. The call is
	// detached from any one caller's context: others wait on it too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	found, err := describe(ctx, c.api, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	if err == nil {
		b.res = map[string]*types.Instance{}
		for _, in := range found {
			b.res[aws.ToString(in.InstanceId)] = in
		}
		c.store(ids, b.res)
	}
	b.err = err
	close(b.done)
}

// store records answers for ids (absent ones as not found) and drops expired entries so the
// cache stays bounded by the instances asked for within one TTL.
func (c *instanceCache) store(ids []string, res map[string]*types.Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, e := range c.byID {
		if now.Sub(e.at) >= c.ttl {
			delete(c.byID, id)
		}
	}
	for _, id := range ids {
		c.byID[id] = cached{in: res[id], at: now}
	}
}

// find returns the instances matching filters (uncached: used for Nodes without providerID)
// and caches them by ID.
func (c *instanceCache) find(ctx context.Context, filters ...types.Filter) ([]*types.Instance, error) {
	found, err := describe(ctx, c.api, &ec2.DescribeInstancesInput{Filters: filters})
	if err != nil {
		return nil, err
	}
	res := map[string]*types.Instance{}
	var ids []string
	for _, in := range found {
		res[aws.ToString(in.InstanceId)] = in
		ids = append(ids, aws.ToString(in.InstanceId))
	}
	c.store(ids, res)
	return found, nil
}

// invalidate drops cached answers, for a caller that must see the cloud now.
func (c *instanceCache) invalidate(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.byID, id)
	}
}

func describe(ctx context.Context, api ec2API, in *ec2.DescribeInstancesInput) ([]*types.Instance, error) {
	var out []*types.Instance
	for {
		resp, err := api.DescribeInstances(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("aws: DescribeInstances: %w", err)
		}
		for _, r := range resp.Reservations {
			for i := range r.Instances {
				out = append(out, &r.Instances[i])
			}
		}
		if aws.ToString(resp.NextToken) == "" {
			return out, nil
		}
		in.NextToken = resp.NextToken
	}
}
