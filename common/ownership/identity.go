// Package ownership is the one model of "ours" for every provider: which cluster and which
// Service a cloud object belongs to, written where no Service annotation can set it, and checked
// before every change or delete.
//
// An object is this Service's when it carries this cluster's ownership mark and this Service's
// namespace/name and UID. The UID tells a Service from an earlier one of the same name whose load
// balancer was left behind. Objects written before UIDs were recorded (by an earlier ccm, or by
// the upstream CCM) carry no UID; they match on cluster and namespace/name, and get the UID at
// their next write.
package ownership

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Tag keys, in the upstream AWS provider's vocabulary so that objects created by it are
// recognised after a migration. All of them are reserved: no user tag may set one.
const (
	// ClusterTagPrefix + cluster ID = "owned" marks an object this cluster created and may delete;
	// "shared" marks one it may use but never changes or deletes.
	ClusterTagPrefix = "kubernetes.io/cluster/"
	// ServiceTag holds "namespace/name" of the Service the object serves.
	ServiceTag = "kubernetes.io/service-name"
	// ServiceUIDTag holds the Service's metadata.uid.
	ServiceUIDTag = "kubernetes.io/service-uid"

	Owned  = "owned"
	Shared = "shared"
)

// Identity is who an object belongs to: a Service of one cluster.
type Identity struct {
	Cluster   string
	Namespace string
	Name      string
	UID       string
}

// Of returns the identity of svc in cluster.
func Of(cluster string, svc *v1.Service) Identity {
	return Identity{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
}

// Service is "namespace/name".
func (id Identity) Service() string { return id.Namespace + "/" + id.Name }

// Tags returns the ownership tags of an object created for id.
func (id Identity) Tags() map[string]string {
	t := map[string]string{
		ClusterTagPrefix + id.Cluster: Owned,
		ServiceTag:                    id.Service(),
	}
	if id.UID != "" {
		t[ServiceUIDTag] = id.UID
	}
	return t
}

// ErrNotOwned is what every ownership refusal wraps (errors.Is).
var ErrNotOwned = errors.New("not owned by this Service")

// NotOwnedError says which object was refused and why. Its text is safe for a Service's Events:
// it names the object (which the Service named or ccm looked up for it) and the reason, never
// the cluster or Service that does own it.
type NotOwnedError struct {
	Kind   string // "load balancer", "security group", ...
	ID     string
	Reason string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %q is not this Service's: %s", e.Kind, e.ID, e.Reason)
}

func (e *NotOwnedError) Unwrap() error { return ErrNotOwned }

// Refuse returns a NotOwnedError.
func Refuse(kind, id, reason string) error { return &NotOwnedError{Kind: kind, ID: id, Reason: reason} }

// Reasons, shared by Check and CheckDescription so that Events read the same everywhere.
const (
	reasonUnmarked     = "it carries no ownership mark of this cluster (created outside ccm, or by another cluster)"
	reasonShared       = "it is marked as shared with this cluster, which ccm never changes or deletes"
	reasonOtherService = "it belongs to another Service"
	reasonOtherUID     = "it belongs to an earlier Service of the same name (its UID differs)"
)

// Owner reads the owner from tags: ok only if the object is marked owned by cluster and names
// a Service. The UID is "" for objects written before UIDs were recorded.
func Owner(cluster string, tags map[string]string) (Identity, bool) {
	if tags[ClusterTagPrefix+cluster] != Owned {
		return Identity{}, false
	}
	ns, name, ok := strings.Cut(tags[ServiceTag], "/")
	if !ok || ns == "" || name == "" {
		return Identity{}, false
	}
	return Identity{Cluster: cluster, Namespace: ns, Name: name, UID: tags[ServiceUIDTag]}, true
}

// Check returns nil if tags prove that the object kind/objID belongs to id, else a NotOwnedError.
func Check(id Identity, kind, objID string, tags map[string]string) error {
	owner, ok := Owner(id.Cluster, tags)
	switch {
	case !ok && tags[ClusterTagPrefix+id.Cluster] == Shared:
		return Refuse(kind, objID, reasonShared)
	case !ok:
		return Refuse(kind, objID, reasonUnmarked)
	}
	return match(id, owner, kind, objID)
}

// IsExactly reports whether tags prove the object belongs to id with id's UID recorded: what an
// object found by its tags alone (not by a name derived from the Service) must show. Tags
// without a UID can be copied by anyone who can tag (an upstream cluster copies a tenant's
// additional tags verbatim), so only a name ccm derives for the Service, or upstream's, backs
// them.
func IsExactly(id Identity, tags map[string]string) bool {
	return Is(id, tags) && (id.UID == "" || tags[ServiceUIDTag] == id.UID)
}

// Is reports whether tags prove the object belongs to id.
func Is(id Identity, tags map[string]string) bool { return Check(id, "", "", tags) == nil }

func match(id, owner Identity, kind, objID string) error {
	if owner.Namespace != id.Namespace || owner.Name != id.Name {
		return Refuse(kind, objID, reasonOtherService)
	}
	if owner.UID != "" && id.UID != "" && owner.UID != id.UID {
		return Refuse(kind, objID, reasonOtherUID)
	}
	return nil
}

// NeedsUID reports whether an owned object predates UID records and should get id's UID at its
// next write.
func NeedsUID(id Identity, tags map[string]string) bool {
	return id.UID != "" && tags[ServiceUIDTag] == "" && Is(id, tags)
}
