package fakeaws

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Zones and instance topology: DescribeAvailabilityZones and DescribeInstanceTopology, the
// reads behind the topology.k8s.aws/* Node labels.
//
// A region's zones are those its subnets and instances are in. Zone IDs are derived from the
// zone name, but not the way a client could guess: us-east-1a is use1-az4, b az5, c az6, d az1
// (AWS maps names to IDs per account). Local Zones (us-west-2-lax-1a -> usw2-lax1-az1) and
// Wavelength Zones (us-east-1-wl1-bos-wlz-1 -> use1-wl1-bos-wlz1) have IDs of their own shape.
//
// Instance topology follows the EC2 User Guide's prerequisites: only the listed instance
// types in the listed regions have one (3 network node layers; p6-b200 and p6-b300 4); an
// instance of another type is left out of the answer, one that is not running is listed
// without network nodes, and a region without the API answers UnsupportedOperation.

// topologyRegions are the regions where DescribeInstanceTopology is available.
var topologyRegions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1",
	"ap-southeast-3", "ap-east-1", "ap-south-2", "ap-southeast-4", "ap-south-1", "ap-northeast-3",
	"ap-northeast-2", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "ca-central-1",
	"eu-central-1", "eu-west-1", "eu-west-2", "eu-west-3", "eu-south-2", "eu-north-1", "eu-central-2",
	"il-central-1", "me-south-1", "me-central-1", "sa-east-1", "us-gov-west-1",
}

// topologyLayers is the number of network node layers by instance family; a family not listed
// has no instance topology.
var topologyLayers = map[string]int{
	"g6e": 3, "g7e": 3,
	"hpc6a": 3, "hpc6id": 3, "hpc7g": 3, "hpc7a": 3, "hpc8a": 3,
	"p3dn": 3, "p4d": 3, "p4de": 3, "p5": 3, "p5e": 3, "p5en": 3, "p6e-gb200": 3,
	"trn1": 3, "trn1n": 3, "trn2": 3, "trn2u": 3,
	"p6-b200": 4, "p6-b300": 4,
}

// maxTopologyIDs is how many InstanceId values one DescribeInstanceTopology may carry.
const maxTopologyIDs = 100

// ZoneID is the fake's zone ID of a zone name (see the package comment on zones).
func ZoneID(zone string) string {
	region := zoneRegion(zone, "")
	rest := strings.TrimPrefix(strings.TrimPrefix(zone, region), "-")
	short := regionCode(region)
	switch {
	case rest == "":
		return ""
	case len(rest) == 1: // an Availability Zone: one letter
		return fmt.Sprintf("%s-az%d", short, (int(rest[0]-'a')+3)%6+1)
	case strings.Contains(rest, "-wlz-"): // wl1-bos-wlz-1
		return short + "-" + strings.Replace(rest, "-wlz-", "-wlz", 1)
	default: // lax-1a
		group, letter := rest[:len(rest)-1], rest[len(rest)-1]
		return fmt.Sprintf("%s-%s-az%d", short, strings.ReplaceAll(group, "-", ""), int(letter-'a')+1)
	}
}

// zoneType is EC2's ZoneType of a zone name.
func zoneType(zone string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(zone, zoneRegion(zone, "")), "-")
	switch {
	case len(rest) == 1:
		return "availability-zone"
	case strings.Contains(rest, "-wlz-"):
		return "wavelength-zone"
	}
	return "local-zone"
}

// regionCode shortens a region as zone IDs do: us-east-1 -> use1, us-gov-west-1 -> usgw1.
func regionCode(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 2 {
		return region
	}
	code := parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		code += p[:1]
	}
	return code + parts[len(parts)-1]
}

// NetworkNodes is the instance topology the fake answers for an instance, top layer first;
// ok is false when DescribeInstanceTopology leaves the instance out (a type without topology,
// a terminated or unknown instance). Nodes are shared as in a data centre: the top layer by
// zone, the second by pairs of instances, the third (and fourth) per instance.
func (s *Server) NetworkNodes(id string) (nodes []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, found := s.instances[id]
	if !found {
		return nil, false
	}
	return networkNodes(in)
}

func networkNodes(in *Instance) ([]string, bool) {
	layers := topologyLayers[instanceFamily(in.Type)]
	if layers == 0 || in.State == "terminated" || in.State == "shutting-down" {
		return nil, false
	}
	if in.State != "running" {
		return nil, true
	}
	node := func(seed string) string {
		sum := sha256.Sum256([]byte(seed))
		return fmt.Sprintf("nn-%x", sum[:9])
	}
	out := []string{node("spine/" + in.Zone), node("block/" + in.Zone + "/" + in.ID[:len(in.ID)-1])}
	for l := 3; l <= layers; l++ {
		out = append(out, node(strconv.Itoa(l)+"/"+in.ID))
	}
	return out, true
}

// instanceFamily is the part of an instance type before the dot (p6-b200.48xlarge -> p6-b200).
func instanceFamily(t string) string {
	f, _, _ := strings.Cut(t, ".")
	return f
}

// topologyOps serves the two calls; ok is false for other actions.
func (s *Server) topologyOps(action string, f form) (string, *apiError, bool) {
	switch action {
	case "DescribeAvailabilityZones":
		out, err := s.describeZones(f)
		return out, err, true
	case "DescribeInstanceTopology":
		out, err := s.describeTopology(f)
		return out, err, true
	}
	return "", nil, false
}

