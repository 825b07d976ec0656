// Package reach is what a Service's annotations can reach in the cloud, and the one check per
// kind of reach that every provider applies before it makes a cloud call.
//
// A tenant who can write Services in one namespace writes annotations; ccm acts on them with
// credentials for the whole account, project or vCenter. Each provider therefore lists every
// annotation it reads in one Table, with its Reach: a cloud object it names, ports it opens on
// the Nodes, address ranges it admits, a pattern it compiles, free text it sends, or nothing.
// The table is the single source for the provider's parsing, the docs (docs/security.md) and
// the generated hostile suite of common/cloudtest, so an annotation added without a reach
// fails a test, and one added with a reach is attacked by the suite without anyone writing
// the case.
package reach

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is what an annotation's value can reach.
type Kind string

const (
	// Setting: a number, a boolean or one of fixed words; it reaches nothing outside the
	// Service's own load balancer.
	Setting Kind = "setting"
	// Object: names a cloud object (Annotation.Object is its kind); used only when it is
	// provably this Service's (or, for kinds Annotation.Cluster marks, this cluster's), or
	// when the operator allowed it in the cloud config (Named check).
	Object Kind = "object"
	// NodePort: a port ccm opens or probes on the Nodes; only the Service's own nodePorts and
	// health-check nodePort (OwnNodePorts, checked by Checker.Values).
	NodePort Kind = "node port"
	// Ranges: client address ranges the load balancer admits; normalised before any decision
	// and bounded in number (PrefixList).
	Ranges Kind = "ranges"
	// Pattern: a regular expression ccm compiles; bounded in size, compiled once per value
	// (Patterns check).
	Pattern Kind = "pattern"
	// Text: free text sent to the cloud (tags, paths, names, selectors); bounded in size and
	// never used to find an object.
	Text Kind = "text"
)

// Kinds are the reach kinds, in the order the docs list them.
var Kinds = []Kind{Object, NodePort, Ranges, Pattern, Text, Setting}

// Annotation is one annotation a provider reads.
type Annotation struct {
	Name  string // the full annotation key
	Reach Kind
	// Object is the kind of cloud object an Object annotation names ("security group",
	// "Elastic IP"); List: the value is a comma-separated list of them.
	Object string
	List   bool
	// Cluster: an object of this kind tagged for the cluster (not for one Service) is the
	// cluster's to use, as subnets tagged kubernetes.io/cluster/<id> are.
	Cluster bool
	// Untagged: ccm does not read this kind's ownership (a certificate, a bucket, a network):
	// only the operator's allow-list (or the cloud config) admits one.
	Untagged bool
	// With are the annotations this one needs to take effect (access logs need
	// access-log-enabled); the hostile suite sets them beside it.
	With map[string]string
	// Max is the longest value accepted (bytes); 0 is MaxValue (MaxPattern for a Pattern).
	Max int
	// Check says, for the docs, how the reach is checked beyond the kind's own check.
	Check string
}

// MaxValue is the default bound on an annotation value: larger than any value the upstream
// providers document (AWS's 50 tags of 128+256 bytes fit), small enough that no parser sees
// unbounded input.
const MaxValue = 24 << 10

// MaxPattern is the bound on a pattern: a subnet-name expression needs tens of bytes; an
// 8 KiB one costs seconds of compiling.
const MaxPattern = 512

// Limit is a's bound on its value's length.
func (a Annotation) Limit() int {
	switch {
	case a.Max > 0:
		return a.Max
	case a.Reach == Pattern:
		return MaxPattern
	}
	return MaxValue
}

// Table is a provider's annotations.
type Table []Annotation

// Lookup returns the annotation named name.
func (t Table) Lookup(name string) (Annotation, bool) {
	for _, a := range t {
		if a.Name == name {
			return a, true
		}
	}
	return Annotation{}, false
}

// Validate reports an annotation without a known reach, an Object annotation without an
// object kind, and a name listed twice: a provider's table test calls it, so an annotation
// cannot be added without saying what it reaches.
func (t Table) Validate() error {
	var bad []string
	seen := map[string]bool{}
	for _, a := range t {
		switch {
		case a.Name == "":
			bad = append(bad, "an annotation without a name")
		case seen[a.Name]:
			bad = append(bad, a.Name+": listed twice")
		case !slices.Contains(Kinds, a.Reach):
			bad = append(bad, fmt.Sprintf("%s: reach %q is not one of %v", a.Name, a.Reach, Kinds))
		case a.Reach == Object && a.Object == "":
			bad = append(bad, a.Name+": names an object but not its kind")
		case a.Reach != Object && (a.Object != "" || a.Cluster || a.List || a.Untagged):
			bad = append(bad, a.Name+": object fields on a "+string(a.Reach)+" annotation")
		}
		seen[a.Name] = true
	}
	if len(bad) > 0 {
		return fmt.Errorf("annotation table: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Count is the number of annotations of each reach kind.
func (t Table) Count() map[Kind]int {
	out := map[Kind]int{}
	for _, a := range t {
		out[a.Reach]++
	}
	return out
}
