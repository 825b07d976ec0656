package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// dnsBatcher finds instances by private DNS name for Nodes without a providerID. Look-ups
// arriving together share one DescribeInstances whose private-dns-name filter holds many
// names (see batcher), so the node controller's workers initialising 200 new Nodes make a
// handful of calls, not 200. Answers are cached by ID as the batched ID look-ups' are.
type dnsBatcher struct {
	batcher[string, []*types.Instance] // by private DNS name
}

func newDNSBatcher(inst *instanceCache, vpc []string) *dnsBatcher {
	d := &dnsBatcher{}
	d.fetch = func(ctx context.Context, names []string) (map[string][]*types.Instance, error) {
		fs := []types.Filter{filter("private-dns-name", names...)}
		if len(vpc) > 0 {
			fs = append(fs, filter("vpc-id", vpc...))
		}
		found, err := inst.find(ctx, fs...)
		if err != nil {
			return nil, err
		}
		res := map[string][]*types.Instance{}
		for _, in := range found {
			n := aws.ToString(in.PrivateDnsName)
			res[n] = append(res[n], in)
		}
		return res, nil
	}
	return d
}

// find returns the instances whose private DNS name is name (terminated ones included, as
// EC2 lists them).
func (d *dnsBatcher) find(ctx context.Context, name string) ([]*types.Instance, error) {
	res, err := d.get(ctx, []string{name})
	return res[name], err
}
