package awsread

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DNSBatcher finds instances by private DNS name for Nodes without a providerID. Look-ups
// arriving together share one DescribeInstances whose private-dns-name filter holds many
// names (see batcher), so the node controller's workers initialising 200 new Nodes make a
// handful of calls, not 200. Answers are cached by ID as the batched ID look-ups' are.
type DNSBatcher struct {
	Batcher[string, []*types.Instance] // by private DNS name
}

func NewDNSBatcher(inst *InstanceCache, vpc []string) *DNSBatcher {
	d := &DNSBatcher{}
	d.Fetch = func(ctx context.Context, names []string) (map[string][]*types.Instance, error) {
		fs := []types.Filter{Filter("private-dns-name", names...)}
		if len(vpc) > 0 {
			fs = append(fs, Filter("vpc-id", vpc...))
		}
		found, err := inst.Find(ctx, fs...)
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

// Find returns the instances whose private DNS name is name (terminated ones included, as
// EC2 lists them).
func (d *DNSBatcher) Find(ctx context.Context, name string) ([]*types.Instance, error) {
	res, err := d.Get(ctx, []string{name})
	return res[name], err
}
