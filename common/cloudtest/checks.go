package cloudtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
)

// Checks is the contract, in the order Run runs it.
var Checks = []Check{
	{Name: "UnknownInstanceDoesNotExist", Run: unknownInstance},
	{Name: "CloudErrorIsAnError", Run: cloudError},
	{Name: "ProviderIDRoundTrip", Run: providerIDRoundTrip},
	{Name: "MetadataMatchesCloud", Run: metadataMatches},
	{Name: "EnsureTwiceWritesOnce", LoadBalancer: true, Run: ensureIdempotent},
	{Name: "RestartWithNothingChangedWritesNothing", LoadBalancer: true, Run: restartNoWrites},
	{Name: "UpdateChangesOnlyMembers", LoadBalancer: true, Run: updateMembers},
	{Name: "DeleteMissingIsNil", LoadBalancer: true, Run: deleteMissing},
	{Name: "GetAfterDeleteIsNotFound", LoadBalancer: true, Run: getAfterDelete},
	{Name: "UpdateAfterDeleteCreatesNothing", LoadBalancer: true, Run: updateAfterDelete},
	{Name: "NamesFitTheCloud", LoadBalancer: true, Run: namesFit},
	{Name: "LoadBalancersCarryOwnershipTags", LoadBalancer: true, Run: ownershipTags},
	{Name: "HostileAnnotationsAreRefused", LoadBalancer: true, Hostile: true, Run: hostileRefused},
	{Name: "GeneratedHostileAnnotationsAreRefused", LoadBalancer: true, Hostile: true, Run: generatedHostile},
	{Name: "TwoClustersWithTheSameServicesDoNotCollide", LoadBalancer: true, Hostile: true, Run: twoClusters},
	{Name: "OutOfBandChangesAreRepaired", LoadBalancer: true, Drift: true, Run: driftRepaired},
	{Name: "UpstreamStateIsTakenOverInPlace", LoadBalancer: true, Run: migrationTakesOver},
	{Name: "OrphanListingIsOwnedAndRechecked", LoadBalancer: true, Hostile: true, Run: orphansListedAndChecked},
	{Name: "RoutesFollowNodes", Routes: true, Run: routesFollowNodes},
	{Name: "OtherOwnersRoutesAreUntouched", Routes: true, Run: routesOfOthersUntouched},
}

var ctx = context.Background()

func instances(t T, cloud cloudprovider.Interface) cloudprovider.InstancesV2 {
	t.Helper()
	inst, ok := cloud.InstancesV2()
	if !ok || inst == nil {
		t.Fatalf("InstancesV2() is not implemented")
	}
	return inst
}

func loadBalancer(t T, cloud cloudprovider.Interface) cloudprovider.LoadBalancer {
	t.Helper()
	lb, ok := cloud.LoadBalancer()
	if !ok || lb == nil {
		t.Fatalf("LoadBalancer() is not implemented")
	}
	return lb
}

func unknownInstance(t T, c Config) {
	cloud := c.Harness.NewCloud(t)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cloudtest-no-such-node", UID: "uid-unknown"}}
	exists, err := instances(t, cloud).InstanceExists(ctx, node)
	if err != nil || exists {
		t.Errorf("InstanceExists(unknown) = (%v, %v), want (false, nil)", exists, err)
	}
}

func cloudError(t T, c Config) {
	cloud := c.Harness.NewCloud(t)
	node, _ := c.Harness.AddInstance(t, "cloudtest-outage")
	restore := c.Harness.BreakInstances(t)
	defer restore()
	exists, err := instances(t, cloud).InstanceExists(ctx, node)
	if err == nil {
		t.Errorf("InstanceExists during a cloud outage = (%v, nil); a failed cloud call must be an error, never a verdict", exists)
	}
	if _, err := instances(t, cloud).InstanceMetadata(ctx, node); err == nil {
		t.Errorf("InstanceMetadata during a cloud outage returned no error")
	} else if errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("InstanceMetadata during a cloud outage said InstanceNotFound: %v", err)
	}
}

func providerIDRoundTrip(t T, c Config) {
	cloud := c.Harness.NewCloud(t)
	node, want := c.Harness.AddInstance(t, "cloudtest-pid")
	inst := instances(t, cloud)
	md, err := inst.InstanceMetadata(ctx, node)
	if err != nil {
		t.Fatalf("InstanceMetadata: %v", err)
	}
	if md.ProviderID == "" || (want.ProviderID != "" && md.ProviderID != want.ProviderID) {
		t.Fatalf("providerID %q, want %q", md.ProviderID, want.ProviderID)
	}
	// With the providerID set, the instance is found by it, whatever the Node's name.
	byID := node.DeepCopy()
	byID.Name = "cloudtest-renamed"
	byID.Spec.ProviderID = md.ProviderID
	if exists, err := inst.InstanceExists(ctx, byID); err != nil || !exists {
		t.Errorf("InstanceExists by providerID %q = (%v, %v), want (true, nil)", md.ProviderID, exists, err)
	}
	md2, err := inst.InstanceMetadata(ctx, byID)
	if err != nil || md2.ProviderID != md.ProviderID {
		t.Errorf("metadata by providerID: %v, %v", md2, err)
	}
}

