// Package cloudtest is the conformance suite: the contract of k8s.io/cloud-provider's cloud.go
// written down once, run by every provider against its simulator through its real client.
//
// A provider's test calls Run with a Harness over its simulator. The suite asks the simulator
// for facts (its write count, the tags on a load balancer) instead of guessing them.
package cloudtest

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
)

// T is the part of testing.T the checks use, so the suite's own tests can run a check against a
// deliberately broken provider and see it fail.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// Harness is a provider's simulator as the suite sees it.
type Harness interface {
	// NewCloud returns a cloud (factory run, Initialize called) talking to the simulator. Called
	// again, it is a restart: a new process, the same cloud state.
	NewCloud(t T) cloudprovider.Interface
	// AddInstance creates a running machine and returns the Node a kubelet would register for it
	// (no providerID yet) and the metadata the cloud must report for it.
	AddInstance(t T, name string) (*v1.Node, cloudprovider.InstanceMetadata)
	// BreakInstances makes instance look-ups fail as in a cloud outage, until restore is called.
	BreakInstances(t T) (restore func())
	// Writes is the number of mutating calls the simulator has served so far.
	Writes() int
	// LoadBalancerTags returns the tags the cloud holds on svc's load balancer; ok is false if
	// there is no such load balancer.
	LoadBalancerTags(t T, clusterName string, svc *v1.Service) (tags map[string]string, ok bool)
	// MaxNameLen is the cloud's limit on load balancer names.
	MaxNameLen() int
}

// Config is what Run needs.
type Config struct {
	Harness     Harness
	ClusterName string // default "conformance"
	// SkipLoadBalancer is for providers without load balancers (those checks are not run).
	SkipLoadBalancer bool
	// Pending is how long a load balancer call answered with an api.RetryError is made again,
	// as the service controller would: a real cloud takes seconds to provision. 0 (a
	// simulator that provisions at once): a RetryError is a failure.
	Pending time.Duration
}

// Check is one point of the contract.
type Check struct {
	Name         string
	LoadBalancer bool // needs a LoadBalancer implementation
	Hostile      bool // needs a HostileHarness (every provider with load balancers has one)
	Drift        bool // needs a DriftHarness (every provider with load balancers has one)
	Routes       bool // needs a RouteHarness (every provider whose cloud has Routes() has one)
	Run          func(t T, c Config)
}

// Run runs every check as a subtest.
func Run(t *testing.T, c Config) {
	if c.ClusterName == "" {
		c.ClusterName = "conformance"
	}
	_, routeHarness := c.Harness.(RouteHarness)
	if _, routes := c.Harness.NewCloud(t).Routes(); routes && !routeHarness {
		t.Errorf("the provider's cloud has Routes() but its harness is no cloudtest.RouteHarness: the routes group cannot run")
	}
	for _, check := range Checks {
		if check.LoadBalancer && c.SkipLoadBalancer {
			t.Logf("%s: not applicable, the provider has no load balancers", check.Name)
			continue
		}
		if check.Routes && !routeHarness {
			t.Logf("%s: not applicable, the provider has no routes", check.Name)
			continue
		}
		t.Run(check.Name, func(t *testing.T) { check.Run(t, c) })
	}
}

// again calls f until it returns anything but an api.RetryError, or c.Pending has passed,
// waiting as each RetryError asks (at most a second); it returns f's last error.
func again(c Config, f func() error) error {
	deadline := time.Now().Add(c.Pending)
	for {
		err := f()
		var retry *api.RetryError
		if err == nil || !errors.As(err, &retry) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(min(retry.RetryAfter(), time.Second))
	}
}
