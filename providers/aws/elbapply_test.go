package aws

import (
	"reflect"
	"testing"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
)

// The plan compares what the Service asks for: every setting of desired that the ELB carries
// reaches elbplan.Desired, the attributes as upstream's defaults when the Service sets none.
func TestPlanDesired(t *testing.T) {
	d := &desired{Scheme: "internal", Subnets: []string{"subnet-a"}, Listeners: []string{"SSL:443:TCP:30443:arn:c"},
		HealthCheck: "TCP:30443", HC: annotations.HCOptions{Interval: 10, Timeout: 5, Healthy: 2, Unhealthy: 6}, CrossZone: true,
		ProxyProtocol: true, SSLPolicy: "ELBSecurityPolicy-2016-08", groupIDs: []string{"sg-own", "sg-extra"}}
	want := elbplan.Desired{Scheme: "internal", Subnets: []string{"subnet-a"}, Listeners: []string{"SSL:443:TCP:30443:arn:c"},
		HealthCheck: "TCP:30443", Interval: 10, Timeout: 5, Healthy: 2, Unhealthy: 6, CrossZone: true,
		ProxyProtocol: true, SSLPolicy: "ELBSecurityPolicy-2016-08", Groups: []string{"sg-own", "sg-extra"}, Attrs: elbplan.Attrs{IdleTimeout: 60}}
	if got := d.planDesired(); !reflect.DeepEqual(got, want) {
		t.Errorf("planDesired:\n got %+v\nwant %+v", got, want)
	}
	d.Attrs = &annotations.ELBAttrs{IdleTimeout: 120, Draining: true, DrainingTimeout: 30, AccessLog: true, EmitInterval: 5, Bucket: "b", Prefix: "p"}
	want.Attrs = elbplan.Attrs{IdleTimeout: 120, Draining: true, DrainingTimeout: 30, AccessLog: true, EmitInterval: 5, Bucket: "b", Prefix: "p"}
	if got := d.planDesired(); got.Attrs != want.Attrs {
		t.Errorf("planDesired attributes %+v, want %+v", got.Attrs, want.Attrs)
	}
}
