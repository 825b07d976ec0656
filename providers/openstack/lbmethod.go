package openstack

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/config"
)

// methodOVN is the only lb_algorithm of ovn-octavia-provider: OVN balances by a hash of the
// source IP and port, and the provider refuses every other algorithm (Octavia answers 501,
// "OVN provider does not support ROUND_ROBIN algorithm"). Upstream sends it whenever
// lb-provider is ovn, whatever lb-method says.
const methodOVN = "SOURCE_IP_PORT"

// methodOf is the pools' lb_algorithm: the lb-method annotation, else [LoadBalancer]
// lb-method; SOURCE_IP_PORT with the ovn provider, with a Warning naming the annotation when it
// asks for another (the config's key is reported at start-up: ovnMethodNotices). Pure.
func methodOf(svc *v1.Service, cfg LBConfig, provider string, warn *[]string) string {
	v, asked := svc.Annotations[annLBMethod]
	if provider == providerOVN {
		if asked && strings.ToUpper(v) != methodOVN {
			*warn = append(*warn, fmt.Sprintf("annotation %s: %q is not used: lb-provider = ovn balances by %s only (the provider refuses any other algorithm), as upstream", annLBMethod, v, methodOVN))
		}
		return methodOVN
	}
	method := strings.ToUpper(cfg.LBMethod)
	if !asked {
		return method
	}
	if !lbMethods[strings.ToUpper(v)] {
		*warn = append(*warn, fmt.Sprintf("annotation %s: %q is not ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT; using %s", annLBMethod, v, method))
		return method
	}
	return strings.ToUpper(v)
}

// ovnMethodNotices is the start-up notice for a [LoadBalancer] lb-method written with another
// algorithm than SOURCE_IP_PORT while lb-provider is ovn (methodOf does not use it), with its
// line: said once for the config, not on every Service. The default, not written, is no news.
// Pure.
func (c *Config) ovnMethodNotices() []string {
	lb := c.LoadBalancer
	line := c.line(secLB, "", "lb-method")
	if lb.LBProvider != providerOVN || line == 0 || strings.ToUpper(lb.LBMethod) == methodOVN {
		return nil
	}
	return []string{config.Problem{Line: line, Section: secLB, Key: "lb-method",
		Msg: fmt.Sprintf("%q is not used: lb-provider = ovn balances by %s only (the provider refuses any other algorithm), so every pool gets it, as upstream", lb.LBMethod, methodOVN)}.String()}
}
