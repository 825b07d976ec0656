package servicecontroller

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
)

// toBeDeletedTaint is the taint the cluster autoscaler puts on a Node it is about to remove.
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// The Node predicates of k8s.io/cloud-provider v0.37's service controller. A load balancer's
// members are the Nodes that are not being deleted, not labelled
// node.kubernetes.io/exclude-from-external-load-balancers (unless the value parses as false)
// and not tainted for removal by the cluster autoscaler. v0.37 applies neither readiness nor
// externalTrafficPolicy to the member set: every LoadBalancer Service gets the same Nodes (for
// ETP=Local, the cloud's health check against healthCheckNodePort picks the Nodes with
// endpoints), and a Node's readiness changing triggers no sync.

// included: the exclusion label is absent, or its value parses as false. A value that does
// not parse excludes the Node.
func included(n *v1.Node) bool {
	v, ok := n.Labels[v1.LabelNodeExcludeBalancers]
	if !ok {
		return true
	}
	exclude, err := strconv.ParseBool(v)
	return err == nil && !exclude
}

func notToBeDeleted(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == toBeDeletedTaint {
			return false
		}
	}
	return true
}

// Member reports whether n belongs in every load balancer's member set.
func Member(n *v1.Node) bool {
	return n.DeletionTimestamp.IsZero() && included(n) && notToBeDeleted(n)
}

// Members returns the Nodes that pass Member, in the order given.
func Members(nodes []*v1.Node) []*v1.Node {
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		if Member(n) {
			out = append(out, n)
		}
	}
	return out
}

// NodeUpdateMatters reports whether an updated Node can change a member set in a way that a
// sync would see. As in the library, only the exclusion label and the providerID count: a
// taint or a deletion timestamp added later is applied at the next sync for another reason
// (so connections drain), and Node adds and deletes always count.
func NodeUpdateMatters(old, cur *v1.Node) bool {
	return included(old) != included(cur) || old.Spec.ProviderID != cur.Spec.ProviderID
}

// Digest identifies a member set by what a provider is given of each Node that a sync compares:
// its name and providerID, independent of order. Each Service keeps only this (16 bytes)
// of the set it was last synced with, not the Nodes.
type Digest [16]byte

// DigestOf returns the digest of the member set nodes (already filtered).
func DigestOf(nodes []*v1.Node) Digest {
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		// NUL cannot appear in a Node name or a providerID, so the pairs cannot run together.
		keys[i] = n.Name + "\x00" + n.Spec.ProviderID + "\x00"
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
	}
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}

// memberSet is the member set, with its digest. Each provider call gets a copy of the slice
// (a provider may sort or filter it in place while another call reads its own); the Nodes
// are the informer's, shared as everywhere, and never modified.
type memberSet struct {
	nodes  []*v1.Node
	digest Digest
}

// memberCache computes the member set once per Node change instead of once per Service sync:
// with 5,000 Nodes each sync listed, filtered and hashed every Node (about 400 KB of garbage
// and a sort of 5,000 strings), and 10,000 Services made that 4 GB and minutes of CPU.
// Every Node event that changes the object bumps gen (after the informer has stored it, as
// handlers run after the store is updated), and a get at another gen lists again; so a sync
// sees the Nodes the lister holds, up to a handler's lag, which the member pass that the same
// event queues makes good.
type memberCache struct {
	gen atomic.Uint64
	mu  sync.Mutex
	set memberSet
	at  uint64 // gen the set was computed at
	ok  bool
}

// invalidate marks the cached set stale.
func (m *memberCache) invalidate() { m.gen.Add(1) }

// get returns the member set, listing the Nodes only if one changed since the last list.
// Concurrent callers wait for one list instead of each making their own.
func (m *memberCache) get(list func() ([]*v1.Node, error)) (memberSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.gen.Load()
	if m.ok && m.at == g {
		return m.set, nil
	}
	all, err := list()
	if err != nil {
		return memberSet{}, err
	}
	members := Members(all)
	m.set, m.at, m.ok = memberSet{nodes: members, digest: DigestOf(members)}, g, true
	return m.set, nil
}

// NodeChanged reports whether a Node update event carries a new object, not a resync's
// identical copy. Any change invalidates the cached member set, so a sync hands providers the
// Nodes as the lister holds them (addresses and labels included), as the library's does.
func NodeChanged(old, cur *v1.Node) bool {
	return old.ResourceVersion != cur.ResourceVersion || old.ResourceVersion == ""
}
