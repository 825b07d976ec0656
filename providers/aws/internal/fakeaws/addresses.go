package fakeaws

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Address is an Elastic IP of the fake: its allocation, public address and what it is
// associated with ("" when free; an NLB's ARN once an NLB is made with it).
type Address struct {
	AllocationID, PublicIP, Association string
}

// AddAddress allocates an Elastic IP with tags, as an operator (or another cluster) would,
// and returns its allocation ID.
func (s *Server) AddAddress(tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addresses == nil {
		s.addresses = map[string]*Address{}
	}
	id := s.newID("eipalloc")
	s.addresses[id] = &Address{AllocationID: id, PublicIP: fmt.Sprintf("198.18.%d.%d", len(s.addresses)/250, len(s.addresses)%250+1)}
	s.tags[id] = copyTags(tags)
	return id
}

// AssociateAddress associates an Elastic IP with something (an instance, an ENI), as another
// tool would.
func (s *Server) AssociateAddress(id, with string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.addresses[id]; a != nil {
		a.Association = with
	}
}

// AddressOf returns an Elastic IP as the fake holds it.
func (s *Server) AddressOf(id string) (Address, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.addresses[id]
	if !ok {
		return Address{}, false
	}
	return *a, true
}

// describeAddresses answers by allocation IDs (every one must exist, as EC2 answers
// InvalidAllocationID.NotFound) and the tag filters.
func (s *Server) describeAddresses(f form) (string, *apiError) {
	ids := f.list("AllocationId")
	filters := f.filters()
	if bad := unknownFilter(filters, "allocation-id"); bad != "" {
		return "", invalid("The filter '%s' is invalid", bad)
	}
	for _, id := range ids {
		if _, ok := s.addresses[id]; !ok {
			return "", notFound("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist", id)
		}
	}
	var found []*Address
	for id, a := range s.addresses {
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		if match(filters, func(name string) []string {
			if v, isTag := tagAttr(s.tags[id], name); isTag {
				return v
			}
			return map[string][]string{"allocation-id": {id}}[name]
		}) {
			found = append(found, a)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].AllocationID < found[j].AllocationID })
	var x w
	x.open("addressesSet")
	for _, a := range found {
		x.open("item")
		x.leaf("allocationId", a.AllocationID)
		x.leaf("publicIp", a.PublicIP)
		x.leaf("domain", "vpc")
		if a.Association != "" {
			x.leaf("associationId", "eipassoc-"+strings.TrimPrefix(a.AllocationID, "eipalloc-"))
			x.leaf("networkInterfaceId", "eni-of-"+lastPart(a.Association))
		}
		writeTags(&x, s.tags[a.AllocationID])
		x.close("item")
	}
	x.close("addressesSet")
	return x.b.String(), nil
}

func lastPart(s string) string { return s[strings.LastIndex(s, "/")+1:] }

// associateNLBAddresses associates the Elastic IPs an NLB is made with: one in use, or one
// that does not exist, is refused as ELB refuses it.
func (s *Server) associateNLBAddresses(arn string, addresses map[string]string) *apiError {
	for _, id := range addresses {
		if !strings.HasPrefix(id, "eipalloc-") {
			continue
		}
		a, ok := s.addresses[id]
		switch {
		case !ok:
			return &apiError{Status: 400, Code: "AllocationIdNotFound", Message: "Elastic IP allocation " + id + " not found"}
		case a.Association != "":
			return &apiError{Status: 400, Code: "InvalidConfigurationRequest", Message: "Elastic IP " + id + " is already associated"}
		}
	}
	for _, id := range addresses {
		if a := s.addresses[id]; a != nil {
			a.Association = arn
		}
	}
	return nil
}

// releaseNLBAddresses frees the Elastic IPs of a deleted NLB.
func (s *Server) releaseNLBAddresses(arn string) {
	for _, a := range s.addresses {
		if a.Association == arn {
			a.Association = ""
		}
	}
}
