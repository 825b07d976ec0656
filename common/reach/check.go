package reach

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

// ErrRefused is what every refusal of this package wraps (an object not owned also wraps
// ownership.ErrNotOwned).
var ErrRefused = errors.New("refused by its reach check")

// Refused is a value refused by its annotation's reach check. Its text starts with the
// annotation's name, so the Warning Event the service controller makes of it names it, and
// it never quotes more of the value than the tenant's own item.
type Refused struct {
	Annotation string
	Why        string
	notOwned   bool
}

func (e *Refused) Error() string { return "annotation " + e.Annotation + ": " + e.Why }

// Is makes errors.Is(err, ErrRefused) hold, and errors.Is(err, ownership.ErrNotOwned) for an
// object that is not the Service's.
func (e *Refused) Is(target error) bool {
	return target == ErrRefused || (e.notOwned && target == ownership.ErrNotOwned)
}

// Refuse is a refusal of annotation's value, saying why.
func Refuse(annotation, format string, args ...any) error {
	return &Refused{Annotation: annotation, Why: fmt.Sprintf(format, args...)}
}

// Checker applies a table's checks that need no cloud call: sizes, node ports, ranges and
// patterns. Providers call Values before they parse the annotations, so no parser sees an
// unchecked value; objects are checked with Named once the provider has read them.
type Checker struct {
	Table Table
	// Prefixes are the annotation prefixes the provider owns: a value under one of them that
	// the table does not list is bounded too (the provider reports it as unknown).
	Prefixes []string
	// ExtraPorts are node ports the operator configured for every Service (kube-proxy's
	// health check port), which a NodePort annotation may name besides the Service's own.
	ExtraPorts []int32
	// Words are values of NodePort annotations that name no port ("traffic-port").
	Words []string
	// Patterns compiles Pattern values once each; nil: the package's shared cache.
	Patterns *Patterns
}

// Values checks every annotation of svc that the table lists (and bounds the unlisted ones
// under the provider's prefixes), in name order, and returns the first refusal.
func (c *Checker) Values(svc *v1.Service) error {
	for _, k := range slices.Sorted(maps.Keys(svc.Annotations)) {
		v := svc.Annotations[k]
		a, ok := c.Table.Lookup(k)
		if !ok {
			if c.ours(k) && len(v) > MaxValue {
				return Refuse(k, "the value is %d bytes, more than the %d accepted", len(v), MaxValue)
			}
			continue
		}
		if err := c.value(svc, a, v); err != nil {
			return err
		}
	}
	return nil
}

func (c *Checker) ours(k string) bool {
	for _, p := range c.Prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func (c *Checker) value(svc *v1.Service, a Annotation, v string) error {
	if len(v) > a.Limit() {
		return Refuse(a.Name, "the value is %d bytes, more than the %d accepted", len(v), a.Limit())
	}
	switch a.Reach {
	case NodePort:
		return c.nodePort(svc, a, v)
	case Ranges:
		if strings.TrimSpace(v) == "" {
			return nil // no ranges: the annotation is unset
		}
		_, err := PrefixList(a.Name, strings.Split(v, ","))
		return err
	case Pattern:
		// A leading "!" negates (the OpenStack provider's floating-subnet); the expression follows.
		if expr, ok := strings.CutPrefix(strings.TrimPrefix(strings.TrimSpace(v), "!"), PatternMark); ok {
			_, err := c.patterns().Compile(a.Name, expr)
			return err
		}
	}
	return nil
}

func (c *Checker) patterns() *Patterns {
	if c.Patterns != nil {
		return c.Patterns
	}
	return shared
}

// shared is the cache of the checkers that bring none.
var shared = NewPatterns()

// PatternMark starts a Pattern annotation's value that is a regular expression (the
// OpenStack provider's "~<regexp>"); other values are names.
const PatternMark = "~"

// nodePort admits a port number only when it is one of the Service's nodePorts, its
// health-check nodePort or an operator's ExtraPorts: a tenant must not open (or have the load
// balancer probe) the kubelet, SSH or another tenant's nodePort.
func (c *Checker) nodePort(svc *v1.Service, a Annotation, v string) error {
	if v == "" || slices.Contains(c.Words, v) {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil // not a number: the provider's parser says what it wants
	}
	if slices.Contains(OwnNodePorts(svc, c.ExtraPorts...), int32(n)) {
		return nil
	}
	return Refuse(a.Name, "port %d is not one of this Service's node ports (%s); a Service may only open or probe its own",
		n, portList(OwnNodePorts(svc, c.ExtraPorts...)))
}

// OwnNodePorts are the ports on the Nodes that svc owns: its nodePorts and health-check
// nodePort, and the operator's extra ports.
func OwnNodePorts(svc *v1.Service, extra ...int32) []int32 {
	out := slices.Clone(extra)
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, p.NodePort)
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		out = append(out, svc.Spec.HealthCheckNodePort)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func portList(ps []int32) string {
	if len(ps) == 0 {
		return "it has none yet"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// Evidence is what the cloud says of an object an annotation names.
type Evidence struct {
	// Tags are the object's tags or equivalent ownership marks (nil: the cloud keeps none for
	// this kind, e.g. a certificate ccm cannot read, so only the operator can allow it).
	Tags map[string]string
	// ClusterTagged: the object is tagged for this cluster (owned or shared), which is enough
	// for kinds the table marks Cluster.
	ClusterTagged bool
	// InUse names what already uses the object ("" if nothing): an object in use by
	// something else is never this Service's, whatever its tags say.
	InUse string
}

// Named decides whether the Service id may use the object objID that annotation a names:
// when the operator allowed it (by the Service's namespace or the object's ID), when it is
// free and its tags prove it is this Service's, or when a's kind is the cluster's and it is
// tagged for this cluster. The refusal names the annotation and says how to allow it; it
// names no owner.
func Named(id ownership.Identity, allow ownership.Allow, a Annotation, objID string, ev Evidence) error {
	if allow.Permits(id.Namespace, objID) {
		return nil
	}
	if ev.InUse == "" && (ownership.Check(id, a.Object, objID, ev.Tags) == nil || a.Cluster && ev.ClusterTagged) {
		return nil
	}
	why := "which this Service does not own"
	switch {
	case ev.InUse != "":
		why = "which " + ev.InUse + " already uses, so this Service does not own it"
	case a.Cluster:
		why = "which is not tagged " + ownership.ClusterTagPrefix + id.Cluster + " (owned or shared), so it is not this cluster's to use"
	}
	return &Refused{Annotation: a.Name, notOwned: true, Why: fmt.Sprintf(
		"names %s %q, %s; an operator can allow it in the cloud config by namespace or by ID", a.Object, objID, why)}
}