func metadataMatches(t T, c Config) {
	cloud := c.Harness.NewCloud(t)
	node, want := c.Harness.AddInstance(t, "cloudtest-md")
	md, err := instances(t, cloud).InstanceMetadata(ctx, node)
	if err != nil {
		t.Fatalf("InstanceMetadata: %v", err)
	}
	if md.InstanceType != want.InstanceType || md.Zone != want.Zone || md.Region != want.Region {
		t.Errorf("type/zone/region = %q/%q/%q, want %q/%q/%q", md.InstanceType, md.Zone, md.Region, want.InstanceType, want.Zone, want.Region)
	}
	if !slices.Equal(md.NodeAddresses, want.NodeAddresses) {
		t.Errorf("addresses = %v, want %v", md.NodeAddresses, want.NodeAddresses)
	}
	if down, err := instances(t, cloud).InstanceShutdown(ctx, node); err != nil || down {
		t.Errorf("InstanceShutdown(running) = (%v, %v), want (false, nil)", down, err)
	}
}

var svcSeq atomic.Int64

// newService returns a LoadBalancer Service with a unique name.
func newService(prefix string) *v1.Service {
	name := fmt.Sprintf("%s-%d", prefix, svcSeq.Add(1))
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cloudtest", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.ServiceSpec{
			Type:       v1.ServiceTypeLoadBalancer,
			Ports:      []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}},
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
		},
	}
}

// ensure creates svc's load balancer and checks its status has an address.
func ensure(t T, lb cloudprovider.LoadBalancer, c Config, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	var st *v1.LoadBalancerStatus
	err := again(c, func() (err error) {
		st, err = lb.EnsureLoadBalancer(ctx, c.ClusterName, svc, nodes)
		return err
	})
	if err != nil {
		t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	if st == nil || len(st.Ingress) == 0 || (st.Ingress[0].IP == "" && st.Ingress[0].Hostname == "") {
		t.Fatalf("EnsureLoadBalancer status %v has no IP or hostname", st)
	}
	return st
}

func twoNodes(t T, c Config, prefix string) []*v1.Node {
	a, _ := c.Harness.AddInstance(t, prefix+"-a")
	b, _ := c.Harness.AddInstance(t, prefix+"-b")
	return []*v1.Node{a, b}
}

func ensureIdempotent(t T, c Config) {
	cloud := c.Harness.NewCloud(t)
	lb := loadBalancer(t, cloud)
	nodes := twoNodes(t, c, "cloudtest-idem")
	svc := newService("idem")
	first := ensure(t, lb, c, svc, nodes)
	before := c.Harness.Writes()
	second := ensure(t, lb, c, svc.DeepCopy(), nodes)
	if w := c.Harness.Writes() - before; w != 0 {
		t.Errorf("second EnsureLoadBalancer with the same input made %d cloud writes, want 0", w)
	}
	if !equality.Semantic.DeepEqual(first.Ingress, second.Ingress) {
		t.Errorf("status changed: %v -> %v", first.Ingress, second.Ingress)
	}
}

func restartNoWrites(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	nodes := twoNodes(t, c, "cloudtest-restart")
	svcs := []*v1.Service{newService("restart"), newService("restart"), newService("restart")}
	var before []*v1.LoadBalancerStatus
	for _, s := range svcs {
		before = append(before, ensure(t, lb, c, s, nodes))
	}
	writes := c.Harness.Writes()
	restarted := loadBalancer(t, c.Harness.NewCloud(t)) // a new process: the cloud keeps its state
	for i, s := range svcs {
		// The restarted controller passes the Service as the API server has it: with its status.
		s = s.DeepCopy()
		s.Status.LoadBalancer = *before[i]
		if st := ensure(t, restarted, c, s, nodes); !equality.Semantic.DeepEqual(st.Ingress, before[i].Ingress) {
			t.Errorf("%s: status changed across the restart: %v -> %v", s.Name, before[i].Ingress, st.Ingress)
		}
	}
	if w := c.Harness.Writes() - writes; w != 0 {
		t.Errorf("restart with %d unchanged Services made %d cloud writes, want 0", len(svcs), w)
	}
}

func updateMembers(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	nodes := twoNodes(t, c, "cloudtest-upd")
	svc := newService("upd")
	st := ensure(t, lb, c, svc, nodes[:1])
	before := c.Harness.Writes()
	if err := again(c, func() error { return lb.UpdateLoadBalancer(ctx, c.ClusterName, svc, nodes) }); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	if c.Harness.Writes() == before {
		t.Errorf("UpdateLoadBalancer with a new node made no cloud write")
	}
	got, exists, err := lb.GetLoadBalancer(ctx, c.ClusterName, svc)
	if err != nil || !exists {
		t.Fatalf("GetLoadBalancer after update: %v %v", exists, err)
	}
	if !equality.Semantic.DeepEqual(got.Ingress, st.Ingress) {
		t.Errorf("UpdateLoadBalancer changed the address: %v -> %v", st.Ingress, got.Ingress)
	}
	before = c.Harness.Writes()
	if err := again(c, func() error { return lb.UpdateLoadBalancer(ctx, c.ClusterName, svc, nodes) }); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	if w := c.Harness.Writes() - before; w != 0 {
		t.Errorf("UpdateLoadBalancer with the same nodes made %d writes, want 0", w)
	}
}

func deleteMissing(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	if err := again(c, func() error { return lb.EnsureLoadBalancerDeleted(ctx, c.ClusterName, newService("never-created")) }); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted of a missing load balancer: %v, want nil", err)
	}
}

