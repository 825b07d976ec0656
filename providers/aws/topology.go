package aws

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/providers/aws/internal/awsread"
)

// Node topology labels, as the upstream AWS CCM returns them in InstanceMetadata's
// AdditionalLabels (the node controller puts them on a Node when it initialises it, keeping
// any value already there):
//
//   - topology.k8s.aws/zone-id: the ID of the instance's zone (use1-az4), from one
//     DescribeAvailabilityZones of the region, kept for good and read again only when an
//     instance is in a zone it did not list (a newly opted-in Local Zone).
//   - topology.k8s.aws/network-node-layer-N, N from 1: the instance's EC2 instance topology
//     (DescribeInstanceTopology), top layer first.
//
// Each label is looked up only when the Node lacks it (upstream checks zone-id and
// network-node-layer-1). Instance topology exists for a few instance types only, so like
// upstream ccm remembers for 24 hours where there is none to ask for: a region that does not
// offer the call or denies it (UnsupportedOperation, UnauthorizedOperation: no labels, no
// error), an instance type EC2 left out of an answer, and an instance of a type that should
// have topology but was left out. Any other failure fails the Node's initialisation only for
// types that should have topology (SupportedTopologyInstanceTypePattern, default upstream's
// pattern below): the node controller retries it; for other types it is logged and the Node
// goes on without the layer labels. Look-ups arriving within 20 ms share one call (up to 100
// instance IDs per DescribeInstanceTopology, the API's limit).
const (
	labelZoneID            = "topology.k8s.aws/zone-id"
	labelNetworkNodePrefix = "topology.k8s.aws/network-node-layer-"

	topologySkipTTL = 24 * time.Hour
	maxTopologyIDs  = 100
)

// defaultTopologyTypes is upstream's default SupportedTopologyInstanceTypePattern: the
// families that must answer with a topology (hpc*, trn*, p*).
var defaultTopologyTypes = regexp.MustCompile(`^(hpc|trn|p)[0-9]+[a-z]*(-[a-z0-9]+)?(\.[0-9a-z]*)$`)

// topologyAPI is the part of the EC2 client the labels need (a seam for unit tests).
type topologyAPI interface {
	DescribeAvailabilityZones(context.Context, *ec2.DescribeAvailabilityZonesInput, ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
	DescribeInstanceTopology(context.Context, *ec2.DescribeInstanceTopologyInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTopologyOutput, error)
}

// nodeTopology answers the topology labels of instances, with the caches described above.
type nodeTopology struct {
	api      topologyAPI
	region   string
	required *regexp.Regexp // instance types that must have a topology
	now      func() time.Time

	mu    sync.Mutex
	zones map[string]string    // zone name -> zone ID
	skip  map[string]time.Time // "region/", "instance/" or "type/" + name -> until when not to ask

	zoneRead  sync.Mutex                        // held while the zones are read
	topoReads awsread.Batcher[string, []string] // instance ID -> network nodes; absent: not listed
}

// topologyPattern compiles SupportedTopologyInstanceTypePattern (empty: upstream's default).
func topologyPattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return defaultTopologyTypes, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("aws: [Global] SupportedTopologyInstanceTypePattern %q is not a regular expression: %w", p, err)
	}
	return re, nil
}

func newNodeTopology(api topologyAPI, region string, required *regexp.Regexp) *nodeTopology {
	t := &nodeTopology{api: api, region: region, required: required, now: time.Now,
		zones: map[string]string{}, skip: map[string]time.Time{}}
	t.topoReads.Fetch = t.fetchTopology
	return t
}

// labels returns the topology labels existing lacks for the instance id of type itype in zone.
func (t *nodeTopology) labels(ctx context.Context, existing map[string]string, zone, id, itype string) (map[string]string, error) {
	out := map[string]string{}
	if _, ok := existing[labelZoneID]; !ok && zone != "" {
		zid, err := t.zoneID(ctx, zone)
		if err != nil {
			return nil, err
		}
		out[labelZoneID] = zid
	}
	if _, ok := existing[labelNetworkNodePrefix+"1"]; ok || !t.mayAsk(id, itype) {
		return out, nil
	}
	got, err := t.topoReads.Get(ctx, []string{id})
	nodes, listed := got[id]
	v := judgeTopology(t.required.MatchString(itype), listed, nodes, err)
	switch v.skip {
	case skipRegion:
		t.remember("region/" + t.region)
	case skipInstance:
		t.remember("instance/" + id)
	case skipType:
		t.remember("type/" + itype)
	}
	if v.note != "" {
		detail := ""
		if err != nil {
			detail = " (" + publicError(err).Error() + ")"
		}
		if v.warning {
			klog.Warningf("Instance topology of %s (type %s, region %s): %s%s", id, itype, t.region, v.note, detail)
		} else {
			klog.V(2).InfoS("Instance topology: "+v.note, "instance", id, "instanceType", itype, "region", t.region)
		}
	}
	if v.fail {
		return nil, fmt.Errorf("aws: DescribeInstanceTopology for %s (type %s, which should have a topology): %w", id, itype, publicError(err))
	}
	maps.Copy(out, layerLabels(v.layers))
	return out, nil
}