// regionZones is every zone of the request's region: those of its subnets and instances.
func (s *Server) regionZones() []string {
	set := map[string]bool{}
	if s.homeRegion() {
		for _, sn := range s.subnets {
			set[sn.Zone] = true
		}
	}
	for _, in := range s.instances {
		if in.Zone != "" && s.inRegion(in) {
			set[in.Zone] = true
		}
	}
	out := make([]string, 0, len(set))
	for z := range set {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}

func (s *Server) describeZones(f form) (string, *apiError) {
	filters := f.filters()
	if bad := unknownFilter(filters, "zone-name", "zone-id", "zone-type", "region-name", "state", "opt-in-status", "group-name"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	zones := s.regionZones()
	names, ids := f.list("ZoneName"), f.list("ZoneId")
	for _, n := range names {
		if !slices.Contains(zones, n) {
			return "", invalid("The zone '%s' does not exist.", n)
		}
	}
	var x w
	x.open("availabilityZoneInfo")
	for _, z := range zones {
		id, region := ZoneID(z), zoneRegion(z, s.region)
		if (len(names) > 0 || len(ids) > 0) && !slices.Contains(names, z) && !slices.Contains(ids, id) {
			continue
		}
		group := region
		if t := zoneType(z); t != "availability-zone" {
			group = strings.TrimRight(z, "abcdefghijklmnopqrstuvwxyz")
		}
		optIn := "opt-in-not-required"
		if zoneType(z) != "availability-zone" {
			optIn = "opted-in"
		}
		ok := match(filters, func(name string) []string {
			return map[string][]string{"zone-name": {z}, "zone-id": {id}, "zone-type": {zoneType(z)},
				"region-name": {region}, "state": {"available"}, "opt-in-status": {optIn}, "group-name": {group}}[name]
		})
		if !ok {
			continue
		}
		x.open("item")
		x.leaf("zoneName", z)
		x.leaf("zoneId", id)
		x.leaf("zoneType", zoneType(z))
		x.leaf("zoneState", "available")
		x.leaf("regionName", region)
		x.leaf("optInStatus", optIn)
		x.leaf("groupName", group)
		x.leaf("networkBorderGroup", group)
		x.open("messageSet")
		x.close("messageSet")
		x.close("item")
	}
	x.close("availabilityZoneInfo")
	return x.b.String(), nil
}

func (s *Server) describeTopology(f form) (string, *apiError) {
	if !slices.Contains(topologyRegions, s.reqRegion) {
		return "", &apiError{Status: 400, Code: "UnsupportedOperation", Message: "The functionality you requested is not available in this region."}
	}
	ids, groups := f.list("InstanceId"), f.list("GroupName")
	if len(ids) > maxTopologyIDs || len(groups) > maxTopologyIDs {
		return "", invalid("You can specify up to %d instance IDs or placement group names.", maxTopologyIDs)
	}
	size := 20 // the API's default page
	if v := f.get("MaxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return "", invalid("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 1 and 100.", v)
		}
		if len(ids) > 0 {
			return "", &apiError{Status: 400, Code: "InvalidParameterCombination", Message: "The parameter instancesSet cannot be used with the parameter maxResults"}
		}
		size = n
	}
	filters := f.filters()
	if bad := unknownFilter(filters, "availability-zone", "instance-type", "zone-id"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, "i-") {
			return "", notFound("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
	}
	now := time.Now()
	var found []*Instance
	for _, in := range s.instances {
		if now.Before(in.visibleAt) || !s.inRegion(in) || (len(ids) > 0 && !slices.Contains(ids, in.ID)) || len(groups) > 0 {
			continue // the fake's instances are in no placement group
		}
		if _, ok := networkNodes(in); !ok {
			continue
		}
		if !matchTopology(filters, in) {
			continue
		}
		found = append(found, in)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	if s.pageLimit > 0 && size > s.pageLimit {
		size = s.pageLimit
	}
	start := 0
	if tok := f.get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "DescribeInstanceTopology."))
		if !strings.HasPrefix(tok, "DescribeInstanceTopology.") || err != nil || n < 0 || n > len(found) {
			return "", &apiError{Status: 400, Code: "InvalidPaginationToken", Message: "Invalid pagination token: " + tok}
		}
		start = n
	}
	page, next := found[start:], ""
	if len(page) > size {
		page, next = page[:size], "DescribeInstanceTopology."+strconv.Itoa(start+size)
	}
	var x w
	x.open("instanceSet")
	for _, in := range page {
		nodes, _ := networkNodes(in)
		x.open("item")
		x.leaf("instanceId", in.ID)
		x.leaf("instanceType", in.Type)
		x.open("networkNodeSet")
		for _, n := range nodes {
			x.leaf("item", n)
		}
		x.close("networkNodeSet")
		x.leaf("availabilityZone", in.Zone)
		x.leaf("zoneId", ZoneID(in.Zone))
		x.close("item")
	}
	x.close("instanceSet")
	writeNextToken(&x, next)
	return x.b.String(), nil
}

// matchTopology applies DescribeInstanceTopology's filters; instance-type takes * and ?
// wildcards (? matching zero or one character, as EC2 documents).
func matchTopology(filters map[string][]string, in *Instance) bool {
	for name, want := range filters {
		var ok bool
		for _, v := range want {
			switch name {
			case "availability-zone":
				ok = ok || v == in.Zone
			case "zone-id":
				ok = ok || v == ZoneID(in.Zone)
			case "instance-type":
				ok = ok || wildcard(v, in.Type)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// wildcard matches EC2's filter wildcards: * any run, ? zero or one character.
func wildcard(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".?")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(s)
}
