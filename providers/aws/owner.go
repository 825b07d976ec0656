package aws

// Ownership: which cloud objects are this Service's, what a Service may name, and what its
// errors may say.

import (
	"fmt"
	"regexp"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// maxRuleDescription is EC2's limit on a security group rule's description.
const maxRuleDescription = 255

// identity is the owner of svc's objects in this cluster.
func (l *loadBalancers) identity(svc *v1.Service) ownership.Identity {
	return ownership.Of(l.c.cfg.ClusterID(), svc)
}

// ownTags are the tags of an object made for id: the user's (validated by annotations.Parse) with
// the ownership tags last, and extra bookkeeping (the fingerprint) on top.
func ownTags(id ownership.Identity, user map[string]string, extra map[string]string) map[string]string {
	tags := map[string]string{}
	for k, v := range user {
		if !annotations.ReservedTag(k) { // annotations.Parse refused them already; never write them regardless
			tags[k] = v
		}
	}
	for k, v := range id.Tags() {
		tags[k] = v
	}
	for k, v := range extra {
		tags[k] = v
	}
	return tags
}

// ruleDescription marks an ingress rule as this Service's (EC2 keeps it with the rule).
func ruleDescription(id ownership.Identity, role string) string {
	return ownership.Description(id, role, maxRuleDescription)
}

// allow is the operator's allow-list from [Global] AllowedResourceNamespaces / AllowedResourceIDs.
func (c *Config) allow() ownership.Allow {
	a, err := ownership.ParseAllow(c.Global.AllowedResourceNamespaces, c.Global.AllowedResourceIDs)
	if err != nil { // Validate refused it already
		return ownership.Allow{}
	}
	return a
}

// Account IDs, ARNs (which carry account, role and user names) and access key IDs never reach a
// Service's Events: the library turns every error of the LoadBalancer methods into one.
var (
	arnRE       = regexp.MustCompile(`arn:aws[A-Za-z0-9-]*:[^\s"',;()\[\]{}<>]*`)
	accountRE   = regexp.MustCompile(`\b\d{12}\b`)
	accessKeyRE = regexp.MustCompile(`\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{12,}\b`)
)

// redactText removes ARNs, account IDs and access key IDs from s.
func redactText(s string) string {
	s = arnRE.ReplaceAllString(s, "arn:(redacted)")
	s = accountRE.ReplaceAllString(s, "(account)")
	return accessKeyRE.ReplaceAllString(s, "(access key)")
}

// redactedError is an error whose text is safe for a tenant; errors.Is/As still see the cause
// (a RetryError, ErrNotOwned, an API error code).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// publicError is err as a Service's Event may show it: the operation, the error code and
// ccm's own words stay; ARNs, account IDs and access keys go.
func publicError(err error) error {
	if err == nil {
		return nil
	}
	msg := redactText(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// errEmptyAnswer is an AWS answer that lacks what the call creates (a load balancer, a target
// group, a group ID): no panic, an error, and the next try reads what exists.
func errEmptyAnswer(op, name string) error {
	return fmt.Errorf("aws: %s %s: the answer holds no result; retrying", op, name)
}

// tagsHold reports whether have carries every tag of want with its value.
func tagsHold(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
