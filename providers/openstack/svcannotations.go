package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// reasonAnnotationsNotWritten: the Service's load-balancer-id/-address annotations could not be
// written (the load balancer itself is fine).
const reasonAnnotationsNotWritten = "LoadBalancerAnnotationsNotWritten"

// serviceAnnotator writes upstream's two informational annotations onto each Service ccm serves,
// as the upstream CCM does with its own client: load-balancer-id (the ID other Services name to
// share the load balancer, as upstream documents) and load-balancer-address (its address).
// Runbooks and tools written for upstream read them. A Service whose annotations already say so
// costs nothing; a tenant's edit of them is put back (ccm reads only load-balancer-id, and only
// as a request checked against the load balancer's ownership).
type serviceAnnotator struct {
	mu     sync.Mutex
	client kubernetes.Interface // nil until Initialize: nothing is written then
}

func (a *serviceAnnotator) start(b cloudprovider.ControllerClientBuilder) {
	client, err := b.Client("openstack-cloud-provider")
	if err != nil {
		klog.ErrorS(err, "No API client for writing load-balancer-id and load-balancer-address onto Services")
		return
	}
	a.mu.Lock()
	a.client = client
	a.mu.Unlock()
}

// annotationPatch is the JSON merge patch that gives svc the load balancer's id and address, or
// nil when its annotations hold them already. Pure.
func annotationPatch(svc *v1.Service, id, addr string) []byte {
	want := map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: addr}
	set := map[string]string{}
	for k, v := range want {
		if v != "" && svc.Annotations[k] != v {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return nil
	}
	meta := map[string]any{"annotations": set}
	if svc.UID != "" {
		// A precondition: the API server refuses a patch whose uid differs (immutable field), so
		// a Service deleted and made again under the same name never gets the old one's values.
		meta["uid"] = string(svc.UID)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": meta}) // strings only: cannot fail
	return patch
}

// annotate writes the annotations svc lacks. A failure is returned for an Event; the load
// balancer serves either way, so the caller does not fail the sync on it.
func (a *serviceAnnotator) annotate(ctx context.Context, svc *v1.Service, id, addr string) error {
	patch := annotationPatch(svc, id, addr)
	a.mu.Lock()
	client := a.client
	a.mu.Unlock()
	if patch == nil || client == nil {
		return nil
	}
	_, err := client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) && strings.Contains(err.Error(), "uid") {
		return nil // the Service is gone, or replaced (the UID precondition): nothing to annotate
	}
	if err != nil {
		return fmt.Errorf("writing annotations %s and %s onto the Service: %w", annLoadBalancerID, annLoadBalancerAddress, err)
	}
	return nil
}

// recordedLoadBalancer: the Service's load-balancer-id is a CCM's record, not a request to
// share: load-balancer-address, written with it, is an address the Service's status serves. A
// Service that asks to share a load balancer names it before it has that address. Pure.
func recordedLoadBalancer(svc *v1.Service) bool {
	a, err := netip.ParseAddr(svc.Annotations[annLoadBalancerAddress])
	return err == nil && svc.Annotations[annLoadBalancerID] != "" && slices.Contains(statusAddrs(svc), a.Unmap())
}
