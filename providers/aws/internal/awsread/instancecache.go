package awsread

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2API is the part of the EC2 client the provider uses (a seam for unit tests of errors).
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// InstanceCache answers instance look-ups by ID from a short, bounded cache, batching misses.
// A cached "not found" is kept as well: the node deletion guard confirms it over time anyway.
type InstanceCache struct {
	api EC2API
	ttl time.Duration

	mu      sync.Mutex
	byID    map[string]cached
	batches Batcher[string, *types.Instance]
}

type cached struct {
	in *types.Instance // nil: EC2 said it does not exist
	at time.Time
}

func NewInstanceCache(api EC2API, ttl time.Duration) *InstanceCache {
	c := &InstanceCache{api: api, ttl: ttl, byID: map[string]cached{}}
	c.batches.Fetch = c.fetch
	return c
}

// get returns the instances with these IDs; a missing key means EC2 does not know the ID.
func (c *InstanceCache) Get(ctx context.Context, ids []string) (map[string]*types.Instance, error) {
	out := map[string]*types.Instance{}
	var miss []string
	c.mu.Lock()
	now := time.Now()
	for _, id := range ids {
		if e, ok := c.byID[id]; ok && now.Sub(e.at) < c.ttl {
			if e.in != nil {
				out[id] = e.in
			}
			continue
		}
		miss = append(miss, id)
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	got, err := c.batches.Get(ctx, miss)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, got)
	return out, nil
}

// fetch reads one batch of IDs and caches the answers. A filter, unlike InstanceId, does not
// fail the whole call for one unknown ID; but a filtered list that leaves an ID out is no
// answer about that instance (a wrong region or endpoint lists nothing), so each ID it leaves
// out is asked about by itself (confirm) before it counts as not found.
func (c *InstanceCache) fetch(ctx context.Context, ids []string) (map[string]*types.Instance, error) {
	found, err := Describe(ctx, c.api, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	if err != nil {
		return nil, err
	}
	res := map[string]*types.Instance{}
	for _, in := range found {
		res[aws.ToString(in.InstanceId)] = in
	}
	for _, id := range ids {
		if _, ok := res[id]; ok {
			continue
		}
		in, err := Confirm(ctx, c.api, id)
		if err != nil {
			return nil, err
		}
		if in != nil {
			res[id] = in
		}
	}
	c.store(ids, res)
	return res, nil
}

// Confirm asks EC2 about one instance by its ID: nil, nil only when EC2 answers
// InvalidInstanceID.NotFound for it, the instance if EC2 lists it, an error otherwise.
func Confirm(ctx context.Context, api EC2API, id string) (*types.Instance, error) {
	resp, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if IsCode(err, "InvalidInstanceID.NotFound") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("aws: DescribeInstances %s: %w", id, err)
	}
	for _, r := range resp.Reservations {
		for i := range r.Instances {
			if aws.ToString(r.Instances[i].InstanceId) == id {
				return &r.Instances[i], nil
			}
		}
	}
	return nil, fmt.Errorf("aws: DescribeInstances %s answered without that instance; not treating it as gone", id)
}

// store records answers for ids (absent ones as not found) and drops expired entries so the
// cache stays bounded by the instances asked for within one TTL.
func (c *InstanceCache) store(ids []string, res map[string]*types.Instance) {
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
func (c *InstanceCache) Find(ctx context.Context, filters ...types.Filter) ([]*types.Instance, error) {
	found, err := Describe(ctx, c.api, &ec2.DescribeInstancesInput{Filters: filters})
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
func (c *InstanceCache) Invalidate(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.byID, id)
	}
}

func Describe(ctx context.Context, api EC2API, in *ec2.DescribeInstancesInput) ([]*types.Instance, error) {
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
