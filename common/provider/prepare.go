package provider

import (
	"context"
	"fmt"

	cloudprovider "k8s.io/cloud-provider"
)

// Preparer is implemented by a cloud that must ask the cloud something before the controllers
// start, because the config may leave it out: the aws provider without --cloud-config reads
// its region from the instance metadata service and its cluster ID from its instance's tags.
// Factories stay offline (check-config uses them); ccm calls Prepare once after the Factory,
// before anything else, and stops with its error.
type Preparer interface {
	Prepare(ctx context.Context) error
}

// Prepare calls c's Prepare, if it has one.
func Prepare(ctx context.Context, name string, c cloudprovider.Interface) error {
	p, ok := c.(Preparer)
	if !ok {
		return nil
	}
	if err := p.Prepare(ctx); err != nil {
		return fmt.Errorf("cloud provider %q: %w", name, err)
	}
	return nil
}