// skip kinds: what an answer says has no topology to ask for.
const (
	skipNone = iota
	skipRegion
	skipInstance
	skipType
)

// topologyVerdict is what one instance's DescribeInstanceTopology answer means.
type topologyVerdict struct {
	layers []string // network nodes, top layer first
	skip   int      // what to remember for topologySkipTTL
	fail   bool     // the Node's initialisation fails (and is retried)
	note   string   // why there are no layer labels, for the log
	// warning: the note is for the operator (a missing permission, a failed call).
	warning bool
}

// judgeTopology is upstream's handling of one answer: required says the instance type
// matches SupportedTopologyInstanceTypePattern; listed that the answer holds the instance.
func judgeTopology(required, listed bool, nodes []string, err error) topologyVerdict {
	switch {
	case isCode(err, "UnsupportedOperation"):
		return topologyVerdict{skip: skipRegion, note: "DescribeInstanceTopology is not available in this region; not asking again for 24h"}
	case isCode(err, "UnauthorizedOperation"):
		return topologyVerdict{skip: skipRegion, warning: true,
			note: "not authorized to call ec2:DescribeInstanceTopology (add it to ccm's IAM policy for the network-node-layer labels); Nodes go on without them, not asking again for 24h"}
	case err != nil && required:
		return topologyVerdict{fail: true, warning: true, note: "DescribeInstanceTopology failed for a type that should have a topology; the Node's initialisation is retried"}
	case err != nil:
		return topologyVerdict{warning: true, note: "DescribeInstanceTopology failed; the Node goes on without the network-node-layer labels"}
	case !listed && required:
		return topologyVerdict{skip: skipInstance, warning: true, note: "EC2 lists no topology for this instance although its type should have one; not asking again for 24h"}
	case !listed:
		return topologyVerdict{skip: skipType, note: "EC2 has no topology for this instance type; not asking again for 24h"}
	}
	return topologyVerdict{layers: nodes}
}

// layerLabels are the network-node-layer-N labels of nodes, N from 1.
func layerLabels(nodes []string) map[string]string {
	out := make(map[string]string, len(nodes))
	for i, n := range nodes {
		out[labelNetworkNodePrefix+strconv.Itoa(i+1)] = n
	}
	return out
}

// mayAsk is false when the answer for id is known to be empty: no instance type (nothing to
// go by, as upstream), or the region, the instance or its type remembered as without topology.
func (t *nodeTopology) mayAsk(id, itype string) bool {
	if itype == "" {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, k := range []string{"region/" + t.region, "instance/" + id, "type/" + itype} {
		if until, ok := t.skip[k]; ok && now.Before(until) {
			return false
		}
	}
	return true
}

// remember marks key as without topology for topologySkipTTL, dropping expired marks so the
// map stays bounded by what was asked for within a day.
func (t *nodeTopology) remember(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for k, until := range t.skip {
		if !now.Before(until) {
			delete(t.skip, k)
		}
	}
	t.skip[key] = now.Add(topologySkipTTL)
}

// zoneID is the ID of zone, from the cached list of the region's zones. Concurrent misses
// wait for one read (zoneRead), which lists every zone of the region.
func (t *nodeTopology) zoneID(ctx context.Context, zone string) (string, error) {
	if id, ok := t.cachedZone(zone); ok {
		return id, nil
	}
	t.zoneRead.Lock()
	defer t.zoneRead.Unlock()
	if id, ok := t.cachedZone(zone); ok { // read by the caller this one waited for
		return id, nil
	}
	resp, err := t.api.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return "", fmt.Errorf("aws: DescribeAvailabilityZones: %w", publicError(err))
	}
	t.mu.Lock()
	for _, z := range resp.AvailabilityZones {
		if name, id := aws.ToString(z.ZoneName), aws.ToString(z.ZoneId); name != "" && id != "" {
			t.zones[name] = id
		}
	}
	t.mu.Unlock()
	if id, ok := t.cachedZone(zone); ok {
		return id, nil
	}
	return "", fmt.Errorf("aws: zone %s is not among the zones DescribeAvailabilityZones lists in %s; no %s label", zone, t.region, labelZoneID)
}

func (t *nodeTopology) cachedZone(zone string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.zones[zone]
	return id, ok
}

// fetchTopology reads the topology of ids, 100 IDs per call, following NextToken (the API
// pages InstanceIds answers at 20 and refuses MaxResults with them). A listed instance gets
// a non-nil slice, even without network nodes.
func (t *nodeTopology) fetchTopology(ctx context.Context, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	for start := 0; start < len(ids); start += maxTopologyIDs {
		in := &ec2.DescribeInstanceTopologyInput{InstanceIds: ids[start:min(start+maxTopologyIDs, len(ids))]}
		for {
			resp, err := t.api.DescribeInstanceTopology(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, it := range resp.Instances {
				out[aws.ToString(it.InstanceId)] = append([]string{}, it.NetworkNodes...)
			}
			if aws.ToString(resp.NextToken) == "" {
				break
			}
			in.NextToken = resp.NextToken
		}
	}
	return out, nil
}
