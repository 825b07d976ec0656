package openstack

import (
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
)

// Session persistence follows the Service's sessionAffinity as upstream sets it
// (cloud-provider-openstack pkg/openstack/loadbalancer.go buildPoolCreateOpt): ClientIP is
// SOURCE_IP on every pool of the Service, whatever its protocol (UDP, SCTP, HTTP behind
// x-forwarded-for or TLS, PROXY); None is no persistence. Upstream writes it only when it
// creates a pool; ccm also compares it on every sync and updates the pool in place, so a
// changed sessionAffinity reaches the load balancer without replacing the listener.

// persistenceSourceIP is Octavia's session_persistence type for client-IP affinity.
const persistenceSourceIP = "SOURCE_IP"

// persistenceOf is the session_persistence type the Service's pools want ("" none). Pure.
func persistenceOf(svc *v1.Service) string {
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		return persistenceSourceIP
	}
	return ""
}

// persistenceOpts is the session_persistence written for typ: nil for none on a create
// (omitted), an empty value on an update (gophercloud sends it as null, which removes it).
func persistenceOpts(typ string) *pools.SessionPersistence {
	if typ == "" {
		return &pools.SessionPersistence{}
	}
	return &pools.SessionPersistence{Type: typ}
}

// observedPersistence is a pool's session_persistence as compared: its type, with the cookie
// for APP_COOKIE (ccm never writes a cookie type: one found was set by hand).
func observedPersistence(sp pools.SessionPersistence) string {
	if sp.CookieName != "" {
		return fmt.Sprintf("%s(%s)", sp.Type, sp.CookieName)
	}
	return sp.Type
}

// persistenceDrift: a difference is drift (an out-of-band change) only when the pool holds a
// persistence ccm never writes (a cookie type). SOURCE_IP present or absent may as well be a
// sessionAffinity change, which the listener's fingerprint does not record. Pure.
func persistenceDrift(have string) bool {
	return have != "" && have != persistenceSourceIP
}
