package aws

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// The provider's side of the Service annotations, which internal/annotations reads: the
// Warnings it records and the checks that need its config.

// adviseUnused records o's advice as one Warning on svc (once an hour while it holds).
func (l *loadBalancers) adviseUnused(svc *v1.Service, o *annotations.Options) {
	if len(o.Advice) > 0 {
		l.c.events.Advise(svc, reasonUnusedAnnotation, strings.Join(o.Advice, "; "))
	}
}

// reasonUnusedAnnotation is the Warning's reason for annotations accepted but not used; the
// OpenStack provider's word for the same.
const reasonUnusedAnnotation = "UnsupportedAnnotation"

// reasonListenerKeptTLS is the Warning's reason when a TLS listener is kept against ssl-ports.
const reasonListenerKeptTLS = "LoadBalancerListenerKeptEncrypted"

// checker is the table's checks that need no cloud call; the shared kube-proxy probe port is
// the operator's, so a health check may name it.
func (c *Config) checker() *reach.Checker {
	ch := &reach.Checker{Table: annotations.Table, Prefixes: []string{annotations.Prefix}, Words: []string{annotations.TrafficPort}}
	if p, _, ok := c.sharedProbe(); ok {
		ch.ExtraPorts = []int32{p}
	}
	return ch
}