func getAfterDelete(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	svc := newService("del")
	ensure(t, lb, c, svc, twoNodes(t, c, "cloudtest-del"))
	if _, exists, err := lb.GetLoadBalancer(ctx, c.ClusterName, svc); err != nil || !exists {
		t.Fatalf("GetLoadBalancer after ensure = (%v, %v), want (true, nil)", exists, err)
	}
	if err := again(c, func() error { return lb.EnsureLoadBalancerDeleted(ctx, c.ClusterName, svc) }); err != nil {
		t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, c.ClusterName, svc); err != nil || exists {
		t.Errorf("GetLoadBalancer after delete = (%v, %v), want (false, nil)", exists, err)
	}
	if _, ok := c.Harness.LoadBalancerTags(t, c.ClusterName, svc); ok {
		t.Errorf("the cloud still holds the load balancer after delete")
	}
}

// updateAfterDelete: the library's node sync calls UpdateLoadBalancer for the Services it has
// cached, so also for one whose load balancer a worker has just deleted. The update may fail,
// but it must not create the load balancer again: nothing would ever delete that one.
func updateAfterDelete(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	svc := newService("updel")
	nodes := twoNodes(t, c, "cloudtest-updel")
	svc.Status.LoadBalancer = *ensure(t, lb, c, svc, nodes)
	if err := again(c, func() error { return lb.EnsureLoadBalancerDeleted(ctx, c.ClusterName, svc) }); err != nil {
		t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
	}
	err := lb.UpdateLoadBalancer(ctx, c.ClusterName, svc, nodes[:1])
	t.Logf("UpdateLoadBalancer after delete: %v", err)
	if _, ok := c.Harness.LoadBalancerTags(t, c.ClusterName, svc); ok {
		t.Errorf("UpdateLoadBalancer after EnsureLoadBalancerDeleted created the load balancer again")
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, c.ClusterName, svc); err != nil || exists {
		t.Errorf("GetLoadBalancer after delete and update = (%v, %v), want (false, nil)", exists, err)
	}
}

func namesFit(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	long := strings.Repeat("n", 63)
	seen := map[string]bool{}
	for _, svc := range []*v1.Service{newService("short"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: long, Name: long + "a", UID: "uid-long-a"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: long, Name: long + "b", UID: "uid-long-b"}}} {
		name := lb.GetLoadBalancerName(ctx, c.ClusterName, svc)
		if name == "" || len(name) > c.Harness.MaxNameLen() {
			t.Errorf("name %q (%d chars) does not fit the cloud's %d", name, len(name), c.Harness.MaxNameLen())
		}
		if seen[name] {
			t.Errorf("two Services share the name %q", name)
		}
		seen[name] = true
	}
}

func ownershipTags(t T, c Config) {
	lb := loadBalancer(t, c.Harness.NewCloud(t))
	svc := newService("owned")
	ensure(t, lb, c, svc, twoNodes(t, c, "cloudtest-own"))
	tags, ok := c.Harness.LoadBalancerTags(t, c.ClusterName, svc)
	if !ok {
		t.Fatalf("the cloud holds no load balancer for %s/%s", svc.Namespace, svc.Name)
	}
	checkOwner(t, c.ClusterName, svc, tags)
}

// checkOwner checks that tags name cluster and svc, its UID included, as the owner.
func checkOwner(t T, cluster string, svc *v1.Service, tags map[string]string) {
	t.Helper()
	owner, owned := ownership.Owner(cluster, tags)
	if !owned || owner != ownership.Of(cluster, svc) {
		t.Errorf("tags %v do not mark the load balancer as owned by cluster %q for %s/%s (UID %s)", tags, cluster, svc.Namespace, svc.Name, svc.UID)
	}
}
