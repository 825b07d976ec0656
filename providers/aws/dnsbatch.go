package aws

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// dnsBatcher finds instances by private DNS name for Nodes without a providerID. Look-ups
// arriving within batchWindow share one DescribeInstances whose private-dns-name filter holds
// up to maxBatch names, so the node controller's workers initialising 200 new Nodes make a
// handful of calls, not 200. Answers are cached by ID as the batched ID look-ups' are.
type dnsBatcher struct {
	inst *instanceCache
	vpc  []string // a vpc-id filter when VPC is set

	mu  sync.Mutex
	cur *dnsBatch
}

type dnsBatch struct {
	names   []string
	flushed bool
	done    chan struct{}
	res     map[string][]*types.Instance // by private DNS name
	err     error
}

// find returns the instances whose private DNS name is name (terminated ones included, as
// EC2 lists them).
func (d *dnsBatcher) find(ctx context.Context, name string) ([]*types.Instance, error) {
	d.mu.Lock()
	if d.cur == nil {
		b := &dnsBatch{done: make(chan struct{})}
		d.cur = b
		time.AfterFunc(batchWindow, func() { d.flush(b) })
	}
	b := d.cur
	if !slices.Contains(b.names, name) {
		b.names = append(b.names, name)
	}
	if len(b.names) >= maxBatch {
		d.cur = nil
		go d.flush(b)
	}
	d.mu.Unlock()
	select {
	case <-b.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if b.err != nil {
		return nil, b.err
	}
	return b.res[name], nil
}

func (d *dnsBatcher) flush(b *dnsBatch) {
	d.mu.Lock()
	if d.cur == b {
		d.cur = nil
	}
	if b.flushed {
		d.mu.Unlock()
		return
	}
	b.flushed = true
	names := slices.Clone(b.names)
	d.mu.Unlock()
	// Detached from any one caller's context: others wait on the same call.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fs := []types.Filter{filter("private-dns-name", names...)}
	if len(d.vpc) > 0 {
		fs = append(fs, filter("vpc-id", d.vpc...))
	}
	found, err := d.inst.find(ctx, fs...)
	if err == nil {
		b.res = map[string][]*types.Instance{}
		for _, in := range found {
			n := aws.ToString(in.PrivateDnsName)
			b.res[n] = append(b.res[n], in)
		}
	}
	b.err = err
	close(b.done)
}
