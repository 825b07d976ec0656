package servicecontroller

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// Classes says which Services of type LoadBalancer this controller serves, by
// spec.loadBalancerClass. The library serves only Services without a class; a ccm configured
// with classes can share a cluster, class by class, with another implementation (another ccm,
// MetalLB, kube-vip) that serves the others.
type Classes struct {
	// Names are the loadBalancerClass values served.
	Names []string
	// Unclassed: also serve Services without spec.loadBalancerClass (the library's only case).
	Unclassed bool
}

// DefaultClasses is the library's behaviour: Services without a class, no class.
func DefaultClasses() Classes { return Classes{Unclassed: true} }

// Validate checks the class names as the API server checks spec.loadBalancerClass (a
// label-style key with a domain prefix), so a class no Service can carry is an error at start.
func (c Classes) Validate() error {
	seen := map[string]bool{}
	for _, n := range c.Names {
		if errs := validation.IsQualifiedName(n); len(errs) > 0 || !strings.Contains(n, "/") {
			return fmt.Errorf("--load-balancer-class %q: a Service's loadBalancerClass is a domain-prefixed name such as example.com/internal-vip (%s)",
				n, strings.Join(errs, "; "))
		}
		if seen[n] {
			return fmt.Errorf("--load-balancer-class %q is given twice", n)
		}
		seen[n] = true
	}
	if len(c.Names) == 0 && !c.Unclassed {
		return fmt.Errorf("no Service can be served: --serve-unclassed-services=false needs at least one --load-balancer-class")
	}
	return nil
}

// servesClass reports whether a Service with this class (nil: none) is ours.
func (c Classes) servesClass(class *string) bool {
	if class == nil {
		return c.Unclassed
	}
	for _, n := range c.Names {
		if n == *class {
			return true
		}
	}
	return false
}

// Wants reports whether svc should have a load balancer made by this controller.
func (c Classes) Wants(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeLoadBalancer && c.servesClass(svc.Spec.LoadBalancerClass)
}

// NeedsCleanup reports whether svc carries the cleanup finalizer and no longer wants a load
// balancer (being deleted, or no longer of type LoadBalancer), and may be ours. Other load
// balancer implementations use the same finalizer, so a Service of a class we do not serve is
// never touched (the library would remove their finalizer). The API server clears a Service's
// class when its type leaves LoadBalancer, so a Service without a class and without the type
// may have been any implementation's: each one looks for its own load balancer.
func (c Classes) NeedsCleanup(svc *v1.Service) bool {
	if !servicehelper.HasLBFinalizer(svc) {
		return false
	}
	if svc.DeletionTimestamp == nil && svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		return false
	}
	if svc.Spec.Type != v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil {
		return true
	}
	return c.servesClass(svc.Spec.LoadBalancerClass)
}
