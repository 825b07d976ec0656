// Package fingerprint is the shared way to make zero cloud writes when nothing changed: a
// provider computes the fingerprint of the desired state of a cloud resource, stores it on the
// resource when it writes (a tag, a description field) and, on the next reconcile, after a
// restart or a failover, compares the stored fingerprint with the desired one before writing.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Of returns a short stable hash of v's JSON encoding (map keys are sorted by encoding/json;
// callers sort slices whose order does not matter, such as backend nodes).
func Of(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Desired-state structs are plain data; this is a programming error worth seeing.
		panic(fmt.Sprintf("fingerprint: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// Changed reports whether the cloud resource needs a write: stored is what the resource
// carries ("" when it has no fingerprint, e.g. created by another tool), desired is Of(desired).
func Changed(stored, desired string) bool { return stored == "" || stored != desired }
