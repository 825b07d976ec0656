package openstack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
)

// TLS termination (default-tls-container-ref, as upstream): the Service's TCP listeners are
// TERMINATED_HTTPS with that certificate (lbspec.go). With container-store = barbican (the
// default) the reference is checked in Barbican before any write, as upstream does: a
// reference Barbican does not hold would otherwise fail only at Octavia, half-way through a
// sync. A reference found is not read again for tlsCheckedFor, so an unchanged Service costs
// no Barbican read per sync.

const tlsCheckedFor = 10 * time.Minute

// barbicanRef splits a Barbican reference (https://<key-manager>/v1/containers/<uuid> or
// .../v1/secrets/<uuid>) into its kind and ID.
func barbicanRef(ref string) (kind, id string, err error) {
	parts := strings.Split(strings.TrimRight(ref, "/"), "/")
	if len(parts) >= 2 {
		kind, id = parts[len(parts)-2], parts[len(parts)-1]
	}
	if (kind != "containers" && kind != "secrets") || !objectIDRE.MatchString(id) {
		return "", "", fmt.Errorf("%q is not a Barbican container or secret reference (https://<key-manager>/v1/containers/<uuid> or .../v1/secrets/<uuid>); "+
			"with a certificate store other than Barbican set [LoadBalancer] container-store = external", ref)
	}
	return kind, id, nil
}

// checkTLSRef checks spec's TLS reference in Barbican when container-store is barbican.
func (l *loadBalancers) checkTLSRef(ctx context.Context, cl *clients, spec *lbSpec) error {
	if spec.tlsRef == "" || l.c.cfg.LoadBalancer.containerStore() != "barbican" {
		return nil
	}
	used := false
	for _, ls := range spec.listeners {
		used = used || ls.TLSRef != ""
	}
	if !used {
		return nil
	}
	if t, ok := l.tlsChecked.Load(spec.tlsRef); ok && time.Since(t.(time.Time)) < tlsCheckedFor {
		return nil
	}
	what := fmt.Sprintf("TLS container reference %q (annotation %s or [LoadBalancer] default-tls-container-ref)", spec.tlsRef, annTLSContainerRef)
	kind, id, err := barbicanRef(spec.tlsRef)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	km := cl.keyManager()
	if km == nil {
		return fmt.Errorf("%s: the catalog has no key-manager (Barbican) endpoint to check it in; set [LoadBalancer] container-store = external to skip the check", what)
	}
	if kind == "containers" {
		_, err = containers.Get(ctx, km, id).Extract()
	} else {
		_, err = secrets.Get(ctx, km, id).Extract()
	}
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusNotFound):
		return fmt.Errorf("%s: Barbican has no such %s", what, strings.TrimSuffix(kind, "s"))
	case err != nil:
		return fmt.Errorf("%s: checking it in Barbican: %w", what, err)
	}
	l.tlsChecked.Store(spec.tlsRef, time.Now())
	return nil
}
