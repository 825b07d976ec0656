package ownership

import (
	"strings"
)

// Clouds whose objects have no tags (Octavia listeners and pools, security group rules) carry
// ownership in their description, in one format:
//
//	ccm:<cluster> <namespace>/<name> <uid>[ <role>]
//
// The role (e.g. "health", "client") tells apart several objects of one Service. When the whole
// does not fit the cloud's limit, the namespace/name is written as "-": the cluster and UID still
// identify the Service.
const descPrefix = "ccm:"

// Description returns the ownership description of an object for id; role may be "". It fits
// max bytes whenever cluster, UID and role do (pass 0 for no limit).
func Description(id Identity, role string, max int) string {
	d := descPrefix + id.Cluster + " " + id.Service() + " " + uidOrDash(id.UID)
	if role != "" {
		d += " " + role
	}
	if max > 0 && len(d) > max {
		d = descPrefix + id.Cluster + " - " + uidOrDash(id.UID)
		if role != "" {
			d += " " + role
		}
	}
	return d
}

// ClusterDescription returns the description of an object a cluster's Services share (one no
// single Service owns, e.g. a rule every load balancer of a range needs): the Service is written
// as "-", so ParseDescription reads the cluster and role and no Service's CheckDescription
// accepts it.
func ClusterDescription(cluster, role string) string {
	d := descPrefix + cluster + " - -"
	if role != "" {
		d += " " + role
	}
	return d
}

func uidOrDash(uid string) string {
	if uid == "" {
		return "-"
	}
	return uid
}

// ParseDescription reads a description written by Description. ok is false for any other text.
// A namespace/name written as "-" comes back empty.
func ParseDescription(d string) (id Identity, role string, ok bool) {
	rest, found := strings.CutPrefix(d, descPrefix)
	if !found {
		return Identity{}, "", false
	}
	f := strings.Split(rest, " ")
	if len(f) < 3 || len(f) > 4 || f[0] == "" || f[2] == "" {
		return Identity{}, "", false
	}
	id.Cluster = f[0]
	if f[1] != "-" {
		ns, name, found := strings.Cut(f[1], "/")
		if !found || ns == "" || name == "" {
			return Identity{}, "", false
		}
		id.Namespace, id.Name = ns, name
	}
	if f[2] != "-" {
		id.UID = f[2]
	}
	if len(f) == 4 {
		role = f[3]
	}
	return id, role, true
}

// CheckDescription is Check for objects that carry ownership in their description.
func CheckDescription(id Identity, kind, objID, description string) error {
	owner, _, ok := ParseDescription(description)
	if !ok || owner.Cluster != id.Cluster {
		return Refuse(kind, objID, reasonUnmarked)
	}
	if owner.Namespace == "" { // shortened: the UID alone names the Service
		if owner.UID == "" || owner.UID != id.UID {
			return Refuse(kind, objID, reasonOtherService)
		}
		return nil
	}
	return match(id, owner, kind, objID)
}

// DescribedBy reports whether description proves the object belongs to id.
func DescribedBy(id Identity, description string) bool {
	return CheckDescription(id, "", "", description) == nil
}
